#pragma once
// Attention-pattern head scores on repeated random tokens (docs/methods.md, "Induction and the dual route":
// classic induction score): sequences [bos] r r with r = `span` random token ids; for every position i of the
// second copy,
//  - previous-token score: attention from i to i−1, averaged over all positions after the first;
//  - induction (prefix-matching) score: attention from i to the token after the earlier occurrence of
//    token i, i.e. key i − span + 1, averaged over the second copy.
#include <cstdint>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

struct InductionScoreOptions {
  int span = 20;         // random tokens per copy
  int n_sequences = 16;  // independent sequences
  int chunk = 16;        // sequences per forward (memory and cancellation granularity; not the result)
  uint64_t seed = 1;
  int64_t bos = -1;        // prepended when >= 0
  int64_t token_low = -1;  // random tokens drawn from [token_low, token_high); defaults: [vocab/8, vocab)
  int64_t token_high = -1;
};

struct InductionScores {
  HeadGrid previous_token;   // id "induction.prev_token"
  HeadGrid induction;        // id "induction.prefix_matching"
  double copy_accuracy = 0;  // share of second-copy positions (after its first token) predicted exactly
  std::vector<std::vector<int64_t>> sequences;  // [n_sequences][pos] the exact token ids scored
};

InductionScores inductionScores(const Transformer& model, const InductionScoreOptions& opts,
                                const AnalysisContext& ctx = {});

}  // namespace hs
