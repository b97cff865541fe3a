#pragma once
// LTV — learned task vectors, with the extracted baselines they are compared against (docs/methods.md,
// "LTV").
//
// One injection site for every vector of a comparison (`site`): a vector "at layer l" is added at N of
// hook_resid_post(l), the output of layer l (the default: the paper's h^l, Hendel et al.'s task hidden
// state, and the FV paper's "output of layer l"), or of hook_resid_pre(l), the residual entering layer l.
//
// LTV: θ is added (InterventionOp::Add, θ requires grad) at the site, at the injection's positions (one θ
// per (layer, position)) of zero-shot prompts (or of few-shot prompts); the model is frozen; the loss is
// −log p(y*) of the first answer token; AdamW (weight decay 0.01) with a linearly decaying learning rate;
// θ ~ U(−r, r) seeded; early stop on the accuracy of the valid split (the best θ seen is kept; equal
// accuracies are ranked by the valid loss).
// Extracted baselines at the same site, at N of the zero-shot prompt:
//  - vanilla TV, the kind `tv_kind` names (both with "both"):
//    additive (the LTV paper's baseline, the default; series / column "tv_add"): θ = h_ICL − h_ZS added
//    there (Add), h_ICL = the site's residual at N averaged over ICL prompts of the train split, h_ZS the
//    same average over the zero-shot train prompts;
//    substituted (Hendel et al.; "tv_replace"): h_ICL replaces the zero-shot state there (Replace);
//  - FV: the function vector (sum of the top heads' mean writes a, docs/methods.md, "Function vectors") added
//  there.
// Prompt sets recorded: "train" (zero-shot prompts LTV trains on), "valid" (early stop), "icl_train"
// (h_ICL and the FV's mean head outputs), "zero_shot_train" (h_ZS and the key-head saliency), "fv_shuffled"
// (the FV heads' AIE), "propagation" (the linear-propagation fit), "zero_shot" and "icl" (the test split,
// every accuracy), and with the injection configurations "fewshot_train" / "fewshot_valid".
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/icl_task.h"
#include "tasks/prompt.h"

