// LTV training, the injection of task vectors, the FV baseline and the LTV method's options and registry
// record; the whole analysis (runLtv) is in ltv_run.cpp. See ltv.h.
#include "analysis/methods/ltv.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>

#include "analysis/methods/function_vectors.h"
#include "analysis/methods/ltv_mechanism.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis/toolkit/patch_sweep.h"
#include "results/rank_stats.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kStreamInit = 0x1717, kStreamOrder = 0x0BDE;

}  // namespace

// ---- injection sites ----

Site injectionSite(const std::string& site, int layer) {
  if (site == "post") return residPost(layer);
  if (site == "pre") return residPre(layer);
  fail("task-vector site \"", site, "\": expected post (hook_resid_post) or pre (hook_resid_pre)");
}

Site Injection::siteOf(int layer) const {
  return injectionSite(site, layer);
}

int64_t Injection::slots() const {
  return positions.empty() ? 1 : static_cast<int64_t>(positions.size());
}

std::string Injection::describe() const {
  std::string where = site == "post" ? "blocks.{l}.hook_resid_post (the output of layer l)"
                                     : "blocks.{l}.hook_resid_pre (the residual entering layer l)";
  if (positions.empty()) return where + ", every position";
  if (positions == std::vector<int>{-1}) return where + ", position N";
  std::string ps;
  for (int p : positions)
    ps += (ps.empty() ? "" : ",") + std::to_string(p);
  return where + ", positions " + ps + " from the end";
}

std::vector<Intervention> injectionInterventions(const Injection& where, const at::Tensor& theta,
                                                 InterventionOp op) {
  const int64_t nl = static_cast<int64_t>(where.layers.size());
  if (!theta.defined() || theta.dim() != 3 || theta.size(0) != nl || theta.size(1) != where.slots())
    fail("task-vector injection: θ must be [", nl, ", ", where.slots(), ", d_model], got ",
         theta.defined() ? theta.sizes() : at::IntArrayRef{});
  std::vector<Intervention> out;
  for (int64_t i = 0; i < nl; ++i) {
    Intervention iv;
    iv.site = where.siteOf(where.layers[static_cast<size_t>(i)]);
    iv.positions = where.positions;
    iv.op = op;
    iv.tensor = theta[i];  // [slots, d_model], broadcast over [rows, positions, d_model]
    out.push_back(std::move(iv));
  }
  return out;
}

at::Tensor fillSlots(const Injection& where, const at::Tensor& v) {
  const int64_t nl = static_cast<int64_t>(where.layers.size());
  const at::Tensor perLayer = v.dim() == 1 ? v.unsqueeze(0).expand({nl, v.size(0)}) : v;  // [layers, d]
  if (perLayer.dim() != 2 || perLayer.size(0) != nl)
    fail("task-vector injection: expected one vector or one per layer (", nl, "), got ", v.sizes());
  return perLayer.unsqueeze(1)
      .expand({nl, where.slots(), perLayer.size(1)})
      .contiguous();  // [layers, slots, d]
}

// ---- LTV training ----

namespace {

// Refuses what trainLtv cannot train: no or unknown layers, an unknown site, no prompts, a non-positive
// schedule.
void checkTrainingInputs(const ModelConfig& c, const std::vector<Prompt>& train, const Injection& where,
                         const LtvTrainOptions& opt) {
  if (where.layers.empty()) fail("LTV: no injection layer");
  for (int layer : where.layers)
    if (layer < 0 || layer >= c.n_layers)
      fail("LTV: layer ", layer, " does not exist (", c.n_layers, " layers)");
  injectionSite(where.site, where.layers.front());  // refuses an unknown site name
  if (train.empty()) fail("LTV: no training prompts");
  if (opt.steps <= 0 || opt.batch <= 0 || opt.eval_every <= 0)
    fail("LTV: steps (", opt.steps, "), batch (", opt.batch, ") and eval_every (", opt.eval_every,
         ") must be positive");
  if (!(opt.lr > 0)) fail("LTV: learning rate must be positive, got ", opt.lr);
}

// θ ~ U(−range, range) [layers, slots, d_model], drawn portably (toy::Rng) on the model's device and
// dtype: the only leaf that requires grad.
at::Tensor initialTheta(const Transformer& model, const Injection& where, double range, uint64_t seed) {
  const int64_t d = model.config().d_model, nl = static_cast<int64_t>(where.layers.size()),
                slots = where.slots();
  toy::Rng initRng(seed);
  std::vector<float> init(static_cast<size_t>(nl * slots * d));
  for (float& x : init)
    x = static_cast<float>((2.0 * initRng.unit() - 1.0) * range);
  return at::tensor(init, at::kFloat)
      .view({nl, slots, d})
      .to(model.device(), model.dtype())
      .requires_grad_(true);  // [layers, slots, d]
}

// The training prompts in a seeded shuffled order, reshuffled every epoch.
class ShuffledBatches {
 public:
  ShuffledBatches(const std::vector<Prompt>& prompts, uint64_t seed) : prompts_(prompts), rng_(seed) {}
  std::vector<Prompt> next(int size) {
    std::vector<Prompt> batch;
    for (int i = 0; i < size; ++i) {
      if (cursor_ == order_.size()) {
        order_.resize(prompts_.size());
        for (size_t j = 0; j < order_.size(); ++j)
          order_[j] = j;
        rng_.shuffle(order_);
        cursor_ = 0;
      }
      batch.push_back(prompts_[order_[cursor_++]]);
    }
    return batch;
  }

