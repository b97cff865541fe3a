#pragma once
// Prompts of different lengths run in left-padded batches, so every prompt's last token sits at position
// −1 of its row (an intervention with positions {−1} acts on N in every row; the forward counts position
// ids over real tokens, so padding is invisible). The one batch loop every analysis uses: capture at the
// last position, and the one answer scorer behind every accuracy (ICL accuracy, next-token accuracy, the
// toy model's teacher-forced multi-token answers).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/prompt.h"

namespace hs {

using TokenSeqs = std::vector<std::vector<int64_t>>;

// Left-padded tensors of rows [begin, end) of `seqs`.
struct PaddedBatch {
  at::Tensor tokens;          // [batch, pos] int64
  at::Tensor attention_mask;  // [batch, pos] int64, 1 = real token
  std::vector<int> pad;       // [batch] left padding of each row
};
PaddedBatch padLeft(const TokenSeqs& seqs, size_t begin, size_t end, int64_t pad_id = 0);
PaddedBatch padPrompts(const std::vector<Prompt>& prompts, size_t begin, size_t end, int pad_id = 0);
TokenSeqs tokenSeqs(const std::vector<Prompt>& prompts);  // each prompt's ids as int64

struct BatchRun {
  int batch = 16;  // rows per forward
  std::set<Site> capture;
  std::vector<Intervention> interventions;  // applied to every row (their `rows` must be empty)
  bool last_logits_only = true;
  int64_t pad_id = 0;
  const char* what = "forward";  // names the loop in errors and progress
};
// One forward per batch under NoGrad; onBatch(begin, end, padded, result). Cancellation is checked and
// progress reported between batches; a prompt longer than the context is refused naming its length.
void forEachBatch(const Transformer& model, const TokenSeqs& seqs, const BatchRun& run,
                  const std::function<void(size_t, size_t, const PaddedBatch&, const RunResult&)>& onBatch,
                  const AnalysisContext& ctx = {});

// Per layer, the captured `site(l)` at the last position of every prompt: [n_prompts, layers, ...] float32
// on the CPU (e.g. attnZ → [n, layers, heads, d_head], residPost → [n, layers, d_model]).
at::Tensor captureAtLast(const Transformer& model, const TokenSeqs& seqs, Site (*site)(int),
                         const std::vector<Intervention>& interventions = {}, const AnalysisContext& ctx = {},
                         int batch = 16);

// What the model answers. `answers[i]` are the answer tokens of prompt i; the prompt is teacher-forced
// with answers[i][:-1] appended, so one forward scores every answer token (a one-token answer is plain
// next-token prediction at N).
struct AnswerScore {
  bool correct = false;       // argmax equals the answer at every answer position
  int first_pred = -1;        // argmax at N (the first answer position)
  double first_logprob = 0;   // log p(answers[i][0]) at N
  int first_rank = 0;         // entries of the vocabulary with a larger logit than answers[i][0] at N
  bool in_label_set = false;  // first_pred is one of `label_sets[i]` (or of the shared label set)
};
struct AnswerScoring {
  int batch = 16;
  std::vector<Intervention> interventions;   // positions count in the teacher-forced sequence
  std::vector<int> label_set;                // shared label set for in_label_set (classification)
  std::vector<std::vector<int>> label_sets;  // per-prompt label sets (toy episodes); overrides label_set
  int64_t pad_id = 0;
};
std::vector<AnswerScore> scoreAnswers(const Transformer& model, const TokenSeqs& prompts,
                                      const std::vector<std::vector<int64_t>>& answers,
                                      const AnswerScoring& opt = {}, const AnalysisContext& ctx = {});

}  // namespace hs
