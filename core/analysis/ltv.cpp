// LTV training, the extracted task-vector baselines (vanilla TV, additive TV, FV) and the whole LTV
// analysis with its mechanism views. See ltv.h and ltv_mechanism.h.
#include "analysis/ltv.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/function_vectors.h"
#include "analysis/icl_eval.h"
#include "analysis/ltv_mechanism.h"
#include "analysis/patching.h"
#include "results/rank_stats.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kStreamInit = 0x1717, kStreamOrder = 0x0BDE, kStreamRandomHeads = 0xAB1A,
                   kStreamProp = 0x9209;

std::vector<Prompt> firstN(const std::vector<Prompt>& v, int n) {
  return {v.begin(), v.begin() + std::min<size_t>(v.size(), static_cast<size_t>(std::max(n, 0)))};
}

IclEval evalWith(const Transformer& model, const std::vector<Prompt>& prompts, std::vector<Intervention> ivs,
                 const LtvOptions& opt, const AnalysisContext& ctx = {}) {
  IclEvalOptions eo;
  eo.batch = opt.eval_batch;
  eo.interventions = std::move(ivs);
  return evaluateIcl(model, prompts, eo, ctx);
}

// Every head ordered by a grid's values, largest first (ties: layer-major order; NaN heads left out).
std::vector<HeadRef> rankHeads(const HeadGrid& g) {
  return topHeads(g, g.layers() * g.heads());
}

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

