#pragma once
// TSLA: task recognition (TR) and task learning (TL) heads (DESIGN 5.1).
//
// For every head (l, k) and ICL prompt, a = a_{l,k,N} is the head's write into the residual stream at
// the last prompt position (headOutputsAtLast; no final norm). With the label projector P
// (label_projector.h) and d_{y*} = W_U[y*] − mean_{y'≠y*} W_U[y'] for the prompt's gold label y*:
//   TR(l, k) = mean over prompts of ‖P a‖₂            — how much the head writes into the label subspace;
//   TL(l, k) = mean over prompts of ⟨a, d_{y*}⟩ / ‖P a‖₂ — how much of that write points at the right label.
// Since d_{y*} lies in the label subspace, ⟨a, d⟩ = ⟨P a, d⟩ and |TL| ≤ ‖d‖; a head with P a = 0
// contributes TL = 0 for that prompt.
//
// The run ("tsla"): grids tsla.tr, tsla.tl; top `top_percent` % heads by each, the induction heads (top by
// prefix matching, induction_scores.h) and a seeded random set of the same size outside the TR and TL
// sets; table tsla.ablation (accuracy / TR ratio on a held-out prompt set with each set zero- or
// mean-ablated); table tsla.steering (zero-shot accuracy / TR ratio with each set's mean output sum added
// to the residual entering layer L/2 at N); curves tsla.alignment and tsla.logit_diff (per layer, the
// last-position residual's ‖P h‖/‖h‖ and ⟨h, d_{y*}⟩, baseline and without the TR / TL heads); table
// tsla.overlap (Jaccard@k, Kendall τ, Spearman ρ between TR, TL and induction rankings).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/icl_task.h"
#include "analysis/label_projector.h"
#include "analysis/registry.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

struct TslaOptions {
  double top_percent = 3.0;       // heads selected by TR / TL / induction / random (at least one)
  std::string ablation = "both";  // "zero", "mean" or "both"
  uint64_t random_seed = 1;       // the random head set
  int induction_span = 20;        // induction scores: random tokens per copy
  int induction_sequences = 16;   // induction scores: sequences
  int steer_layer = -1;           // residual entering this layer is steered; -1 = n_layers / 2
  double steer_scale = 1.0;       // scale of the steering vectors
  int batch = 16;                 // prompts per forward
};
// The options as the registry declares them (keys, defaults, ranges, help).
const OptionTable<TslaOptions>& tslaOptionTable();
// The method's registry record (registry.h).
MethodInfo tslaMethod();

// Index into labelTokens of every prompt's answer token: [prompts]. Throws naming the prompt whose
// answer is not a label token.
std::vector<int> goldLabelIndices(const std::vector<Prompt>& prompts, const std::vector<int>& labelTokens);

// TR and TL per head from head outputs a [prompts, layers, heads, d_model] and gold label indices.
struct TrTlScores {
  Eigen::MatrixXd tr, tl;  // [layers, heads]
};
TrTlScores trTlScores(const at::Tensor& headOutputs, const LabelProjector& projector,
                      const std::vector<int>& gold);

// Per-layer subspace geometry of last-position residuals h [prompts, layers, d_model]: mean over prompts
// of ‖P h‖/‖h‖ (alignment) and ⟨h, d_{y*}⟩ (logit difference), one value per layer.
struct SubspaceCurves {
  std::vector<double> alignment, logit_diff;  // [layers]
};
SubspaceCurves subspaceCurves(const at::Tensor& residuals, const LabelProjector& projector,
                              const std::vector<int>& gold);

// The label projector of a classification task (fails clearly for open-ended tasks or < 2 labels).
LabelProjector taskProjector(const Transformer& model, const IclTask& task, const std::string& method);

// The full analysis. `evalTask` is the held-out set the ablation and steering tables are measured on
// (same dataset and label set, other prompts); the first overload builds it from task.spec with seed + 1.
// The run's id and the model's name come from ctx (run_id, model_path).
AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const TslaOptions& opts = {}, const AnalysisContext& ctx = {});
AnalysisOutput runTsla(const Transformer& model, const IclTask& task, const IclTask& evalTask,
                       const TslaOptions& opts = {}, const AnalysisContext& ctx = {});

// The provenance every grid/curve/table of an ICL analysis carries: method, model (ctx.model_path), the
// task's dataset, seed and prompt count, and `options` (all options with their values) plus the task spec
// and label tokens.
Provenance iclProvenance(const std::string& method, const AnalysisContext& ctx, const IclTask& task,
                         const nlohmann::json& options);

}  // namespace hs
