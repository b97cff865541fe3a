#pragma once
// Evaluation of an ICL prompt set under interventions: accuracy of the first answer token and the
// TR ratio (share of argmax predictions, over the whole vocabulary, that fall in the label set).
// Prompts are left-padded into batches so that every prompt's N is the last position (-1); an
// intervention with positions {-1} therefore acts on N in every row (prompt_batches.h).
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/toolkit/prompt_batches.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/prompt.h"

namespace hs {

struct IclEvalOptions {
  int batch = 16;  // prompts per forward
  // Applied to every row of every batch (their `rows` must be empty). Site/heads/positions as usual.
  std::vector<Intervention> interventions;
  // Classification label set (token ids) for the TR ratio; empty = TR ratio not computed (NaN).
  std::vector<int> label_tokens;
  // One label set per prompt (e.g. the answers an open-ended prompt's demonstrations show); overrides
  // label_tokens when given.
  std::vector<std::vector<int>> label_sets;
};

struct IclEval {
  int n = 0;
  double accuracy = 0;                 // argmax == answer_token
  double tr_ratio = 0;                 // argmax ∈ the label set (NaN without one)
  double mean_answer_prob = 0;         // softmax(logits)[answer_token], averaged
  std::vector<int> predictions;        // [n] argmax token at N
  std::vector<double> answer_logprob;  // [n] log p(answer_token)
};

// Every prompt's probability of its answer token, exp(answer_logprob): [n]. mean_answer_prob is their mean;
// a bootstrap over them is its interval.
std::vector<double> answerProbabilities(const IclEval& e);

// One forward per batch under NoGrad; cancellation checked between batches (scoreAnswers).
IclEval evaluateIcl(const Transformer& model, const std::vector<Prompt>& prompts,
                    const IclEvalOptions& opt = {}, const AnalysisContext& ctx = {});

}  // namespace hs
