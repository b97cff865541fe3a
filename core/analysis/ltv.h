#pragma once
// LTV — learned task vectors, with the extracted baselines they are compared against (DESIGN 5.5).
//
// LTV: θ ∈ R^d is added (InterventionOp::Add, θ requires grad) to hook_resid_pre of layer l at the last
// position N of zero-shot prompts; the model is frozen; the loss is −log p(y*) of the first answer token;
// AdamW (weight decay 0.01) with a linearly decaying learning rate; θ ~ U(−r, r) seeded; early stop on
// the accuracy of the valid split (the best θ seen is kept; equal accuracies are ranked by the valid loss).
// Baselines at the same layer index l, all at N of the zero-shot prompt:
//  - vanilla TV (Hendel): h_ICL = hook_resid_post(l) at N, averaged over ICL prompts of the train split,
//    replaces the zero-shot state there (Replace);
//  - additive TV: h_ICL − h_ZS (h_ZS the same average over the zero-shot train prompts) added there (Add);
//  - FV: the function vector (sum of the top heads' mean writes a, DESIGN 5.3) added at
//    hook_resid_post(l) ("the output of layer l").
// Note the sites: LTV enters layer l (= the output of layer l−1), the baselines act on the output of l.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/head_toolkit.h"
#include "analysis/icl_task.h"
#include "analysis/registry.h"
#include "model/transformer.h"
#include "results/results.h"
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
};

struct LtvTraining {
  at::Tensor theta;            // [d_model] float32, the best θ by validation accuracy (detached)
  std::vector<double> loss;    // [steps run] mean −log p(y*) of each step's batch (before the update)
  std::vector<int> eval_step;  // steps at which the valid split was evaluated (0 = before training)
  std::vector<double> valid_accuracy;  // [eval_step.size()]
  int steps_run = 0;
  int best_step = 0;
  double best_valid_accuracy = 0;
  bool early_stopped = false;
};

// The LTV injection: θ added at hook_resid_pre(layer), position N (−1) of every row.
inline Intervention ltvInjection(int layer, const at::Tensor& theta) {
  return addToResidual(residPre(layer), theta);
}

// Trains θ at `layer` on zero-shot `train` prompts; `valid` (may be empty: no early stop, the last θ is
// kept) selects the best θ. The model's weights get no gradients (Frozen model). Cancellation between steps.
LtvTraining trainLtv(const Transformer& model, const std::vector<Prompt>& train,
                     const std::vector<Prompt>& valid, int layer, const LtvTrainOptions& opt,
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
  int layer = -1;           // the chosen layer of the summary and the mechanism views; −1 = L/2
  std::vector<int> layers;  // layers of the accuracy / rotation curves; empty = all (the chosen one always)
  int train_prompts = 200;  // zero-shot prompts of the train split (queries cycle)
  int valid_prompts = 50;   // zero-shot prompts of the valid split (early stop)
  int icl_prompts = 50;     // ICL prompts of the train split for h_ICL, h_ZS and the FV means
  int fv_prompts = 25;      // shuffled-label prompts for the AIE
  int fv_heads = 10;        // heads summed into the FV
  bool ov_include_layer = false;    // OV reconstruction over l' >= l instead of l' > l (DESIGN: l' > l)
  std::string ov_inject = "final";  // where θ_OV is added at N: "final" = hook_resid_post of the last layer
                                    // (what the heads after l would have written), "layer" = where θ was
  double key_head_fraction = 0.1;   // top share of heads by saliency that is ablated
  int random_sets = 5;              // random head sets of the same size (disjoint from the key heads)
  bool ablate_mean = false;         // mean- instead of zero-ablation (mean z over the ICL prompts)
  int prop_samples = -1;            // perturbations for W; −1 = 2·d_model
  double prop_lambda = 0.5;         // perturbation length relative to ‖θ‖
  int prop_prompts = 8;             // zero-shot prompts Δh is averaged over
  int eval_batch = 16;
  int pad_id = 0;
};
const OptionTable<LtvOptions>& ltvOptionTable();
MethodInfo ltvMethod();  // the registry record

// Runs everything on the task (test split = spec.split, n = spec.n_prompts; train / valid split of the
// same seed): per layer LTV + baselines (curve "ltv.accuracy_vs_layer"), the mechanism at the chosen
// layer (grid "ltv.key_heads", table "ltv.key_head_ablation", table "ltv.ov_reconstruction"), rotation
// and stretch per layer (curve "ltv.rotation_stretch"). Tensors: "theta_l<l>" [d_model] per layer,
// "W" [d_model, d_model] at the chosen layer, "fv" [d_model], "h_icl" / "h_zs" [layers, d_model].
AnalysisOutput runLtv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                      const LtvOptions& opt, const AnalysisContext& ctx = {});

}  // namespace hs
