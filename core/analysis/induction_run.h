#pragma once
// The `induction` analysis run (DESIGN 5.2): classic induction scores and the dual route in one
// AnalysisOutput.
//   grids   induction.prev_token, induction.prefix_matching      (inductionScores, repeated random tokens)
//           dual_route.token_copying, dual_route.concept_copying (causal, dual_route.h)
//           dual_route.next_token_matching, dual_route.last_token_matching (value-weighted attention)
//   curves  dual_route.ablation.<task>  (mean ablation of the top-k heads per ordering; ablation_curves.h)
//   tables  induction.ablation          (top-k prefix-matching heads vs k random heads outside the top 2k,
//                                        zero-ablated; induction accuracy)
//           dual_route.concept_patching (toy world only)
//   summary copy_accuracy, induction_acc, top heads of every grid, Jaccard@4 / @8 and Spearman ρ of token vs
//           concept copying, notes (what was skipped and why).
// On the toy model (vocabulary = the default toy world) every part runs on the world's tokens and tasks.
// On other models: random-token parts always; concept parts (concept copying, last-token matching, the
// copy_words orderings) only with a word list; the toy list tasks and concept patching are skipped.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/head_toolkit.h"  // isToyVocabulary, inductionTokenRange
#include "analysis/registry.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct InductionRunOptions {
  int n = 16;  // prompt pairs per dual-route score (and sequences of the induction scores)
  uint64_t seed = 1;
  int top_k = 4;        // head sets of the induction ablation table and concept patching
  int n_eval = 64;      // prompts per ablation task (accuracy resolution 1/n_eval)
  int span = 20;        // induction scores: random tokens per copy
  int filler_len = 30;  // dual route: tokens before the separator
  int entity_min = 2, entity_max = 5;
  int r1_len = 10;
  int shots = 4;  // antonym and concept-patching function prompts
  // Separator between the halves: "default" = "→" on the toy model and none elsewhere; "" = none; else a
  // toy token string or (other models) a text that encodes to one token.
  std::string sep = "default";
  std::string words_file;  // other models: real words for the concept parts
  std::vector<int> ks = {0, 1, 2, 4, 8, 16, 32};
  // "scores": the classic grids and the induction ablation table; "dual_route": also the copying and
  // matching grids; "all": also the mean-ablation curves and (toy world) concept patching.
  std::string stages = "all";
};
const OptionTable<InductionRunOptions>& inductionOptionTable();
MethodInfo inductionMethod();  // the registry record

// Runs everything; run id and model name from ctx, method "induction". `tok` may be null for models
// without a tokenizer (then no words file and no separator text can be used).
AnalysisOutput runInduction(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx = {});

}  // namespace hs
