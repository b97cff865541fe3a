#pragma once
// TSLA: task recognition (TR) and task learning (TL) heads (docs/methods.md, "TSLA"; Yang, Cho, Inoue, ICLR
// 2026).
//
// For every head (l, k) and ICL prompt, a = a_{l,k,N} is the head's write into the residual stream at
// the last prompt position (headOutputsAtLast; through the attention post-norm at the run's activations
// on OLMo-2). Y is the prompt's label set: the task's label words (classification) or, for an open-ended
// task, the first tokens of the answers its demonstrations show plus the query's. With the projector
// P = W (WᵀW)⁻¹ Wᵀ onto span(W_U[Y]) (label_projector.h) and d_{y*} = W_U[y*] − mean_{y'≠y*} W_U[y'] for the
// gold label y*, the paper's scores (score_definition "paper", the default; TrTlDefinition::Paper):
//   TR(l, k) = mean over prompts of ‖P a‖₂²             — how much the head writes into the label subspace;
//   TL(l, k) = mean over prompts of ⟨a, d_{y*}⟩ / ‖P a‖₂² — the logit difference it makes per unit of TR.
// TL's numerator is Ave_{y'∈Y∖{y*}} aᵀ(W_U[y*] − W_U[y']) = ⟨a, d_{y*}⟩ (= ⟨P a, d_{y*}⟩: d lies in the label
// subspace); a head with P a = 0 contributes TL = 0 for that prompt. score_definition "norm"
// (TrTlDefinition::Norm) is the earlier variant: TR = mean ‖P a‖₂, TL = mean ⟨a, d_{y*}⟩ / ‖P a‖₂.
// final_norm (off by default: the paper's raw W_U): W_U's rows are folded with the final norm's weight
// (unembedRows(..., true)), and the per-layer curves read the final-normed residual, so both measure what
// the logits read.
//
// The run ("tsla"), on `n` analysed ICL prompts and a held-out set of other queries (heldOutTask):
//  grids   tsla.tr, tsla.tl; tsla.induction (prefix matching on random tokens from inductionTokenRange);
//          tsla.attention_labels, tsla.attention_query (share of the attention at N on the demonstrations'
//          label tokens, on the query's input tokens; analysed prompts).
//  tables  tsla.ablation (held-out accuracy / TR ratio with the top `top_percent` % heads by TR, by TL, by
//          induction score, and a seeded random set of the same size outside the TR and TL sets, zero- or
//          mean-ablated at every position; means from `mean`, a neutral corpus by default);
//          tsla.perturbation (classification: the same ablations on held-out prompts whose demonstration
//          inputs are shuffled across demonstrations — task learning removed — and whose labels are
//          replaced by numbers 1..k — task recognition removed; TR ratio against the numbers);
//          tsla.attention (the attention shares averaged over each head set);
//          tsla.steering (held-out zero-shot accuracy / TR ratio with each set's prompt-mean output sum
//          added to the residual entering `steer_layer` at N); tsla.overlap (Jaccard@k, Kendall τ,
//          Spearman ρ between the TR, TL and induction rankings).
//          The random set is drawn `random_draws` times: in the ablation, perturbation, steering and
//          attention tables its row is the mean over the draws with columns "draws", "<x>_sd" and the 95 %
//          t interval of the mean "<x>_lo" / "<x>_hi"; the other rows have Wilson intervals (rates) or a
//          bootstrap over the prompts (attention shares).
//  curves  tsla.ablation_curve.accuracy, tsla.ablation_curve.tr_ratio (x = k = 0, 1, 2, 4, … up to half
//          the heads; one series per ordering tr, tl, induction, random and ablation mode);
//          tsla.alignment, tsla.logit_diff (per layer, the last-position residual's ‖P h‖/‖h‖ and
//          ⟨h, d_{y*}⟩, baseline and with the TR / TL heads zero-ablated).
//  prompts "icl" (analysed), "eval" (held-out ICL), "zero_shot" (held-out queries without demonstrations,
//          the steering prompts), "shuffled_inputs", "number_labels"; each with its label set.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/label_projector.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/icl_task.h"

