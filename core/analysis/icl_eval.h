#pragma once
// Evaluation of an ICL prompt set under interventions: accuracy of the first answer token and the
// TR ratio (share of argmax predictions, over the whole vocabulary, that fall in the label set).
// Prompts are left-padded into batches so that every prompt's N is the last position (-1); an
// intervention with positions {-1} therefore acts on N in every row.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "analysis/analysis_context.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/prompt.h"

namespace hs {

struct IclEvalOptions {
  int batch = 16;  // prompts per forward
  // Applied to every row of every batch (their `rows` must be empty). Site/heads/positions as usual.
  std::vector<Intervention> interventions;
  // Classification label set (token ids) for the TR ratio; empty = TR ratio not computed (NaN).
  std::vector<int> label_tokens;
  int pad_id = 0;
};

struct IclEval {
  int n = 0;
  double accuracy = 0;                 // argmax == answer_token
  double tr_ratio = 0;                 // argmax ∈ label_tokens (NaN without a label set)
  double mean_answer_prob = 0;         // softmax(logits)[answer_token], averaged
  std::vector<int> predictions;        // [n] argmax token at N
  std::vector<double> answer_logprob;  // [n] log p(answer_token)
};

// One forward per batch under at::NoGradGuard; cancellation checked between batches.
IclEval evaluateIcl(const Transformer& model, const std::vector<Prompt>& prompts,
                    const IclEvalOptions& opt = {}, const AnalysisContext& ctx = {});

// Left-padded tensors of a batch of prompts: tokens [batch, pos] int64 and attention mask [batch, pos].
struct PaddedBatch {
  at::Tensor tokens;          // [batch, pos] int64
  at::Tensor attention_mask;  // [batch, pos] int64, 1 = real token
  std::vector<int> pad;       // [batch] left padding of each row
};
PaddedBatch padPrompts(const std::vector<Prompt>& prompts, size_t begin, size_t end, int pad_id);

// Per-head writes into the residual stream at the last position: a[l, k] = W_O[:, k·dh:(k+1)·dh] z[l, k, N]
// for every prompt: [n_prompts, layers, heads, d_model] float32 (one forward per batch, capturing hook_z).
// Optional interventions apply during those forwards.
at::Tensor headOutputsAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id = 0,
                             const std::vector<Intervention>& interventions = {},
                             const AnalysisContext& ctx = {});
// hook_z at the last position: [n_prompts, layers, heads, d_head] float32.
at::Tensor headZAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id = 0,
                       const std::vector<Intervention>& interventions = {}, const AnalysisContext& ctx = {});
// Last-position residual stream after each layer (hook_resid_post): [n_prompts, layers, d_model].
at::Tensor residualsAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id = 0,
                           const std::vector<Intervention>& interventions = {},
                           const AnalysisContext& ctx = {});
// W_O slice of one head: [d_model, d_head] (GPT-2's combined projection included).
at::Tensor headOutputWeight(const Transformer& model, int layer, int head);

// Interventions that ablate `heads` (hook_z at every position): Zero, or Mean with `mean_z`
// [layers, heads, d_head] (e.g. meanHeadOutputs of clean prompts).
std::vector<Intervention> headAblation(const std::vector<HeadRef>& heads, bool mean = false,
                                       const at::Tensor& mean_z = {});

}  // namespace hs