namespace hs {

// ---- LTV training ----

struct LtvTrainOptions {
  int steps = 1000;  // optimizer steps at most
  double lr = 5e-3;  // peak learning rate, the top of the paper's range 1e-3..5e-3 (lower ones stop short on
                     // the toy model: Adam moves θ by about lr per step), decays linearly to 0
  double weight_decay = 0.01;  // AdamW
  int batch = 8;               // zero-shot prompts per step (drawn in a seeded shuffled order)
  double init_range = 0.1;     // θ ~ U(−init_range, init_range)
  int eval_every = 25;         // steps between validation evaluations
  int patience = 8;            // evaluations without a better validation accuracy before stopping
  uint64_t seed = 1;
  int eval_batch = 16;
  int pad_id = 0;
  std::string loss_curve;  // id of the live loss points; "" = "ltv.loss_l<first layer>"
};

struct LtvTraining {
  at::Tensor theta;            // [layers, slots, d_model] float32, the best θ by validation accuracy
  std::vector<double> loss;    // [steps run] mean −log p(y*) of each step's batch (before the update)
  std::vector<int> eval_step;  // steps at which the valid split was evaluated (0 = before training)
  std::vector<double> valid_accuracy;  // [eval_step.size()]
  int steps_run = 0;
  int best_step = 0;
  double best_valid_accuracy = 0;
  bool early_stopped = false;
};

// Where a task vector enters: `site` of every layer of `layers`, at `positions`; one vector per (layer,
// position) slot.
struct Injection {
  std::vector<int> layers;    // one vector per layer
  std::string site = "post";  // "post": hook_resid_post(l); "pre": hook_resid_pre(l)
  std::vector<int> positions = {
      -1};                       // counted from the end (−1 = N); empty = every position, one shared vector
  Site siteOf(int layer) const;  // the hook site of `layer`
  int64_t slots() const;         // vectors per layer: positions.size(), 1 when empty
  std::string describe() const;  // "blocks.{l}.hook_resid_post, N" for display and provenance
};
// "post" / "pre" → the site of `layer`; other names are refused.
Site injectionSite(const std::string& site, int layer);
// θ [layers.size(), slots, d_model] at the injection: one intervention per layer, `op` (Add for learned and
// additive vectors, Replace for the vanilla TV).
std::vector<Intervention> injectionInterventions(const Injection& where, const at::Tensor& theta,
                                                 InterventionOp op = InterventionOp::Add);
// `v` [d_model] (or [layers, d_model], one per layer of the injection) repeated into every slot:
// → [layers.size(), slots, d_model].
at::Tensor fillSlots(const Injection& where, const at::Tensor& v);

// Trains θ [layers, slots, d_model] at `where` on `train` prompts (zero-shot or few-shot); `valid` (may be
// empty: no early stop, the last θ is kept) selects the best θ. The model's weights get no gradients
// (Frozen model). Cancellation between steps.
LtvTraining trainLtv(const Transformer& model, const std::vector<Prompt>& train,
                     const std::vector<Prompt>& valid, const Injection& where, const LtvTrainOptions& opt,
                     const AnalysisContext& ctx = {});

// ---- extracted baselines ----

struct FvBaselineResult {
  HeadGrid aie;                // [layers, heads] mean ΔP(y*) of mean-patching one head on shuffled prompts
  std::vector<HeadRef> heads;  // the top heads by AIE, best first
  at::Tensor vector;           // [d_model] Σ over those heads of the mean write a at N over ICL prompts
};

// The FV baseline (function_vectors.h): mean z at N over `icl`, the AIE of mean-patching one head on
// `shuffled` (target = the answer token, metric P(y*)), FV = Σ over the top n_heads of W_O · mean z.
FvBaselineResult fvBaseline(const Transformer& model, const std::vector<Prompt>& icl,
                            const std::vector<Prompt>& shuffled, int n_heads,
                            const AnalysisContext& ctx = {});

// ---- the whole analysis ----

struct LtvOptions {
  LtvTrainOptions train;
  int layer = -1;             // the chosen layer of the summary and the mechanism views; −1 = L/2
  std::vector<int> layers;    // layers of the accuracy / rotation curves; empty = all (the chosen one always)
  std::string site = "post";  // where every vector of the comparison enters at layer l (Injection::site)
  std::string tv_kind = "additive";  // vanilla TV: "additive" (h_ICL − h_ZS added), "substituted", "both"
  int train_prompts = 200;           // zero-shot prompts of the train split (queries cycle)
  int valid_prompts = 50;            // zero-shot prompts of the valid split (early stop)
  int icl_prompts = 50;              // ICL prompts of the train split for h_ICL, h_ZS and the FV means
  int fv_prompts = 25;               // shuffled-label prompts for the AIE
  int fv_heads = 10;                 // heads summed into the FV
  // Injection configurations at the chosen layer (table ltv.injection_configs), each LTV trained anew.
  bool configs = true;
  std::string config_positions = "last_k";  // "last_k": the last `last_k` positions; "all": every position
  int last_k = 5;  // the paper's P = {−5, …, −1}; capped by the shortest zero-shot prompt
  std::vector<int> config_layers;  // several layers; empty = 0, s, 2s, … with s = max(1, L/8)
  std::string recon_norm = "layer";  // θ_OV / θ_MLP read θ through each later layer's input norm; "none": raw
  std::string ov_inject = "final";  // where θ_OV and θ_MLP are added at N: "final" = hook_resid_post of the
                                    // last layer (what the later heads / MLPs would have written), "layer" =
                                    // where θ was
  double key_head_fraction = 0.1;   // share of all heads ablated as key heads (chosen after the site)
  int random_sets = 5;              // random head sets of the same size (after the site, not key heads)
  bool ablate_mean = false;         // mean- instead of zero-ablation of key and random heads
  MeanSource mean;                  // where mean ablation's means come from (default: a neutral corpus)
  int prop_directions = -1;  // r: W on span(θ, r − 1 random directions); −1: the full W up to d = 4096
  int prop_samples = -1;     // perturbations for W; −1 = 2 r
  double prop_lambda = 0.5;  // perturbation length relative to ‖θ‖
  int prop_prompts = 8;      // zero-shot prompts Δh is averaged over
  int eval_batch = 16;
  int pad_id = 0;
};
const OptionTable<LtvOptions>& ltvOptionTable();
MethodInfo ltvMethod();  // the registry record

// Runs everything on the task (test split = spec.split, n = spec.n_prompts; train / valid split of the
// same seed): per layer LTV + baselines at one site (curve "ltv.accuracy_vs_layer"), the injection
// configurations (table "ltv.injection_configs"), the mechanism at the chosen layer (grid "ltv.key_heads",
// table "ltv.key_head_ablation", table "ltv.ov_reconstruction" with the MLP control), rotation and stretch
// per layer (curve "ltv.rotation_stretch"). Tensors: "theta_l<l>" [d_model] per layer, "W_basis" [d_model,
// r] and "W_map" [d_model, r] (W on span(W_basis) = W_map W_basisᵀ) at the chosen layer, "fv" [d_model],
// "h_icl" / "h_zs" [layers, d_model] (at the site).
AnalysisOutput runLtv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                      const LtvOptions& opt, const AnalysisContext& ctx = {});

}  // namespace hs