namespace hs {

struct TslaOptions {
  double top_percent = 3.0;       // heads selected by TR / TL / induction / random (at least one)
  std::string ablation = "both";  // "zero", "mean" or "both"
  MeanSource mean;                // where mean ablation's means come from (a neutral corpus by default)
  std::string score_definition = "paper";  // TR / TL: "paper" (‖P a‖², ÷ ‖P a‖²) or "norm" (‖P a‖, ÷ ‖P a‖)
  bool final_norm = false;       // fold the final norm into W_U; curves on the final-normed residual
  int eval_prompts = -1;         // held-out prompts (other queries of the same split); -1 = as analysed
  uint64_t random_seed = 1;      // the random head set and order, the input shuffles
  int random_draws = 5;          // random head sets and orders (live heads), averaged in the tables
  int induction_span = 20;       // induction scores: random tokens per copy
  int induction_sequences = 16;  // induction scores: sequences
  int steer_layer = -1;          // residual entering this layer is steered; -1 = n_layers / 2
  double steer_scale = 1.0;      // scale of the steering vectors
  bool curves = true;            // ablation curves over k
  std::vector<int> curve_ks;     // their k; empty = 1, 2, 4, … up to half the heads
  bool perturbation = true;      // the input-perturbation tables (classification tasks)
  int batch = 16;                // prompts per forward
};
// The options as the registry declares them (keys, defaults, ranges, help).
const OptionTable<TslaOptions>& tslaOptionTable();
// The method's registry record (registry.h).
MethodInfo tslaMethod();

// Index into labelTokens of every prompt's answer token: [prompts]. Throws naming the prompt whose
// answer is not a label token.
std::vector<int> goldLabelIndices(const std::vector<Prompt>& prompts, const std::vector<int>& labelTokens);

// The label set each prompt is scored against and its answer's index in it.
struct PromptLabels {
  std::vector<std::vector<int>> sets;  // [prompts] label token ids
  std::vector<int> gold;               // [prompts] index of the prompt's answer token in sets[i]
};
// Classification: the task's label tokens for every prompt. Open-ended tasks: the distinct first tokens
// of the prompt's demonstration answers and of its own answer, ascending.
PromptLabels promptLabels(const IclTask& task, const std::vector<Prompt>& prompts);

// Which TR / TL (option score_definition): Paper (TR = mean ‖P a‖², TL = mean ⟨a, d⟩ / ‖P a‖²) or Norm
// (TR = mean ‖P a‖, TL = mean ⟨a, d⟩ / ‖P a‖).
enum class TrTlDefinition { Paper, Norm };
// "paper" / "norm" → the definition; other names are refused.
TrTlDefinition trTlDefinition(const std::string& name);

// TR and TL per head from head outputs a [prompts, layers, heads, d_model] and gold label indices.
struct TrTlScores {
  Eigen::MatrixXd tr, tl;  // [layers, heads] means over the prompts
  // [layers, heads] the mean over the prompts of each score squared: with `n`, each head's standard error
  // over the prompts (standardErrors).
  Eigen::MatrixXd tr_sq = Eigen::MatrixXd(), tl_sq = Eigen::MatrixXd();
  int n = 0;
};
// Standard errors sample sd / √n from a mean and a mean square over n values ([layers, heads]; NaN for n <
// 2).
Eigen::MatrixXd standardErrors(const Eigen::MatrixXd& mean, const Eigen::MatrixXd& meanSquare, int n);
TrTlScores trTlScores(const at::Tensor& headOutputs, const LabelProjector& projector,
                      const std::vector<int>& gold, TrTlDefinition definition = TrTlDefinition::Paper);
// The same with each prompt's own label set (prompts sharing a set share one projector); rows of W_U
// folded with the final norm when foldFinalNorm.
TrTlScores trTlScores(const at::Tensor& headOutputs, const Transformer& model, const PromptLabels& labels,
                      bool foldFinalNorm, TrTlDefinition definition = TrTlDefinition::Paper);

// Per-layer subspace geometry of last-position residuals h [prompts, layers, d_model]: mean over prompts
// of ‖P h‖/‖h‖ (alignment) and ⟨h, d_{y*}⟩ (logit difference), one value per layer.
struct SubspaceCurves {
  std::vector<double> alignment, logit_diff;  // [layers]
  // Every prompt's values ([layers][prompts]; grouped by label set): the curves' bootstrap intervals.
  std::vector<std::vector<double>> alignment_per_prompt = {}, logit_diff_per_prompt = {};
};
SubspaceCurves subspaceCurves(const at::Tensor& residuals, const LabelProjector& projector,
                              const std::vector<int>& gold);
// The same with each prompt's label set; finalNorm: h is first put through the model's final norm
// (finalNormed), so at the last layer the logit difference is the model's own.
SubspaceCurves subspaceCurves(const at::Tensor& residuals, const Transformer& model,
                              const PromptLabels& labels, bool finalNorm);

// The label projector of a classification task (fails clearly for open-ended tasks or < 2 labels).
LabelProjector taskProjector(const Transformer& model, const IclTask& task, const std::string& method,
                             bool foldFinalNorm = false);

// `n` held-out prompts for `task`: prompts n_prompts … n_prompts + n − 1 of the same spec (same seed, split
// and demonstration draws), whose queries are other queries of the split than the analysed ones. Throws,
// naming the counts, when the split holds too few queries for both sets, or when `task` is not what its
// spec builds.
IclTask heldOutTask(const Tokenizer& tok, const IclTask& task, int n);

// Where the last position attends: per head, the mean over prompts of its attention at N on the
// demonstrations' label tokens, on the query's input tokens and on the demonstrations' input tokens.
struct AttentionShares {
  Eigen::MatrixXd labels, query, demo_inputs;                                   // [layers, heads]
  Eigen::MatrixXd labels_se = Eigen::MatrixXd(), query_se = Eigen::MatrixXd();  // their standard errors
  // Every prompt's shares, float64 (the head-set averages' bootstrap intervals over the prompts).
  at::Tensor labels_per_prompt = {}, query_per_prompt = {},
             inputs_per_prompt = {};  // [prompts, layers, heads]
};
AttentionShares attentionShares(const Transformer& model, const std::vector<Prompt>& prompts,
                                const AnalysisContext& ctx = {}, int batch = 4);

// The full analysis. `evalTask` is the held-out set the ablation, perturbation and steering tables are
// measured on (same dataset and label set, other queries); the first overload builds it with heldOutTask.
// The run's id and the model's name come from ctx (run_id, model_path).
AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const TslaOptions& opts = {}, const AnalysisContext& ctx = {});
AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const IclTask& evalTask, const TslaOptions& opts = {},
                       const AnalysisContext& ctx = {});

// The provenance every grid/curve/table of an ICL analysis carries: method, model (ctx.model_path), the
// task's dataset, seed and prompt count, and `options` (all options with their values) plus the task spec
// and label tokens.
Provenance iclProvenance(const std::string& method, const AnalysisContext& ctx, const IclTask& task,
                         const nlohmann::json& options);

}  // namespace hs
