#pragma once
// Function vectors (docs/methods.md, "Function vectors"; Todd et al., "Function Vectors in Large Language
// Models").
//
//  1. Mean activations: z̄[l, k] = mean of hook_z at N over `n_mean` clean ICL prompts (queries from the
//     source split, spec.shots demonstrations).
//  2. Causal head scores: for `n_corrupt` prompts whose demonstration labels are shuffled (the task is no
//     longer shown, the query and answer y* unchanged), replace one head's z at N by z̄[l, k] and measure
//     ΔP(y*) = P_patched(y*) − P_corrupt(y*); the average over prompts is the head's average indirect
//     effect AIE(l, k) (grid "fv.aie", the generic patching sweep in Mean mode).
//  3. FV = Σ_{(l,k) ∈ top heads by AIE} W_O[:, k·dh:(k+1)·dh] z̄[l, k]  ([d_model]). With `heads_from`
//     (earlier FV runs of several tasks) the heads are the official "universal" set instead: the top heads
//     of the AIE averaged over those runs' tasks, Ā(l, k) = (1/|T|) Σ_{t∈T} AIE_t(l, k) (grid
//     "fv.aie_universal"); z̄ stays this task's.
//     With `more_tasks` (further datasets beside spec's) one run does the same over several tasks, the
//     paper's own construction (Todd et al. §2.2–2.3: the AIE averaged over the tasks ranks the heads, each
//     task's FV sums those heads' means of that task): every task t gets its z̄_t and AIE_t as above (the
//     same prompts as a single-task run of t), Ā = (1/|T|) Σ_t AIE_t ranks the heads (grid
//     "fv.aie_universal", per-head SE from the tasks' SEs), and FV_t = Σ_{top heads of Ā} W_O z̄_t is
//     evaluated on t's queries (step 4, per task; table "fv.tasks").
//  4. Accuracy vs layer (curve "fv.accuracy_vs_layer"): zero-shot prompts of the evaluation set with the
//     FV added to the residual stream after layer l at N (hook_resid_post, position −1), every l; the
//     zero-shot and ICL accuracies of the same queries as constant series. Accuracy = argmax at N equals
//     the first answer token (evaluateIcl).
// On a model with an attention post-norm (OLMo-2) the FV sums the top heads' writes through the norm at
// the clean prompts' activations, averaged over those prompts (head_toolkit.h headWrites).
// Tensors: "fv" [d_model], "mean_z" [layers, heads, d_head].
// Prompts: "clean" (the n_mean prompts of z̄), "corrupt" (the n_corrupt shuffled-label prompts of the AIE),
// "eval_zero_shot" and "eval_icl" (the evaluation queries; with the label set for classification tasks).
// A run of several tasks keeps these names for spec's task (the run's task) and adds, for every further task
// t (named by shortName(t), registry.h): grid "fv.aie.<t>", curve "fv.accuracy_vs_layer.<t>", tensors
// "fv.<t>" and "mean_z.<t>", prompt sets "clean.<t>", "corrupt.<t>", "eval_zero_shot.<t>", "eval_icl.<t>";
// and table "fv.tasks" (one row per task, its own first).
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/icl_task.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct FvOptions {
  int n_mean = 100;                    // clean ICL prompts averaged into z̄
  int n_corrupt = 25;                  // shuffled-label prompts of the AIE sweep
  int top = 10;                        // heads summed into the FV
  std::string source_split = "train";  // split of the queries of the mean and the shuffled prompts
  std::string heads_from;  // comma-separated FV run JSONs: the heads by their AIE averaged (universal set)
  // Further tasks (datasets, comma-separated) run beside spec's with its other fields (template, shots, n,
  // seed, split, labels): the heads are the top of the AIE averaged over all the tasks (universal set).
  std::string more_tasks;
  int batch = 16;  // prompts per forward in the accuracy evaluations
};
const OptionTable<FvOptions>& fvOptionTable();
MethodInfo fvMethod();  // the registry record

// The whole analysis. `spec` is the evaluation set (its split, n_prompts, seed); the mean and shuffled
// prompts use its dataset, template, shots and seed (hence the same split) with queries from
// opt.source_split: prompts 0..n_mean−1 of that set are the clean ones, the next n_corrupt are shuffled.
// Grids "fv.aie", curve "fv.accuracy_vs_layer", table "fv.top_heads"; summary: top heads, best layer,
// accuracies. Run id and model name from ctx. With opt.more_tasks, the run of several tasks above (refused
// beside heads_from, and for a task given twice or two tasks of the same short name).
// Every task's prompts are built (its dataset loaded) before anything is computed.
AnalysisOutput runFv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                     const FvOptions& opt = {}, const AnalysisContext& ctx = {});

// AIE grid over shuffled-label prompts: for prompt i, ΔP(answer_token_i) when head (l, k)'s z at the last
// position is replaced by mean_z[l, k] ([layers, heads, d_head]); averaged over prompts. Id "fv.aie".
HeadGrid averageIndirectEffect(const Transformer& model, const std::vector<Prompt>& corrupt,
                               const at::Tensor& meanZ, const AnalysisContext& ctx = {});

// The universal AIE: the per-task AIE grids of earlier FV runs (their --json files, comma-separated; a file
// may hold one grid instead; a run of several tasks gives each of its "fv.aie" and "fv.aie.<t>" grids)
// averaged head by head, each task weighted equally (averageAie). Its provenance names the files and their
// tasks. Throws naming a file without an fv.aie grid or whose grid is not layers × heads.
HeadGrid universalAie(const std::string& files, int layers, int heads);

// Ā(l, k) = (1/|T|) Σ_t AIE_t(l, k) over `perTask` (one grid per task, all the same shape), id
// "fv.aie_universal". Its SE, where every grid has one: (1/|T|) √(Σ_t se_t(l, k)²), the standard error of
// the mean of |T| independent task means (the tasks' prompts are drawn independently); none otherwise.
HeadGrid averageAie(const std::vector<HeadGrid>& perTask);

// Σ over `heads` of W_O slice · mean_z[l, k]: [d_model] float32. Refused on models whose W_O z is not a
// head's additive write (attention post-norm).
at::Tensor functionVector(const Transformer& model, const at::Tensor& meanZ,
                          const std::vector<HeadRef>& heads);

}  // namespace hs
