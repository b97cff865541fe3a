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
//  4. Accuracy vs layer (curve "fv.accuracy_vs_layer"): zero-shot prompts of the evaluation set with the
//     FV added to the residual stream after layer l at N (hook_resid_post, position −1), every l; the
//     zero-shot and ICL accuracies of the same queries as constant series. Accuracy = argmax at N equals
//     the first answer token (evaluateIcl).
// On a model with an attention post-norm (OLMo-2) the FV sums the top heads' writes through the norm at
// the clean prompts' activations, averaged over those prompts (head_toolkit.h headWrites).
// Tensors: "fv" [d_model], "mean_z" [layers, heads, d_head].
// Prompts: "clean" (the n_mean prompts of z̄), "corrupt" (the n_corrupt shuffled-label prompts of the AIE),
// "eval_zero_shot" and "eval_icl" (the evaluation queries; with the label set for classification tasks).
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
  int batch = 16;          // prompts per forward in the accuracy evaluations
};
const OptionTable<FvOptions>& fvOptionTable();
MethodInfo fvMethod();  // the registry record

// The whole analysis. `spec` is the evaluation set (its split, n_prompts, seed); the mean and shuffled
// prompts use its dataset, template, shots and seed (hence the same split) with queries from
// opt.source_split: prompts 0..n_mean−1 of that set are the clean ones, the next n_corrupt are shuffled.
// Grids "fv.aie", curve "fv.accuracy_vs_layer", table "fv.top_heads"; summary: top heads, best layer,
// accuracies. Run id and model name from ctx.
AnalysisOutput runFv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                     const FvOptions& opt = {}, const AnalysisContext& ctx = {});

// AIE grid over shuffled-label prompts: for prompt i, ΔP(answer_token_i) when head (l, k)'s z at the last
// position is replaced by mean_z[l, k] ([layers, heads, d_head]); averaged over prompts. Id "fv.aie".
HeadGrid averageIndirectEffect(const Transformer& model, const std::vector<Prompt>& corrupt,
                               const at::Tensor& meanZ, const AnalysisContext& ctx = {});

// The universal AIE: the "fv.aie" grids of earlier FV runs (their --json files, comma-separated; a file may
// hold one grid instead) averaged head by head, each run (task) weighted equally. Id "fv.aie_universal";
// its provenance names the files and their tasks. Throws naming a file without an fv.aie grid or whose
// grid is not layers × heads.
HeadGrid universalAie(const std::string& files, int layers, int heads);

// Σ over `heads` of W_O slice · mean_z[l, k]: [d_model] float32. Refused on models whose W_O z is not a
// head's additive write (attention post-norm).
at::Tensor functionVector(const Transformer& model, const at::Tensor& meanZ,
                          const std::vector<HeadRef>& heads);

}  // namespace hs
