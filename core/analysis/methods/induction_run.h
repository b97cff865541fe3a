#pragma once
// Induction heads and the dual route (docs/methods.md, "Induction and the dual route") as four records, each
// one analysis of its own sharing the prompts and stages of induction_parts.h:
//   induction         grids induction.prev_token, induction.prefix_matching (inductionScores, repeated random
//                     tokens); table induction.ablation (the top-k prefix-matching heads vs k random heads
//                     outside the top 2k, zero-ablated; induction accuracy on the copy_random task).
//                     Prompts: induction (the scored sequences), ablation.copy_random.
//   dual-route        grids dual_route.token_copying, dual_route.concept_copying (causal, dual_route.h),
//                     dual_route.next_token_matching, dual_route.last_token_matching (value-weighted
//                     attention). Prompts: token_copying.clean / .corrupt (query −2, answer e0),
//                     concept_copying.clean / .corrupt (query −1, answer e1), next_token_matching /
//                     last_token_matching (query −1, answer = the entity e, which starts at its first
//                     occurrence after <bos>).
//   list-tasks        curves dual_route.ablation.<task>: mean ablation of the top-k heads of each ordering
//                     (token copying, concept copying, prefix matching, random; ablation_curves.h) on the
//                     list tasks. The orderings' grids are computed as `induction` and `dual-route` compute
//                     them, or read from earlier runs (grids_from), or given (orderings). Prompts:
//                     ablation.<task>, and those of every grid it computed; tensor mean_z (the mean the
//                     heads are ablated with, [layers, heads, d_head]).
//   concept-patching  table dual_route.concept_patching (toy world only): the top-k concept-copying heads vs
//                     the top-k token-copying heads (computed, or read from grids_from). Prompts:
//                     concept_patching.source / .destination, and those of the copying grids it computed.
// Each summary: its setup (toy_model, vocab, n, ...), the top heads of its grids or orderings and notes (what
// was skipped and why); induction adds copy_accuracy and the induction accuracies, dual-route Jaccard@4 / @8
// and Spearman ρ of token vs concept copying, list-tasks each task's unablated accuracy and the mean source.
// Defaults follow the official code on real models (newline separator, 1024 copying pairs, 2048 attention
// prompts, fillers from corpus text: the shipped WikiText-2 excerpt) and stay small on the toy model, whose
// world has no running text (the arrow separator, 16 pairs, random-syllable fillers).
// On the toy model every record runs on the world's tokens and tasks. On other models: the random-token parts
// always; the concept parts with the corpus's multi-token words or a word list; the list tasks of the
// dual-route study (list_tasks.h) with their data folder; concept patching only on the toy model.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"  // inductionTokenRange, MeanSource
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// The options of the four records; each record's table lists the fields it reads (the others keep their
// defaults and are ignored).
struct InductionRunOptions {
  // Prompt pairs per copying score, sequences of the induction scores, concept-patching pairs; 0 = the
  // model's default: the official 1024 on real models, 16 on the toy model.
  int n = 0;
  int n_matching =
      0;  // prompts per attention score; 0 = the official 2048 on real models, n on the toy model
  uint64_t seed = 1;
  int top_k = 4;  // head sets of the induction ablation table and concept patching; top heads listed
  // Prompts per ablation task; 0 = the model's default: the official --max_n 1024 on real models (fewer
  // where a list has fewer usable pairs), 64 on the toy model (a CI-sized run).
  int n_eval = 0;
  int span = 20;        // induction scores: random tokens per copy
  int filler_len = 30;  // dual route: tokens before the separator (the official sequence_len)
  int entity_min = 2, entity_max = 5;
  int shots = 4;  // antonym and concept-patching function prompts
  // Separator between the halves: "default" = "→" on the toy model, the newline token elsewhere; "" = none;
  // else a toy token string or (other models) a text that encodes to one token.
  std::string sep = "default";
  // Fillers: "default" = corpus on real models, random on the toy model; "corpus"; "random".
  std::string filler = "default";
  std::string filler_corpus;  // "" = the shipped WikiText-2 excerpt (defaultMeanCorpus)
  std::string words_file;     // other models: real words for the concept parts ("" = the corpus's words)
  // The official TOPKS of vocablist_ablation.py, capped by the head count (toy: 0 … 32).
  std::vector<int> ks = {0, 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 128, 256, 512, 1024};
  int random_draws = 5;  // random controls: draws of live heads (non-zero W_O), reported as mean and interval
  // Other models: the list tasks of the mean-ablation curves (list_tasks.h ids, comma-separated).
  std::string list_tasks = "translation_fr,antonym,synonym,copy_words,nonsense,upper";
  std::string list_data;  // their data folder; "" = none (the CLI and GUI fill in the shared data's)
  MeanSource mean;        // the mean of mean ablation (head_toolkit.h)
  // Run JSON files (`--json` of earlier induction / dual-route runs, comma-separated) whose grids
  // (induction.prefix_matching, dual_route.token_copying, dual_route.concept_copying) order the heads
  // instead of computing them; the grids they lack are computed. "" = compute every one.
  std::string grids_from;
  // list-tasks: the head orderings of the curves instead of the computed ones (comma-separated files): a
  // list of [layer, head] best first (the published head_orderings/<model>/<name>.json; the series is
  // named after the file), or a run JSON / grid JSON whose every grid orders the heads by its values (a
  // run of import-published included; series "<grid id>"). "" = the computed token copying, concept
  // copying and prefix matching orderings. The random control is always added.
  std::string orderings;
};

// n_eval resolved: the option, else 1024 on real models and 64 on the toy model.
int evalPrompts(const InductionRunOptions& o, bool toyModel);

const OptionTable<InductionRunOptions>& inductionOptionTable();
const OptionTable<InductionRunOptions>& dualRouteOptionTable();
const OptionTable<InductionRunOptions>& listTasksOptionTable();
const OptionTable<InductionRunOptions>& conceptPatchingOptionTable();

// The registry records (induction_method.cpp, dual_route_method.cpp, list_tasks_method.cpp,
// concept_patching_method.cpp).
MethodInfo inductionMethod();
MethodInfo dualRouteMethod();
MethodInfo listTasksMethod();
MethodInfo conceptPatchingMethod();

// The records' runs; run id and model name from ctx. `tok` may be null for models without a tokenizer (then
// no words file and no separator text can be used).
AnalysisOutput runInduction(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx = {});
AnalysisOutput runDualRoute(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx = {});
AnalysisOutput runListTasks(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx = {});
// Fails on models other than the toy model.
AnalysisOutput runConceptPatching(const Transformer& model, const Tokenizer* tok,
                                  const InductionRunOptions& o, const AnalysisContext& ctx = {});

}  // namespace hs
