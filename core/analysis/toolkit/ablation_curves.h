#pragma once
// Head ablations of the dual-route view (docs/methods.md, "Induction and the dual route"):
//  - mean-ablation curves: the top-k heads of an ordering (token copying, concept copying, prefix matching,
//    a published or imported ordering, random live heads) mean-ablated at every position of list tasks;
//    top-1/5/10 accuracy and the answer's probability vs k per ordering (official
//    scripts/vocablist_ablation.py);
//  - the induction ablation table: induction accuracy with the top prefix-matching heads zero-ablated vs
//    as many random heads from outside the top 2k;
//  - cross-language concept patching on the toy world (official scripts/language_patching.py).
// The mean a mean-ablated head takes is given (head_toolkit.h resolveMeanZ: by default its hook_z averaged
// over every position of a neutral corpus, the official pile-10k mean's counterpart), never the task's own
// prompts unless asked.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/methods/dual_route.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/next_token_task.h"
#include "tasks/toy/world.h"

namespace hs {

// Prompts whose next token is scored: accuracy = argmax at the last position == answer.
// Next-token accuracy of a task under interventions (their `rows` must be empty; positions apply to the
// left-padded batch, empty = every position): scoreAnswers (prompt_batches.h) with one-token answers.
double nextTokenAccuracy(const Transformer& model, const NextTokenTask& task,
                         const std::vector<Intervention>& interventions = {}, int batch = 32,
                         const AnalysisContext& ctx = {});

struct AblationCurveOptions {
  // Capped at L·H (duplicates after capping dropped): the official TOPKS of vocablist_ablation.py.
  std::vector<int> ks = {0, 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 128, 256, 512, 1024};
  int batch = 32;
  at::Tensor mean_z;        // [layers, heads, d_head]: what a mean-ablated head's z becomes (required)
  std::string mean_source;  // its description for provenance (describeMeanSource)
  uint64_t seed = 1;        // the bootstrap of the answer probability's intervals
};
// One ordering of an ablation curve: a ranking (one draw), or the draws of the random control, whose mean
// is the series.
struct HeadOrdering {
  std::string id;
  std::vector<std::vector<HeadRef>> draws;  // [1] a ranking; [d] random orders (each as long as a ranking)
  std::string source;                       // where it came from, for provenance ("computed", a file)
};
// The curves of one task, as the official script measures them (x = k, one series per ordering, the
// ordering's first k heads' z replaced by o.mean_z at every position), each with 95 % intervals per point:
//   "dual_route.ablation.<task.id>"        top-1 next-token accuracy (argmax == answer; Wilson),
//   "dual_route.ablation_top5.<task.id>"   the answer among the 5 largest logits (Wilson),
//   "dual_route.ablation_top10.<task.id>"  among the 10 largest (Wilson),
//   "dual_route.ablation_prob.<task.id>"   the answer's probability (seeded bootstrap over the prompts).
// A series of several draws is their mean and its interval the t interval of the mean over the draws.
// Every draw of an ordering must list at least max(k) heads.
std::vector<Curve> ablationCurves(const Transformer& model, const NextTokenTask& task,
                                  const std::vector<HeadOrdering>& orderings, const AblationCurveOptions& o,
                                  const AnalysisContext& ctx = {});

// Table "induction.ablation": columns condition, heads, induction_acc, delta_points, acc_lo, acc_hi, draws,
// acc_sd; rows "baseline", "top<k>_prefix_matching" (the k best heads of `prefixMatching` zero-ablated;
// Wilson interval), "random<k>_outside_top<2k>" (k random live heads, none among the top 2k, zero-ablated,
// `draws` seeded draws: their mean, sd and the t interval of the mean; heads: the draws separated by " | ").
Table inductionAblationTable(const Transformer& model, const NextTokenTask& induction,
                             const HeadGrid& prefixMatching, int k, uint64_t seed, int draws = 5,
                             const AnalysisContext& ctx = {});

// Cross-language concept patching on the toy world, at every generation step of the answer word, as the
// official language_patching.py does it (subbed_generation under model.all()).
// Pair i: a destination prompt translating B → A (functionPrompt "translate_b_a", query concept c_d) and a
// source prompt translating A → B (functionPrompt "translate_a_b", query concept c_s ≠ c_d, the first tokens
// of the A words of c_s and c_d differ). The chosen heads' hook_z at the source's last token (−1, the "→"
// after the query word) is written at −1 of every forward while the destination's answer is generated
// greedily through the KV cache (as many tokens as the longer A word): at the destination's own "→" in the
// prefill, then at each generated token (generateWithInterventions). Outcome:
// "meaning_moved" = word_A(c_s) generated (the patched concept, in the destination's output language),
// "kept" = word_A(c_d), "language_moved" = the first generated token is a language-B token (the source's
// output language), else "other". Table "dual_route.concept_patching": one row per head set — no patch,
// the top-k concept-copying heads, the top-k token-copying heads, k random live heads (`draws` seeded sets,
// their outcomes pooled: n · draws trials) — with the share of each outcome and its Wilson interval
// ("<outcome>_lo", "<outcome>_hi").
// `prompts`, when given, receives each pair's source ("concept_patching.source", query at −1) and destination
// ("concept_patching.destination", answer = the kept A word) prompts.
Table conceptPatchingTable(const Transformer& model, const toy::ToyWorld& w, const HeadGrid& conceptCopying,
                           const HeadGrid& tokenCopying, int k, int n, uint64_t seed, int shots = 4,
                           const AnalysisContext& ctx = {}, std::vector<PromptRecord>* prompts = nullptr,
                           int draws = 5);

}  // namespace hs