LtvTraining trainLtv(const Transformer& model, const std::vector<Prompt>& train,
                     const std::vector<Prompt>& valid, const Injection& where, const LtvTrainOptions& opt,
                     const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  if (where.layers.empty()) fail("LTV: no injection layer");
  for (int layer : where.layers)
    if (layer < 0 || layer >= c.n_layers)
      fail("LTV: layer ", layer, " does not exist (", c.n_layers, " layers)");
  injectionSite(where.site, where.layers.front());  // refuses an unknown site name
  const int layer = where.layers.front();           // names the seeds (and the live loss curve)
  const std::string lossCurve =
      opt.loss_curve.empty() ? "ltv.loss_l" + std::to_string(layer) : opt.loss_curve;
  if (train.empty()) fail("LTV: no training prompts");
  if (opt.steps <= 0 || opt.batch <= 0 || opt.eval_every <= 0)
    fail("LTV: steps (", opt.steps, "), batch (", opt.batch, ") and eval_every (", opt.eval_every,
         ") must be positive");
  if (!(opt.lr > 0)) fail("LTV: learning rate must be positive, got ", opt.lr);
  const int64_t d = c.d_model, nl = static_cast<int64_t>(where.layers.size()), slots = where.slots();

  // θ ~ U(−r, r), drawn portably (toy::Rng), then the only leaf that requires grad.
  toy::Rng initRng(toy::deriveSeed(opt.seed, kStreamInit, static_cast<uint64_t>(layer)));
  std::vector<float> init(static_cast<size_t>(nl * slots * d));
  for (float& x : init)
    x = static_cast<float>((2.0 * initRng.unit() - 1.0) * opt.init_range);
  at::Tensor theta = at::tensor(init, at::kFloat)
                         .view({nl, slots, d})
                         .to(model.device(), model.dtype())
                         .requires_grad_(true);  // [layers, slots, d]

  torch::optim::AdamW optim(std::vector<at::Tensor>{theta},
                            torch::optim::AdamWOptions(opt.lr).weight_decay(opt.weight_decay));
  IclEvalOptions eo;
  eo.batch = opt.eval_batch;

  LtvTraining out;
  // Validation: accuracy first; among equal accuracies the lower mean −log p(y*) (a larger margin) wins.
  struct Score {
    double accuracy = -1, loss = 0;
    bool betterThan(const Score& o) const {
      return accuracy > o.accuracy || (accuracy == o.accuracy && loss < o.loss);
    }
  };
  auto validate = [&](int step) {
    eo.interventions = injectionInterventions(where, theta.detach());
    const IclEval e = evaluateIcl(model, valid, eo);
    double loss = 0;
    for (double lp : e.answer_logprob)
      loss -= lp;
    loss /= std::max<size_t>(1, e.answer_logprob.size());
    out.eval_step.push_back(step);
    out.valid_accuracy.push_back(e.accuracy);
    return Score{e.accuracy, loss};
  };
  at::Tensor best = theta.detach().clone();  // [layers, slots, d]
  Score bestScore;
  int sinceBest = 0;
  if (!valid.empty()) {
    bestScore = validate(0);
    out.best_valid_accuracy = bestScore.accuracy;
  }

  std::vector<size_t> order;
  toy::Rng orderRng(toy::deriveSeed(opt.seed, kStreamOrder, static_cast<uint64_t>(layer)));
  size_t cursor = 0;
  at::AutoGradMode grad(true);
  for (int step = 0; step < opt.steps; ++step) {
    ctx.checkCancelled();
    // The next `batch` prompts of a seeded shuffled order, reshuffled every epoch.
    std::vector<Prompt> batch;
    for (int i = 0; i < opt.batch; ++i) {
      if (cursor == order.size()) {
        order.resize(train.size());
        for (size_t j = 0; j < order.size(); ++j)
          order[j] = j;
        orderRng.shuffle(order);
        cursor = 0;
      }
      batch.push_back(train[order[cursor++]]);
    }
    const PaddedBatch pb = padPrompts(batch, 0, batch.size(), opt.pad_id);
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
    const at::Tensor loss = -at::log_softmax(logits, -1).gather(1, target).mean();  // −log p(y*)
    optim.zero_grad();
    loss.backward();
    // Linear decay from lr to 0 over the planned steps.
    for (auto& group : optim.param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(opt.lr * (1.0 - double(step) / opt.steps));
    optim.step();
    out.loss.push_back(loss.item<double>());
    ctx.reportPoint(lossCurve, step + 1, out.loss.back());
    out.steps_run = step + 1;
    ctx.report(double(step + 1) / opt.steps, "LTV step " + std::to_string(step + 1));

    const bool last = step + 1 == opt.steps;
    if (valid.empty()) continue;
    if ((step + 1) % opt.eval_every != 0 && !last) continue;
    const Score score = validate(step + 1);
    if (score.betterThan(bestScore)) {
      bestScore = score;
      out.best_valid_accuracy = score.accuracy;
      out.best_step = step + 1;
      best = theta.detach().clone();
      sinceBest = 0;
    } else {
      ++sinceBest;
    }
    // Early stop: neither the valid accuracy nor, at equal accuracy, the valid loss improved for `patience`
    // evaluations (a solved valid split keeps training while its margin grows).
    if (!last && sinceBest >= opt.patience) {
      out.early_stopped = true;
      break;
    }
  }
  if (valid.empty()) {
    best = theta.detach().clone();
    out.best_step = out.steps_run;
  }
  out.theta = best.to(at::kCPU, at::kFloat);
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
             "random directions the propagation fit spans with θ (W restricted to them; >= d_model: full W)",
             OptionCheck::atLeast(1))
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
      "validation accuracy). Per layer it is compared with the vanilla task vector (the ICL hidden state), "
      "its additive variant and the function vector, all at one site (the output of layer l by default). "
      "At the chosen layer: LTVs at several positions, several layers and in few-shot prompts; the OV "
      "reconstruction of θ through the later heads beside the MLP reconstruction; the key heads after the "
      "site by saliency and their ablation against random heads; and the linear propagation W = QΣ to the "
      "last layer on a random subspace (rotation cos(θ, Qθ) and stretch).";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.default_task.dataset = "toy:antonym_a";
  m.default_task.shots = 10;
  m.options = ltvOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Curve, "ltv.accuracy_vs_layer", "layer → accuracy",
       "zero-shot accuracy with LTV, vanilla TV, additive TV and FV at each layer, one site"},
      {OutputSpec::Kind::Curve, "ltv.rotation_stretch", "layer → cos / stretch",
       "how θ's effect propagates: rotation early, stretch late"},
      {OutputSpec::Kind::Grid, "ltv.key_heads", "|a·∂p/∂a|",
       "saliency of each head after the site for the LTV's effect (NaN before it)"},
      {OutputSpec::Kind::Grid, "ltv.fv_aie", "ΔP", "the FV baseline's average indirect effect"},
      {OutputSpec::Kind::Table, "ltv.injection_configs", "accuracy",
       "LTV vs extracted vectors at several positions, several layers and in few-shot prompts"},
      {OutputSpec::Kind::Table, "ltv.key_head_ablation", "accuracy", "key heads ablated vs random heads"},
      {OutputSpec::Kind::Table, "ltv.ov_reconstruction", "accuracy",
       "θ_OV (and the MLP control θ_MLP) re-injected instead of θ"},
      {OutputSpec::Kind::Tensor, "theta_l*", "", "[d_model] the learned vector of each layer"},
      {OutputSpec::Kind::Tensor, "W_map", "", "[d_model, r] the propagation fit W on span(W_basis)"},
      {OutputSpec::Kind::Tensor, "W_basis", "",
       "[d_model, r] orthonormal: θ/‖θ‖ and r − 1 random directions"},
  };
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runLtv(in.model, *in.tokenizer, in.task, ltvOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runLtv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                      const LtvOptions& opt, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  if (opt.layer < -1 || opt.layer >= L)
    fail("ltv: layer ", opt.layer, " does not exist (", L, " layers: 0..", L - 1, ", or -1 for L/2)");
  const int chosen = opt.layer < 0 ? L / 2 : opt.layer;
  if (opt.prop_samples == 0 || opt.prop_samples < -1)
    fail("ltv: prop_samples is ", opt.prop_samples, ", expected a positive count or -1 (2 d_model)");
  std::set<int> layerSet(opt.layers.begin(), opt.layers.end());
  if (opt.layers.empty())
    for (int l = 0; l < L; ++l)
      layerSet.insert(l);
  layerSet.insert(chosen);
  for (int l : layerSet)
    if (l < 0 || l >= L) fail("ltv: layer ", l, " in --layers does not exist (", L, " layers)");
  if (opt.ov_inject != "final" && opt.ov_inject != "layer")
    fail("ltv: ov_inject \"", opt.ov_inject, "\", expected final or layer");
  injectionSite(opt.site, chosen);  // refuses an unknown site
  if (opt.config_positions != "last_k" && opt.config_positions != "all")
    fail("ltv: config_positions \"", opt.config_positions, "\", expected last_k or all");
  std::vector<int> configLayers = opt.config_layers;
  if (configLayers.empty())
    for (int l = 0; l < L; l += std::max(1, L / 8))
      configLayers.push_back(l);
  for (int l : configLayers)
    if (l < 0 || l >= L) fail("ltv: layer ", l, " in --config-layers does not exist (", L, " layers)");
  Site (*const siteFn)(int) = opt.site == "post" ? residPost : residPre;
  const Injection atN = {{chosen}, opt.site, {-1}};

  // Prompt sets: test = the spec's split; train / valid splits of the same seed and dataset.
  const Dataset data = loadTaskDataset(spec);
  const IclTask test = buildIclTask(tok, spec, data);
  TaskSpec trainSpec = spec;
  trainSpec.split = "train";
  trainSpec.n_prompts = std::max({opt.train_prompts, opt.icl_prompts, opt.fv_prompts, opt.prop_prompts, 1});
  const IclTask trainTask = buildIclTask(tok, trainSpec, data);
  TaskSpec validSpec = spec;
  validSpec.split = "valid";
  validSpec.n_prompts = std::max(opt.valid_prompts, 1);
  const IclTask validTask = buildIclTask(tok, validSpec, data);
  const std::vector<Prompt> trainZs = firstN(trainTask.zero_shot, opt.train_prompts);
  const std::vector<Prompt> validZs = opt.valid_prompts > 0 ? validTask.zero_shot : std::vector<Prompt>{};
  const std::vector<Prompt> iclTrain = firstN(trainTask.icl, opt.icl_prompts);
  const std::vector<Prompt> zsTrain = firstN(trainTask.zero_shot, opt.icl_prompts);
  const std::vector<Prompt> shuffled =
      firstN(shuffledLabelPrompts(tok, trainTask, spec.seed), opt.fv_prompts);
  const std::vector<Prompt> propPrompts = firstN(trainTask.zero_shot, opt.prop_prompts);

  AnalysisOutput out;
  out.run.id = ctx.runId("ltv");
  out.run.method = "ltv";
  out.run.options = ltvOptionTable().write(opt);
  out.run.options["task"] = taskSpecToJson(spec);
  out.run.options["injection_site"] = atN.describe();
  if (opt.ablate_mean) out.run.options["mean_ablation_source"] = describeMeanSource(opt.mean, &model, &tok);
  const Provenance prov =
      makeProvenance("ltv", ctx, spec.dataset, spec.seed, spec.n_prompts, out.run.options);
  const std::string siteText = opt.site == "post" ? "blocks.l.hook_resid_post (the output of layer l)"
                                                  : "blocks.l.hook_resid_pre (the input of layer l)";

  // Baselines without any vector; the extracted vectors at the site.
  ctx.report(0.0, "baselines");
  const IclEval zsEval = evalWith(model, test.zero_shot, {}, opt);
  const double zsAcc = zsEval.accuracy;
  const double iclAcc = evalWith(model, test.icl, {}, opt).accuracy;
  const at::Tensor hIcl = captureAtLast(model, tokenSeqs(iclTrain), siteFn).mean(0);  // [L, d]
  const at::Tensor hZs = captureAtLast(model, tokenSeqs(zsTrain), siteFn).mean(0);    // [L, d]
  const FvBaselineResult fv = fvBaseline(model, iclTrain, shuffled, std::min(opt.fv_heads, L * H),
                                         subContext(ctx, 0.0, 0.1, "FV baseline"));
  // The three extracted vectors at an injection (each layer's own h_ICL / h_ZS, the same FV everywhere).
  struct Extracted {
    double tvReplace, tvAdd, fv;
  };
  auto extracted = [&](const Injection& where, const std::vector<Prompt>& prompts) {
    at::Tensor hi =
        hIcl.index_select(0, at::tensor(std::vector<int64_t>(where.layers.begin(), where.layers.end())));
    at::Tensor hz =
        hZs.index_select(0, at::tensor(std::vector<int64_t>(where.layers.begin(), where.layers.end())));
    Extracted e;
    e.tvReplace = evalWith(model, prompts,
                           injectionInterventions(where, fillSlots(where, hi), InterventionOp::Replace), opt)
                      .accuracy;
    e.tvAdd =
        evalWith(model, prompts, injectionInterventions(where, fillSlots(where, hi - hz)), opt).accuracy;
    e.fv = evalWith(model, prompts, injectionInterventions(where, fillSlots(where, fv.vector)), opt).accuracy;
    return e;
  };
  LtvTrainOptions to = opt.train;
  to.eval_batch = opt.eval_batch;
  to.pad_id = opt.pad_id;

  // Per layer: LTV and the three extracted vectors at the same site, and the rotation / stretch of W.
  Curve acc;
  acc.id = "ltv.accuracy_vs_layer";
  acc.name = "Zero-shot accuracy with a task vector at " + siteText + ", position N";
  const std::string siteAxis = opt.site == "post" ? "layer l (vectors at hook_resid_post(l))"
                                                  : "layer l (vectors at hook_resid_pre(l))";
  acc.x_label = siteAxis;
  acc.y_label = "accuracy";
  acc.provenance = prov;
  Curve rot;
  rot.id = "ltv.rotation_stretch";
  rot.name = "Linear propagation W = QΣ from " + siteText +
             " to the last layer: rotation cos(θ, Qθ) and "
             "stretch ‖Σθ‖/‖θ‖";
  rot.x_label = "injection " + siteAxis;
  rot.y_label = "cos / stretch";
  rot.provenance = prov;
  std::vector<double> yLtv, yTv, yTvAdd, yFv, yZs, yIcl, yCos, yStretch, yR2;
  std::map<int, LtvTraining> trained;
  PropagationFit chosenFit;
  const int directions = std::min(opt.prop_directions, c.d_model);
  const int samples = opt.prop_samples > 0 ? opt.prop_samples : 2 * directions;
  const double span = 0.6 / layerSet.size();
  int li = 0;
  for (int l : layerSet) {
    const double p0 = 0.1 + span * li++;
    const Injection inj = {{l}, opt.site, {-1}};
    LtvTraining t = trainLtv(model, trainZs, validZs, inj, to,
                             subContext(ctx, p0, p0 + 0.8 * span, cat("LTV layer ", l)));
    ctx.checkCancelled();
    acc.x.push_back(l);
    yLtv.push_back(evalWith(model, test.zero_shot, injectionInterventions(inj, t.theta), opt).accuracy);
    const Extracted e = extracted(inj, test.zero_shot);
    yTv.push_back(e.tvReplace);
    yTvAdd.push_back(e.tvAdd);
    yFv.push_back(e.fv);
    yZs.push_back(zsAcc);
    yIcl.push_back(iclAcc);
    const at::Tensor theta = t.theta[0][0];  // [d_model]
    const PropagationFit fit =
        fitLinearPropagation(model, propPrompts, inj.siteOf(l), theta, directions, samples, opt.prop_lambda,
                             toy::deriveSeed(spec.seed, kStreamProp, static_cast<uint64_t>(l)), opt.pad_id,
                             subContext(ctx, p0 + 0.8 * span, p0 + span, cat("propagation layer ", l)));
    const RotationStretch rs = rotationStretch(fit, toEigenVector(theta));
    rot.x.push_back(l);
    yCos.push_back(rs.cos_theta_Qtheta);
    yStretch.push_back(rs.stretch);
    yR2.push_back(fit.r2);
    if (l == chosen) chosenFit = fit;
    out.addTensor(cat("theta_l", l), theta);
    trained[l] = std::move(t);
  }
  acc.series = {{"ltv", yLtv}, {"tv_replace", yTv}, {"tv_add", yTvAdd},
                {"fv", yFv},   {"zero_shot", yZs},  {"icl", yIcl}};
  rot.series = {{"cos_theta_Qtheta", yCos}, {"stretch", yStretch}, {"fit_r2", yR2}};
  const size_t ci = static_cast<size_t>(std::distance(layerSet.begin(), layerSet.find(chosen)));

  // ---- injection configurations at the chosen layer ----
  Table configs;
  configs.id = "ltv.injection_configs";
  configs.name = "LTV vs extracted vectors at several positions, several layers and in few-shot prompts (" +
                 siteText + ")";
  configs.columns = {"config",     "layers", "positions", "prompts",  "ltv",
                     "tv_replace", "tv_add", "fv",        "no_vector"};
  configs.provenance = prov;
  auto listText = [](const std::vector<int>& v) {
    std::string s;
    for (int x : v)
      s += (s.empty() ? "" : ",") + std::to_string(x);
    return s.empty() ? std::string("all") : s;
  };
  configs.rows.push_back(
      {"baseline", std::to_string(chosen), "-1", "zero_shot", yLtv[ci], yTv[ci], yTvAdd[ci], yFv[ci], zsAcc});
  std::vector<Prompt> fewTrain, fewValid;
  if (opt.configs) {
    // The last k positions, k capped by the shortest zero-shot prompt (every slot a real position of every
    // prompt); empty = every position.
    int shortest = std::numeric_limits<int>::max();
    for (const std::vector<Prompt>* set : {&trainZs, &validZs, &test.zero_shot})
      for (const Prompt& p : *set)
        shortest = std::min(shortest, p.length());
    std::vector<int> positions;
    if (opt.config_positions == "last_k")
      for (int k = std::min(opt.last_k, shortest); k >= 1; --k)
        positions.push_back(-k);
    fewTrain = firstN(trainTask.icl, opt.train_prompts);
    if (opt.valid_prompts > 0) fewValid = validTask.icl;
    struct Config {
      const char* id;
      Injection where;
      bool fewShot;
    };
    const std::vector<Config> cfgs = {{"positions", {{chosen}, opt.site, positions}, false},
                                      {"layers", {configLayers, opt.site, {-1}}, false},
                                      {"layers_positions", {configLayers, opt.site, positions}, false},
                                      {"few_shot", atN, true}};
    for (size_t i = 0; i < cfgs.size(); ++i) {
      const Config& cf = cfgs[i];
      const double p0 = 0.7 + 0.15 * i / cfgs.size();
      LtvTrainOptions tcfg = to;
      tcfg.loss_curve = cat("ltv.loss_", cf.id);
      const LtvTraining t =
          trainLtv(model, cf.fewShot ? fewTrain : trainZs, cf.fewShot ? fewValid : validZs, cf.where, tcfg,
                   subContext(ctx, p0, p0 + 0.15 / cfgs.size(), cat("LTV ", cf.id)));
      const std::vector<Prompt>& evalSet = cf.fewShot ? test.icl : test.zero_shot;
      const double ltvAcc = evalWith(model, evalSet, injectionInterventions(cf.where, t.theta), opt).accuracy;
      const Extracted e = extracted(cf.where, evalSet);
      configs.rows.push_back({cf.id, listText(cf.where.layers), listText(cf.where.positions),
                              cf.fewShot ? "few_shot" : "zero_shot", ltvAcc, e.tvReplace, e.tvAdd, e.fv,
                              cf.fewShot ? iclAcc : zsAcc});
      out.addTensor(cat("theta_", cf.id), t.theta);
    }
  }

  // ---- mechanism at the chosen layer ----
  ctx.report(0.85, "mechanism");
  const Site site = atN.siteOf(chosen);
  const LtvTraining& tc = trained.at(chosen);
  const at::Tensor theta = tc.theta[0][0];  // [d_model]
  const std::vector<Intervention> inject = {addToResidual(site, theta)};
  const IclEval withLtv = evalWith(model, test.zero_shot, inject, opt);

  // OV reconstruction and the MLP control, re-injected instead of θ.
  auto reinjected = [&](const at::Tensor& v) {
    return opt.ov_inject == "final" ? addToResidual(residPost(L - 1), v) : addToResidual(site, v);
  };
  const at::Tensor thetaOv = ovReconstruction(model, theta, site);    // [d_model]
  const at::Tensor thetaMlp = mlpReconstruction(model, theta, site);  // [d_model]
  const Intervention ovIv = reinjected(thetaOv), mlpIv = reinjected(thetaMlp);
  const IclEval withOv = evalWith(model, test.zero_shot, {ovIv}, opt);
  const IclEval withMlp = evalWith(model, test.zero_shot, {mlpIv}, opt);
  Table ovTable;
  ovTable.id = "ltv.ov_reconstruction";
  ovTable.name =
      "OV reconstruction θ_OV = Σ W_O W_V θ and the MLP control θ_MLP = Σ (MLP(θ) − MLP(0)) "
      "over the layers after the site, re-injected";
  ovTable.columns = {"condition", "site", "accuracy", "mean_answer_prob", "vector_norm"};
  ovTable.rows = {
      {"zero_shot", "", zsAcc, zsEval.mean_answer_prob, 0.0},
      {"ltv", site.name(), withLtv.accuracy, withLtv.mean_answer_prob, theta.norm().item<double>()},
      {"ov_reconstruction", ovIv.site.name(), withOv.accuracy, withOv.mean_answer_prob,
       thetaOv.norm().item<double>()},
      {"mlp_reconstruction", mlpIv.site.name(), withMlp.accuracy, withMlp.mean_answer_prob,
       thetaMlp.norm().item<double>()}};
  ovTable.provenance = prov;

  // Key heads (after the site only) and their ablation.
  HeadGrid key;
  key.id = "ltv.key_heads";
  key.name = "LTV key-head saliency |a · ∂p(y*)/∂a| at N, heads after " + site.name();
  key.unit = "|a·∂p/∂a|";
  key.values = keyHeadSaliency(model, zsTrain, site, theta, opt.eval_batch, opt.pad_id,
                               subContext(ctx, 0.87, 0.93, "key heads"));
  key.provenance = prov;
  const std::vector<HeadRef> ranked = rankHeads(key);  // the heads after the site, best first
  const int k = std::max(1, static_cast<int>(std::lround(opt.key_head_fraction * L * H)));
  const std::vector<HeadRef> top(ranked.begin(), ranked.begin() + std::min<size_t>(k, ranked.size()));
  at::Tensor meanZ;  // [layers, head, d_head]
  if (opt.ablate_mean)
    meanZ = resolveMeanZ(model, &tok, opt.mean, tokenSeqs(iclTrain), subContext(ctx, 0.93, 0.95, "mean z"));
  auto ablated = [&](const std::vector<HeadRef>& heads) {
    std::vector<Intervention> ivs = inject;
    for (const Intervention& iv : ablateHeads(heads, meanZ))
      ivs.push_back(iv);
    return evalWith(model, test.zero_shot, ivs, opt);
  };
  Table abl;
  abl.id = "ltv.key_head_ablation";
  abl.name = std::string("LTV with the top key heads ") + (opt.ablate_mean ? "mean" : "zero") +
             "-ablated vs random heads after the site";
  abl.columns = {"condition", "n_heads", "heads", "accuracy", "mean_answer_prob"};
  abl.rows.push_back({"ltv", 0, "", withLtv.accuracy, withLtv.mean_answer_prob});
  const IclEval keyAbl = ablated(top);
  abl.rows.push_back({"ltv_ablate_key", static_cast<int>(top.size()), headsText(top), keyAbl.accuracy,
                      keyAbl.mean_answer_prob});
  // Random sets of the same size among the heads after the site, disjoint from the key heads.
  std::set<HeadRef> excluded(top.begin(), top.end());
  for (int l = 0; l < firstReadingLayer(site); ++l)
    for (int h = 0; h < H; ++h)
      excluded.insert({l, h});
  double randAcc = 0, randProb = 0;
  int nSets = 0;
  for (int s = 0; s < opt.random_sets && ranked.size() >= 2 * top.size(); ++s) {
    ctx.checkCancelled();
    const std::vector<HeadRef> set =
        randomHeads(L, H, static_cast<int>(top.size()), excluded,
                    toy::deriveSeed(spec.seed, kStreamRandomHeads, static_cast<uint64_t>(s)));
    const IclEval r = ablated(set);
    abl.rows.push_back({cat("ltv_ablate_random_", s), static_cast<int>(set.size()), headsText(set),
                        r.accuracy, r.mean_answer_prob});
    randAcc += r.accuracy, randProb += r.mean_answer_prob, ++nSets;
  }
  if (nSets > 0)
    abl.rows.push_back(
        {"ltv_ablate_random_mean", static_cast<int>(top.size()), "", randAcc / nSets, randProb / nSets});
  abl.provenance = prov;

  HeadGrid fvGrid = fv.aie;
  fvGrid.provenance = prov;
  fvGrid.provenance.options["fv_heads_selected"] = headsText(fv.heads);

  out.run.grids = {key, fvGrid};
  out.run.curves = {acc, rot};
  out.run.tables = {configs, abl, ovTable};
  auto matrixTensor = [](const Eigen::MatrixXd& m) {
    at::Tensor t = at::empty({m.rows(), m.cols()}, at::kDouble);  // [rows, cols]
    auto a = t.accessor<double, 2>();
    for (int64_t i = 0; i < m.rows(); ++i)
      for (int64_t j = 0; j < m.cols(); ++j)
        a[i][j] = m(i, j);
    return t.to(at::kFloat);
  };
  out.addTensor("W_map", matrixTensor(chosenFit.map));
  out.addTensor("W_basis", matrixTensor(chosenFit.basis));
  out.addTensor("fv", fv.vector);
  out.addTensor("h_icl", hIcl);
  out.addTensor("h_zs", hZs);

  recordPrompts(out, "train", trainZs);
  recordPrompts(out, "valid", validZs);
  recordPrompts(out, "icl_train", iclTrain);
  recordPrompts(out, "zero_shot_train", zsTrain);
  recordPrompts(out, "fv_shuffled", shuffled);
  recordPrompts(out, "propagation", propPrompts);
  recordPrompts(out, "zero_shot", test.zero_shot);
  recordPrompts(out, "icl", test.icl);
  recordPrompts(out, "fewshot_train", fewTrain);
  recordPrompts(out, "fewshot_valid", fewValid);

  out.run.summary = {{"layer", chosen},
                     {"site", site.name()},
                     {"ltv_accuracy", yLtv[ci]},
                     {"tv_accuracy", yTv[ci]},
                     {"tv_add_accuracy", yTvAdd[ci]},
                     {"fv_accuracy", yFv[ci]},
                     {"zero_shot_accuracy", zsAcc},
                     {"icl_accuracy", iclAcc},
                     {"ov_reconstruction_accuracy", withOv.accuracy},
                     {"mlp_reconstruction_accuracy", withMlp.accuracy},
                     {"key_heads", headsText(top)},
                     {"key_ablation_accuracy", keyAbl.accuracy},
                     {"random_ablation_accuracy", nSets > 0 ? randAcc / nSets : withLtv.accuracy},
                     {"cos_theta_Qtheta", yCos[ci]},
                     {"stretch", yStretch[ci]},
                     {"propagation_r2", yR2[ci]},
                     {"propagation_directions", chosenFit.directions},
                     {"ltv_steps_run", tc.steps_run},
                     {"ltv_best_step", tc.best_step},
                     {"ltv_valid_accuracy", tc.best_valid_accuracy},
                     {"fv_heads", headsText(fv.heads)}};
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