 private:
  const std::vector<Prompt>& prompts_;
  toy::Rng rng_;
  std::vector<size_t> order_;
  size_t cursor_ = 0;
};

// Mean −log p(y*) of the first answer token at N of `batch` with θ injected: a scalar with θ's graph.
at::Tensor answerLoss(const Transformer& model, const std::vector<Prompt>& batch, const Injection& where,
                      const at::Tensor& theta, int padId) {
  const PaddedBatch pb = padPrompts(batch, 0, batch.size(), padId);
  RunRequest req;
  req.tokens = pb.tokens.to(model.device());
  req.attention_mask = pb.attention_mask.to(model.device());
  req.last_logits_only = true;
  req.interventions = injectionInterventions(where, theta);
  const at::Tensor logits = model.run(req).logits.select(1, -1).to(at::kFloat);  // [batch, vocab]
  std::vector<int64_t> answers;
  for (const Prompt& p : batch)
    answers.push_back(p.answer_token);
  const at::Tensor target = at::tensor(answers, at::kLong).to(logits.device()).unsqueeze(1);  // [batch, 1]
  return -at::log_softmax(logits, -1).gather(1, target).mean();                               // −log p(y*)
}

// One AdamW update from `loss` at learning rate `lr` (the linear decay's value at this step).
void optimizerStep(torch::optim::AdamW& optim, const at::Tensor& loss, double lr) {
  optim.zero_grad();
  loss.backward();
  for (auto& group : optim.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optim.step();
}

// A validation result: accuracy first; among equal accuracies the lower mean −log p(y*) (a larger margin)
// wins.
struct ValidScore {
  double accuracy = -1, loss = 0;
  bool betterThan(const ValidScore& o) const {
    return accuracy > o.accuracy || (accuracy == o.accuracy && loss < o.loss);
  }
};

// θ (detached) evaluated on the valid split; the step and accuracy are appended to `out`'s history.
ValidScore validateTheta(const Transformer& model, const std::vector<Prompt>& valid, const Injection& where,
                         const at::Tensor& theta, int evalBatch, int step, LtvTraining& out) {
  IclEvalOptions eo;
  eo.batch = evalBatch;
  eo.interventions = injectionInterventions(where, theta.detach());
  const IclEval e = evaluateIcl(model, valid, eo);
  double loss = 0;
  for (double lp : e.answer_logprob)
    loss -= lp;
  loss /= std::max<size_t>(1, e.answer_logprob.size());
  out.eval_step.push_back(step);
  out.valid_accuracy.push_back(e.accuracy);
  return ValidScore{e.accuracy, loss};
}

// The best θ so far and the early stop's count of validations without improvement.
struct BestTheta {
  at::Tensor theta;  // [layers, slots, d]
  ValidScore score;
  int sinceBest = 0;
  // Keeps θ when `score` beats the best; true when training should stop: neither the valid accuracy nor,
  // at equal accuracy, the valid loss improved for `patience` evaluations (a solved valid split keeps
  // training while its margin grows).
  bool update(const ValidScore& s, const at::Tensor& current, int step, int patience, bool last,
              LtvTraining& out) {
    if (s.betterThan(score)) {
      score = s;
      out.best_valid_accuracy = s.accuracy;
      out.best_step = step;
      theta = current.detach().clone();
      sinceBest = 0;
    } else {
      ++sinceBest;
    }
    return !last && sinceBest >= patience;
  }
};

}  // namespace

LtvTraining trainLtv(const Transformer& model, const std::vector<Prompt>& train,
                     const std::vector<Prompt>& valid, const Injection& where, const LtvTrainOptions& opt,
                     const AnalysisContext& ctx) {
  checkTrainingInputs(model.config(), train, where, opt);
  const int layer = where.layers.front();  // names the seeds (and the live loss curve)
  const std::string lossCurve =
      opt.loss_curve.empty() ? "ltv.loss_l" + std::to_string(layer) : opt.loss_curve;
  at::Tensor theta = initialTheta(model, where, opt.init_range,
                                  toy::deriveSeed(opt.seed, kStreamInit, static_cast<uint64_t>(layer)));
  torch::optim::AdamW optim(std::vector<at::Tensor>{theta},
                            torch::optim::AdamWOptions(opt.lr).weight_decay(opt.weight_decay));

  LtvTraining out;
  BestTheta best{theta.detach().clone()};
  if (!valid.empty()) {
    best.score = validateTheta(model, valid, where, theta, opt.eval_batch, 0, out);
    out.best_valid_accuracy = best.score.accuracy;
  }

  ShuffledBatches batches(train, toy::deriveSeed(opt.seed, kStreamOrder, static_cast<uint64_t>(layer)));
  at::AutoGradMode grad(true);
  for (int step = 0; step < opt.steps; ++step) {
    ctx.checkCancelled();
    const at::Tensor loss = answerLoss(model, batches.next(opt.batch), where, theta, opt.pad_id);
    // Linear decay from lr to 0 over the planned steps.
    optimizerStep(optim, loss, opt.lr * (1.0 - double(step) / opt.steps));
    out.loss.push_back(loss.item<double>());
    ctx.reportPoint(lossCurve, step + 1, out.loss.back());
    out.steps_run = step + 1;
    ctx.report(double(step + 1) / opt.steps, "LTV step " + std::to_string(step + 1));

    const bool last = step + 1 == opt.steps;
    if (valid.empty()) continue;
    if ((step + 1) % opt.eval_every != 0 && !last) continue;
    const ValidScore score = validateTheta(model, valid, where, theta, opt.eval_batch, step + 1, out);
    if (best.update(score, theta, step + 1, opt.patience, last, out)) {
      out.early_stopped = true;
      break;
    }
  }
  if (valid.empty()) {
    best.theta = theta.detach().clone();
    out.best_step = out.steps_run;
  }
  out.theta = best.theta.to(at::kCPU, at::kFloat);
  return out;
}

// ---- extracted baselines ----

FvBaselineResult fvBaseline(const Transformer& model, const std::vector<Prompt>& icl,
                            const std::vector<Prompt>& shuffled, int n_heads, const AnalysisContext& ctx) {
  if (icl.empty() || shuffled.empty()) fail("FV baseline: needs ICL and shuffled-label prompts");
  const ModelConfig& c = model.config();
  if (n_heads <= 0 || n_heads > c.n_layers * c.n_heads)
    fail("FV baseline: ", n_heads, " heads requested, the model has ", c.n_layers * c.n_heads);
  const at::Tensor meanZ = hs::meanZ(model, tokenSeqs(icl), ZMean::LastPosition,
                                     subContext(ctx, 0.0, 0.2, "mean z"));  // [L, H, dh]
  FvBaselineResult out;
  out.aie = averageIndirectEffect(model, shuffled, meanZ, subContext(ctx, 0.2, 1.0, "AIE"));
  out.aie.id = "ltv.fv_aie";
  out.aie.name = "FV baseline: AIE (mean-patching one head on shuffled-label prompts)";
  out.heads = topHeads(out.aie, n_heads);
  out.vector = functionVector(model, meanZ, out.heads);  // [d_model]
  return out;
}

// ---- the whole analysis ----

const OptionTable<LtvOptions>& ltvOptionTable() {
  using O = LtvOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("layer", &O::layer, "layer of the summary and the mechanism views (-1: n_layers / 2)",
          OptionCheck::atLeast(-1))
        .add("layers", &O::layers,
             "layers of the accuracy and rotation curves (empty or all: every layer; the chosen one always)",
             OptionCheck::atLeast(0))
        .add("site", &O::site,
             "where every vector enters at layer l: post = the output of layer l (hook_resid_post, the "
             "paper's and the FV's site), pre = the residual entering layer l (hook_resid_pre)",
             OptionCheck::oneOf({"post", "pre"}))
        .add("tv_kind", &O::tv_kind,
             "the vanilla task vector compared with LTV: additive = h_ICL − h_ZS added at the site (the LTV "
             "paper's baseline, tv_add), substituted = h_ICL replacing the residual there (Hendel et al., "
             "tv_replace), or both",
             OptionCheck::oneOf({"additive", "substituted", "both"}))
        .add(
            "steps", [](O& o) -> int& { return o.train.steps; }, "AdamW steps at most per layer",
            OptionCheck::atLeast(1))
        .add(
            "lr", [](O& o) -> double& { return o.train.lr; }, "peak learning rate (linear decay to 0)",
            OptionCheck::positive())
        .add(
            "weight_decay", [](O& o) -> double& { return o.train.weight_decay; }, "AdamW weight decay",
            OptionCheck::atLeast(0))
        .add(
            "batch", [](O& o) -> int& { return o.train.batch; }, "training prompts per step",
            OptionCheck::atLeast(1))
        .add(
            "init_range", [](O& o) -> double& { return o.train.init_range; }, "θ starts uniform in (-r, r)",
            OptionCheck::atLeast(0))
        .add(
            "eval_every", [](O& o) -> int& { return o.train.eval_every; },
            "steps between validation evaluations", OptionCheck::atLeast(1))
        .add(
            "patience", [](O& o) -> int& { return o.train.patience; },
            "validations without improvement before stopping", OptionCheck::atLeast(1))
        .add(
            "train_seed", [](O& o) -> uint64_t& { return o.train.seed; },
            "seed of θ's start and the training order")
        .add("train_prompts", &O::train_prompts, "zero-shot training prompts (train split)",
             OptionCheck::atLeast(1))
        .add("valid_prompts", &O::valid_prompts, "zero-shot validation prompts for early stopping (0: none)",
             OptionCheck::atLeast(0))
        .add("icl_prompts", &O::icl_prompts, "ICL prompts averaged into h_ICL, h_ZS and the FV means",
             OptionCheck::atLeast(1))
        .add("fv_prompts", &O::fv_prompts, "shuffled-label prompts for the FV heads' AIE",
             OptionCheck::atLeast(1))
        .add("fv_heads", &O::fv_heads, "heads summed into the FV", OptionCheck::atLeast(1))
        .add("configs", &O::configs,
             "also train LTVs at several positions, several layers, both, and in few-shot prompts "
             "(table ltv.injection_configs)")
        .add("config_positions", &O::config_positions,
             "positions of the several-position configurations: the last last_k, or all (one shared θ)",
             OptionCheck::oneOf({"last_k", "all"}))
        .add("last_k", &O::last_k,
             "positions of last_k: N and the ones before it, one θ each (at most the shortest prompt)",
             OptionCheck::atLeast(1))
        .add("config_layers", &O::config_layers,
             "layers of the several-layer configurations (empty: 0, s, 2s, ... with s = max(1, L/8))",
             OptionCheck::atLeast(0))
        .add("recon_norm", &O::recon_norm,
             "how θ_OV and θ_MLP read θ: layer = through each later layer's own input norm (the attention's "
             "before W_V, the MLP's before the MLP), none = θ itself (the earlier definition)",
             OptionCheck::oneOf({"layer", "none"}))
        .add("ov_inject", &O::ov_inject,
             "where θ_OV and θ_MLP are added: final (the last layer's output) or layer (where θ was)",
             OptionCheck::oneOf({"final", "layer"}))
        .add("key_head_fraction", &O::key_head_fraction,
             "share of all heads ablated as key heads (chosen among the heads after the site)",
             OptionCheck::range(0, 1).openBelow(), "key-fraction")
        .add("random_sets", &O::random_sets, "random head sets of the same size after the site (control)",
             OptionCheck::atLeast(0))
        .add("ablate_mean", &O::ablate_mean, "mean- instead of zero-ablate key and random heads",
             OptionCheck{}, "mean-ablation");
    addMeanSourceOptions(t, &O::mean)
        .add("prop_directions", &O::prop_directions,
             "r, the directions the propagation fit spans with θ (W restricted to them; >= d_model: the full "
             "W); -1: the full W when d_model <= 4096, else 128",
             OptionCheck::atLeast(-1))
        .add("prop_samples", &O::prop_samples, "perturbations for the propagation fit (-1: 2 x directions)",
             OptionCheck::atLeast(-1))
        .add("prop_lambda", &O::prop_lambda, "perturbation length relative to ‖θ‖", OptionCheck::positive())
        .add("prop_prompts", &O::prop_prompts, "zero-shot prompts the hidden-state change is averaged over",
             OptionCheck::atLeast(1))
        .add("eval_batch", &O::eval_batch, "prompts per forward in the evaluations", OptionCheck::atLeast(1));
    return t;
  }();
  return table;
}
MethodInfo ltvMethod() {
  MethodInfo m;
  m.name = "ltv";
  m.title = "Learned task vectors (LTV) vs extracted task and function vectors";
  m.paper =
      "Yang, Cho, Ding, Inoue: Task Vectors, Learned Not Extracted: Performance Gains and Mechanistic "
      "Insights (ICLR 2026)";
  m.description =
      "Trains a task vector θ directly: added to the residual stream at the last position of zero-shot "
      "prompts, the frozen model is asked to produce the answer, and θ is optimised (AdamW, early stop on "
      "validation accuracy). Per layer it is compared with the vanilla task vector (by default the LTV "
      "paper's additive one, h_ICL − h_ZS added; or Hendel et al.'s ICL hidden state substituted) and the "
      "function vector, all at one site (the output of layer l by default). "
      "At the chosen layer: LTVs at several positions, several layers and in few-shot prompts; the OV "
      "reconstruction of θ through the later heads beside the MLP reconstruction; the key heads after the "
      "site by saliency and their ablation against random heads; and the linear propagation W = QΣ to the "
      "last layer (the full W by default; rotation cos(θ, Qθ), stretch, and how much closer Q turns θ to the "
      "label subspace).";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.default_task.dataset = "toy:antonym_a";
  m.default_task.shots = 10;
  m.options = ltvOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Curve, "ltv.accuracy_vs_layer", "layer → accuracy",
       "zero-shot accuracy with LTV, the vanilla TV (additive tv_add and/or substituted tv_replace) and FV "
       "at each layer, one site",
       "Task vectors", "LTV accuracy vs layer"},
      {OutputSpec::Kind::Curve, "ltv.rotation_stretch", "layer → cos / stretch",
       "how θ's effect propagates: rotation early, stretch late", "Geometry",
       "LTV rotation vs stretch per layer"},
      {OutputSpec::Kind::Grid, "ltv.key_heads", "|a·∂p/∂a|",
       "saliency of each head after the site for the LTV's effect (NaN before it)"},
      {OutputSpec::Kind::Grid, "ltv.fv_aie", "ΔP", "the FV baseline's average indirect effect"},
      {OutputSpec::Kind::Table, "ltv.injection_configs", "accuracy",
       "LTV vs extracted vectors at several positions, several layers and in few-shot prompts"},
      {OutputSpec::Kind::Table, "ltv.key_head_ablation", "accuracy", "key heads ablated vs random heads"},
      {OutputSpec::Kind::Table, "ltv.ov_reconstruction", "accuracy",
       "θ_OV (and the MLP control θ_MLP) re-injected instead of θ"},
      {OutputSpec::Kind::Tensor, "theta_l*", "", "[d_model] the learned vector of each layer"},
      {OutputSpec::Kind::Tensor, "W_map", "",
       "[d_model, r] the propagation fit W on span(W_basis) (r = d: W B)"},
      {OutputSpec::Kind::Tensor, "W_basis", "",
       "[d_model, r] orthonormal: θ/‖θ‖ and r − 1 random directions"},
  };
  m.gui.at_start = true;
  m.gui.start_on_toy_only = true;
  m.gui.start_on_open_task = true;
  m.gui.start_options = {{"configs", false}};  // the injection-configuration table takes long
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runLtv(in.model, *in.tokenizer, in.task, ltvOptionTable().read(options), ctx);
  };
  return m;
}

}  // namespace hs
