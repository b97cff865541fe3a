// The whole LTV analysis (runLtv) as a sequence of stages: options and prompt splits, the extracted
// baselines, LTV per layer with its propagation fit, the injection configurations, and the mechanism views
// at the chosen layer (OV reconstruction, key heads). See ltv.h and ltv_mechanism.h.
#include "analysis/methods/ltv.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/methods/ltv_mechanism.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis/toolkit/label_projector.h"
#include "analysis/toolkit/patch_sweep.h"
#include "results/intervals.h"
#include "results/rank_stats.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kStreamRandomHeads = 0xAB1A, kStreamProp = 0x9209;

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

// The validated layout of a run: the chosen layer, the layers of the curves and of the several-layer
// configurations, and the one site every vector enters.
struct LtvLayout {
  int L = 0, H = 0;
  int chosen = 0;                 // the layer of the summary and the mechanism views
  std::set<int> layerSet;         // layers of the accuracy / rotation curves, the chosen one included
  std::vector<int> configLayers;  // layers of the several-layer configurations
  Site (*siteFn)(int) = residPost;
  Injection atN;  // the chosen layer's site, position N
};

// The layers of the accuracy / rotation curves: `--layers` (empty: all) and the chosen one.
std::set<int> curveLayers(const LtvOptions& opt, int L, int chosen) {
  std::set<int> layers(opt.layers.begin(), opt.layers.end());
  if (opt.layers.empty())
    for (int l = 0; l < L; ++l)
      layers.insert(l);
  layers.insert(chosen);
  for (int l : layers)
    if (l < 0 || l >= L) fail("ltv: layer ", l, " in --layers does not exist (", L, " layers)");
  return layers;
}

// The layers of the several-layer configurations: `--config-layers`, empty = 0, s, 2s, … (s = max(1, L/8)).
std::vector<int> configLayers(const LtvOptions& opt, int L) {
  std::vector<int> layers = opt.config_layers;
  if (layers.empty())
    for (int l = 0; l < L; l += std::max(1, L / 8))
      layers.push_back(l);
  for (int l : layers)
    if (l < 0 || l >= L) fail("ltv: layer ", l, " in --config-layers does not exist (", L, " layers)");
  return layers;
}

// Refuses options runLtv cannot run (in the order a user reads them) and resolves the defaults.
LtvLayout checkRunOptions(const ModelConfig& c, const LtvOptions& opt) {
  LtvLayout lay;
  lay.L = c.n_layers, lay.H = c.n_heads;
  const int L = lay.L;
  if (opt.layer < -1 || opt.layer >= L)
    fail("ltv: layer ", opt.layer, " does not exist (", L, " layers: 0..", L - 1, ", or -1 for L/2)");
  lay.chosen = opt.layer < 0 ? L / 2 : opt.layer;
  if (opt.prop_samples == 0 || opt.prop_samples < -1)
    fail("ltv: prop_samples is ", opt.prop_samples, ", expected a positive count or -1 (2 d_model)");
  lay.layerSet = curveLayers(opt, L, lay.chosen);
  if (opt.ov_inject != "final" && opt.ov_inject != "layer")
    fail("ltv: ov_inject \"", opt.ov_inject, "\", expected final or layer");
  injectionSite(opt.site, lay.chosen);  // refuses an unknown site
  reconNorm(opt.recon_norm);            // refuses an unknown reading of θ
  propagationDirections(opt.prop_directions, c.d_model);
  if (opt.config_positions != "last_k" && opt.config_positions != "all")
    fail("ltv: config_positions \"", opt.config_positions, "\", expected last_k or all");
  lay.configLayers = configLayers(opt, L);
  lay.siteFn = opt.site == "post" ? residPost : residPre;
  lay.atN = {{lay.chosen}, opt.site, {-1}};
  return lay;
}

// The prompt sets of a run: test = the spec's split; train / valid splits of the same seed and dataset.
struct LtvSplits {
  IclTask test, trainTask, validTask;
  std::vector<Prompt> trainZs;      // zero-shot prompts LTV trains on
  std::vector<Prompt> validZs;      // early stop (empty: none)
  std::vector<Prompt> iclTrain;     // h_ICL and the FV's mean head outputs
  std::vector<Prompt> zsTrain;      // h_ZS and the key-head saliency
  std::vector<Prompt> shuffled;     // the FV heads' AIE
  std::vector<Prompt> propPrompts;  // the linear-propagation fit
};

LtvSplits prepareSplits(const Tokenizer& tok, const TaskSpec& spec, const LtvOptions& opt) {
  LtvSplits s;
  const Dataset data = loadTaskDataset(spec);
  s.test = buildIclTask(tok, spec, data);
  TaskSpec trainSpec = spec;
  trainSpec.split = "train";
  trainSpec.n_prompts = std::max({opt.train_prompts, opt.icl_prompts, opt.fv_prompts, opt.prop_prompts, 1});
  s.trainTask = buildIclTask(tok, trainSpec, data);
  TaskSpec validSpec = spec;
  validSpec.split = "valid";
  validSpec.n_prompts = std::max(opt.valid_prompts, 1);
  s.validTask = buildIclTask(tok, validSpec, data);
  s.trainZs = firstN(s.trainTask.zero_shot, opt.train_prompts);
  s.validZs = opt.valid_prompts > 0 ? s.validTask.zero_shot : std::vector<Prompt>{};
  s.iclTrain = firstN(s.trainTask.icl, opt.icl_prompts);
  s.zsTrain = firstN(s.trainTask.zero_shot, opt.icl_prompts);
  s.shuffled = firstN(shuffledLabelPrompts(tok, s.trainTask, spec.seed), opt.fv_prompts);
  s.propPrompts = firstN(s.trainTask.zero_shot, opt.prop_prompts);
  return s;
}

// The run's record before any result: id, method, options with the task and the site.
AnalysisOutput startOutput(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                           const LtvOptions& opt, const Injection& atN, const AnalysisContext& ctx) {
  AnalysisOutput out;
  out.run.id = ctx.runId("ltv");
  out.run.method = "ltv";
  out.run.options = ltvOptionTable().write(opt);
  out.run.options["task"] = taskSpecToJson(spec);
  out.run.options["injection_site"] = atN.describe();
  if (opt.ablate_mean) out.run.options["mean_ablation_source"] = describeMeanSource(opt.mean, &model, &tok);
  return out;
}

// The site's name in titles ("…hook_resid_post (the output of layer l)") and on the layer axis.
struct SiteText {
  std::string title, axis;
};
SiteText siteText(const std::string& site) {
  if (site == "post")
    return {"blocks.l.hook_resid_post (the output of layer l)", "layer l (vectors at hook_resid_post(l))"};
  return {"blocks.l.hook_resid_pre (the input of layer l)", "layer l (vectors at hook_resid_pre(l))"};
}

// No vector, and the extracted vectors at the site.
struct ExtractedVectors {
  IclEval zsEval;     // the test split's zero-shot prompts without a vector
  double iclAcc = 0;  // the test split's ICL prompts without a vector
  at::Tensor hIcl;    // [L, d_model] mean residual at N of the ICL train prompts, at the site
  at::Tensor hZs;     // [L, d_model] the same over the zero-shot train prompts
  FvBaselineResult fv;
};

ExtractedVectors baselineStage(const Transformer& model, const LtvSplits& s, const LtvLayout& lay,
                               const LtvOptions& opt, const AnalysisContext& ctx) {
  ctx.report(0.0, "baselines");
  ExtractedVectors b;
  b.zsEval = evalWith(model, s.test.zero_shot, {}, opt);
  b.iclAcc = evalWith(model, s.test.icl, {}, opt).accuracy;
  b.hIcl = captureAtLast(model, tokenSeqs(s.iclTrain), lay.siteFn).mean(0);  // [L, d]
  b.hZs = captureAtLast(model, tokenSeqs(s.zsTrain), lay.siteFn).mean(0);    // [L, d]
  b.fv = fvBaseline(model, s.iclTrain, s.shuffled, std::min(opt.fv_heads, lay.L * lay.H),
                    subContext(ctx, 0.0, 0.1, "FV baseline"));
  return b;
}

// The vanilla TV kinds a run evaluates (tv_kind): the additive one (the LTV paper's, "tv_add") and/or the
// substituted one (Hendel et al.'s, "tv_replace").
bool wantsAdditive(const LtvOptions& opt) {
  return opt.tv_kind != "substituted";
}
bool wantsSubstituted(const LtvOptions& opt) {
  return opt.tv_kind != "additive";
}

// Accuracies on `prompts` with each extracted vector at an injection (each layer's own h_ICL / h_ZS, the
// same FV everywhere); a TV kind that tv_kind leaves out is NaN.
struct ExtractedAccuracy {
  double tvReplace = std::nan(""), tvAdd = std::nan(""), fv = std::nan("");
};
ExtractedAccuracy extractedAccuracy(const Transformer& model, const ExtractedVectors& b,
                                    const Injection& where, const std::vector<Prompt>& prompts,
                                    const LtvOptions& opt) {
  const at::Tensor layers = at::tensor(std::vector<int64_t>(where.layers.begin(), where.layers.end()));
  const at::Tensor hi = b.hIcl.index_select(0, layers);  // [layers, d]
  const at::Tensor hz = b.hZs.index_select(0, layers);   // [layers, d]
  ExtractedAccuracy e;
  // Substituted (Hendel et al.): the site's residual at N ← h_ICL.
  if (wantsSubstituted(opt))
    e.tvReplace = evalWith(model, prompts,
                           injectionInterventions(where, fillSlots(where, hi), InterventionOp::Replace), opt)
                      .accuracy;
  // Additive (the LTV paper's θ = h^l_{N,ICL} − h^l_N): added to the site's residual at N.
  if (wantsAdditive(opt))
    e.tvAdd =
        evalWith(model, prompts, injectionInterventions(where, fillSlots(where, hi - hz)), opt).accuracy;
  e.fv = evalWith(model, prompts, injectionInterventions(where, fillSlots(where, b.fv.vector)), opt).accuracy;
  return e;
}

// An accuracy, or null for a TV kind the run did not evaluate (NaN).
nlohmann::json orNull(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

// "tv_add = additive (h_ICL − h_ZS added)" and / or "tv_replace = substituted (h_ICL replaces the residual)".
std::string tvKindText(bool additive, bool substituted) {
  const std::string add = "tv_add = additive (h_ICL − h_ZS added)";
  const std::string sub = "tv_replace = substituted (h_ICL replaces the residual)";
  return additive && substituted ? add + ", " + sub : additive ? add : sub;
}

// The training schedule of every LTV of a run, with the run's evaluation batch and padding.
LtvTrainOptions trainOptions(const LtvOptions& opt) {
  LtvTrainOptions to = opt.train;
  to.eval_batch = opt.eval_batch;
  to.pad_id = opt.pad_id;
  return to;
}

// The label set Y the rotation is measured against: the task's label tokens (classification), else the
// distinct first answer tokens of the propagation prompts. Its raw W_U rows: [labels, d_model].
at::Tensor alignmentLabelRows(const Transformer& model, const LtvSplits& s) {
  std::vector<int> labels = s.test.label_tokens;
  if (!s.test.classification()) {
    std::set<int> answers;
    for (const Prompt& p : s.propPrompts)
      answers.insert(p.answer_token);
    labels.assign(answers.begin(), answers.end());
  }
  return unembedRows(model, labels);
}

// Per layer of the curves: LTV and the three extracted vectors at the same site, and the rotation / stretch
// of the propagation W from there.
struct LayerSweep {
  std::vector<double> layers;                     // x of both curves
  std::vector<double> ltv, tvReplace, tvAdd, fv;  // [layers] test zero-shot accuracy (NaN: not evaluated)
  bool additive = true, substituted = false;      // the vanilla TV kinds evaluated (tv_kind)
  std::vector<double> cos, stretch, r2;           // [layers] the propagation fit
  std::vector<double> alignTheta, alignQtheta;  // [layers] ‖P v‖/‖v‖ of θ and Qθ, P onto span(W_U[Y])
  int directions = 0, dModel = 0;               // r of the fit (r = d: the full W)
  std::map<int, LtvTraining> trained;           // layer → its LTV
  PropagationFit chosenFit;                     // the fit at the chosen layer
  size_t chosenIndex = 0;                       // the chosen layer's index in `layers`
};

LayerSweep layerSweepStage(const Transformer& model, const TaskSpec& spec, const LtvLayout& lay,
                           const LtvSplits& s, const ExtractedVectors& base, const LtvOptions& opt,
                           AnalysisOutput& out, const AnalysisContext& ctx) {
  LayerSweep w;
  w.additive = wantsAdditive(opt);
  w.substituted = wantsSubstituted(opt);
  const LtvTrainOptions to = trainOptions(opt);
  const int directions = propagationDirections(opt.prop_directions, model.config().d_model);
  const int samples = opt.prop_samples > 0 ? opt.prop_samples : 2 * directions;
  w.directions = directions;
  w.dModel = model.config().d_model;
  const at::Tensor labelRows = alignmentLabelRows(model, s);  // [labels, d_model]
  const double span = 0.6 / lay.layerSet.size();
  int li = 0;
  for (int l : lay.layerSet) {
    const double p0 = 0.1 + span * li++;
    const Injection inj = {{l}, opt.site, {-1}};
    LtvTraining t = trainLtv(model, s.trainZs, s.validZs, inj, to,
                             subContext(ctx, p0, p0 + 0.8 * span, cat("LTV layer ", l)));
    ctx.checkCancelled();
    w.layers.push_back(l);
    w.ltv.push_back(evalWith(model, s.test.zero_shot, injectionInterventions(inj, t.theta), opt).accuracy);
    const ExtractedAccuracy e = extractedAccuracy(model, base, inj, s.test.zero_shot, opt);
    w.tvReplace.push_back(e.tvReplace);
    w.tvAdd.push_back(e.tvAdd);
    w.fv.push_back(e.fv);
    const at::Tensor theta = t.theta[0][0];  // [d_model]
    const PropagationFit fit =
        fitLinearPropagation(model, s.propPrompts, inj.siteOf(l), theta, directions, samples, opt.prop_lambda,
                             toy::deriveSeed(spec.seed, kStreamProp, static_cast<uint64_t>(l)), opt.pad_id,
                             subContext(ctx, p0 + 0.8 * span, p0 + span, cat("propagation layer ", l)));
    const RotationStretch rs = rotationStretch(fit, toEigenVector(theta));
    w.cos.push_back(rs.cos_theta_Qtheta);
    w.stretch.push_back(rs.stretch);
    w.r2.push_back(fit.r2);
    // Rotation toward the task's labels: how much more of Qθ than of θ lies in span(W_U[Y]).
    w.alignTheta.push_back(labelAlignment(labelRows, toEigenVector(theta)));
    w.alignQtheta.push_back(labelAlignment(labelRows, rs.Qtheta));
    if (l == lay.chosen) w.chosenFit = fit;
    out.addTensor(cat("theta_l", l), theta);
    w.trained[l] = std::move(t);
  }
  w.chosenIndex = static_cast<size_t>(std::distance(lay.layerSet.begin(), lay.layerSet.find(lay.chosen)));
  return w;
}

// Curve "ltv.accuracy_vs_layer": every vector's zero-shot accuracy per layer, with no vector and ICL.
Curve accuracyCurve(const LayerSweep& w, const ExtractedVectors& base, const SiteText& text,
                    const Provenance& prov) {
  Curve acc;
  acc.id = "ltv.accuracy_vs_layer";
  acc.name = "Zero-shot accuracy with a task vector at " + text.title + ", position N";
  acc.x_label = text.axis;
  acc.y_label = "accuracy";
  acc.provenance = prov;
  acc.x = w.layers;
  const std::vector<double> zs(w.layers.size(), base.zsEval.accuracy), icl(w.layers.size(), base.iclAcc);
  // Only the TV kinds the run evaluated: "tv_add" (additive, h_ICL − h_ZS added) and/or "tv_replace"
  // (substituted, h_ICL in place of the residual); the name says which.
  acc.series = {{"ltv", w.ltv}};
  if (w.additive) acc.series.push_back({"tv_add", w.tvAdd});
  if (w.substituted) acc.series.push_back({"tv_replace", w.tvReplace});
  acc.series.insert(acc.series.end(), {{"fv", w.fv}, {"zero_shot", zs}, {"icl", icl}});
  acc.name += "; vanilla TV: " + tvKindText(w.additive, w.substituted);
  return acc;
}

// 95 % Wilson intervals of the accuracy curve and the injection configurations over the n test prompts
// (the mechanism tables carry their own: mechanismCells).
void addLtvIntervals(AnalysisRun& run, int n) {
  for (Curve& c : run.curves)
    if (c.id == "ltv.accuracy_vs_layer") addWilsonIntervals(c, n);
  for (Table& t : run.tables)
    if (t.id == "ltv.injection_configs")
      for (const char* col : {"ltv", "tv_replace", "tv_add", "fv", "no_vector"})
        addWilsonColumns(t, col, "", n);
}

// The interval columns of the mechanism tables (ltv.ov_reconstruction, ltv.key_head_ablation).
const std::vector<std::string> kMechanismIntervalColumns = {"accuracy_lo", "accuracy_hi",
                                                            "mean_answer_prob_lo", "mean_answer_prob_hi"};
// ltv.key_head_ablation's after them: how many random sets a row averages and their spread.
const std::vector<std::string> kDrawColumns = {"draws", "accuracy_sd", "mean_answer_prob_sd"};

// One evaluation's interval cells (kMechanismIntervalColumns): the Wilson interval of its accuracy over its
// n prompts, the 95 % percentile bootstrap interval of its mean answer probability over the prompts (2000
// resamples seeded with `seed`, the task's seed).
std::vector<nlohmann::json> mechanismCells(const IclEval& e, uint64_t seed) {
  const auto [accLo, accHi] = wilsonOfRate(e.accuracy, e.n);
  const auto [pLo, pHi] = bootstrapMeanInterval(answerProbabilities(e), seed);
  return {intervalCell(accLo), intervalCell(accHi), intervalCell(pLo), intervalCell(pHi)};
}

// Curve "ltv.rotation_stretch": the propagation fit's rotation, stretch and R² per layer.
Curve rotationCurve(const LayerSweep& w, const SiteText& text, const Provenance& prov) {
  Curve rot;
  rot.id = "ltv.rotation_stretch";
  rot.name = "Linear propagation W = QΣ from " + text.title + " to the last layer (" +
             (w.directions >= w.dModel ? cat("the full W, r = d = ", w.dModel)
                                       : cat("W on a subspace of r = ", w.directions, " of d = ", w.dModel)) +
             "): rotation cos(θ, Qθ), stretch ‖Σθ‖/‖θ‖, and ‖P v‖/‖v‖ of θ and Qθ in the label subspace";
  rot.x_label = "injection " + text.axis;
  rot.y_label = "cos / stretch";
  rot.provenance = prov;
  rot.x = w.layers;
  rot.series = {{"cos_theta_Qtheta", w.cos},
                {"stretch", w.stretch},
                {"fit_r2", w.r2},
                {"label_alignment_theta", w.alignTheta},
                {"label_alignment_Qtheta", w.alignQtheta}};
  return rot;
}

// "1,2,3", or "all" for an empty list.
std::string listText(const std::vector<int>& v) {
  std::string s;
  for (int x : v)
    s += (s.empty() ? "" : ",") + std::to_string(x);
  return s.empty() ? std::string("all") : s;
}

// The last k positions, k capped by the shortest zero-shot prompt (every slot a real position of every
// prompt); empty = every position.
std::vector<int> configPositions(const LtvSplits& s, const LtvOptions& opt) {
  int shortest = std::numeric_limits<int>::max();
  for (const std::vector<Prompt>* set : {&s.trainZs, &s.validZs, &s.test.zero_shot})
    for (const Prompt& p : *set)
      shortest = std::min(shortest, p.length());
  std::vector<int> positions;
  if (opt.config_positions == "last_k")
    for (int k = std::min(opt.last_k, shortest); k >= 1; --k)
      positions.push_back(-k);
  return positions;
}

// Table "ltv.injection_configs": LTV trained anew at several positions, several layers, both, and in
// few-shot prompts, beside the extracted vectors at the same injection.
struct ConfigStage {
  Table table;
  std::vector<Prompt> fewTrain, fewValid;  // the few-shot configuration's train / valid prompts
};

ConfigStage injectionConfigStage(const Transformer& model, const LtvLayout& lay, const LtvSplits& s,
                                 const ExtractedVectors& base, const LayerSweep& w, const LtvOptions& opt,
                                 const SiteText& text, const Provenance& prov, AnalysisOutput& out,
                                 const AnalysisContext& ctx) {
  ConfigStage st;
  Table& configs = st.table;
  configs.id = "ltv.injection_configs";
  configs.name = "LTV vs extracted vectors at several positions, several layers and in few-shot prompts (" +
                 text.title + "; vanilla TV: " + tvKindText(w.additive, w.substituted) +
                 ", a kind not evaluated is null)";
  configs.columns = {"config",     "layers", "positions", "prompts",  "ltv",
                     "tv_replace", "tv_add", "fv",        "no_vector"};
  configs.provenance = prov;
  const size_t ci = w.chosenIndex;
  configs.rows.push_back({"baseline", std::to_string(lay.chosen), "-1", "zero_shot", w.ltv[ci],
                          orNull(w.tvReplace[ci]), orNull(w.tvAdd[ci]), w.fv[ci], base.zsEval.accuracy});
  if (!opt.configs) return st;
  const std::vector<int> positions = configPositions(s, opt);
  st.fewTrain = firstN(s.trainTask.icl, opt.train_prompts);
  if (opt.valid_prompts > 0) st.fewValid = s.validTask.icl;
  struct Config {
    const char* id;
    Injection where;
    bool fewShot;
  };
  const std::vector<Config> cfgs = {{"positions", {{lay.chosen}, opt.site, positions}, false},
                                    {"layers", {lay.configLayers, opt.site, {-1}}, false},
                                    {"layers_positions", {lay.configLayers, opt.site, positions}, false},
                                    {"few_shot", lay.atN, true}};
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const Config& cf = cfgs[i];
    const double p0 = 0.7 + 0.15 * i / cfgs.size();
    LtvTrainOptions tcfg = trainOptions(opt);
    tcfg.loss_curve = cat("ltv.loss_", cf.id);
    const LtvTraining t =
        trainLtv(model, cf.fewShot ? st.fewTrain : s.trainZs, cf.fewShot ? st.fewValid : s.validZs, cf.where,
                 tcfg, subContext(ctx, p0, p0 + 0.15 / cfgs.size(), cat("LTV ", cf.id)));
    const std::vector<Prompt>& evalSet = cf.fewShot ? s.test.icl : s.test.zero_shot;
    const double ltvAcc = evalWith(model, evalSet, injectionInterventions(cf.where, t.theta), opt).accuracy;
    const ExtractedAccuracy e = extractedAccuracy(model, base, cf.where, evalSet, opt);
    configs.rows.push_back({cf.id, listText(cf.where.layers), listText(cf.where.positions),
                            cf.fewShot ? "few_shot" : "zero_shot", ltvAcc, orNull(e.tvReplace),
                            orNull(e.tvAdd), e.fv, cf.fewShot ? base.iclAcc : base.zsEval.accuracy});
    out.addTensor(cat("theta_", cf.id), t.theta);
  }
  return st;
}

// Table "ltv.ov_reconstruction": θ, its OV reconstruction through the later heads and the MLP control,
// each re-injected on the test zero-shot prompts.
struct OvStage {
  Table table;
  IclEval withLtv, withOv, withMlp;
};

OvStage ovReconstructionStage(const Transformer& model, const Site& site, const at::Tensor& theta,
                              const ExtractedVectors& base, const LtvSplits& s, const LtvOptions& opt,
                              uint64_t seed, const Provenance& prov) {
  OvStage st;
  st.withLtv = evalWith(model, s.test.zero_shot, {addToResidual(site, theta)}, opt);
  // θ_OV and θ_MLP re-injected instead of θ: at the last layer's output ("final") or where θ was.
  const int L = model.config().n_layers;
  auto reinjected = [&](const at::Tensor& v) {
    return opt.ov_inject == "final" ? addToResidual(residPost(L - 1), v) : addToResidual(site, v);
  };
  // Both read θ through each later layer's input norm (recon_norm layer), so their comparison is not a
  // scale effect; "none": θ itself.
  const ReconNorm norm = reconNorm(opt.recon_norm);
  const at::Tensor thetaOv = ovReconstruction(model, theta, site, norm);    // [d_model]
  const at::Tensor thetaMlp = mlpReconstruction(model, theta, site, norm);  // [d_model]
  const Intervention ovIv = reinjected(thetaOv), mlpIv = reinjected(thetaMlp);
  st.withOv = evalWith(model, s.test.zero_shot, {ovIv}, opt);
  st.withMlp = evalWith(model, s.test.zero_shot, {mlpIv}, opt);
  Table& t = st.table;
  t.id = "ltv.ov_reconstruction";
  t.name =
      norm == ReconNorm::Layer
          ? "OV reconstruction θ_OV = Σ W_O W_V (n(θ) − n(0)) and the MLP control θ_MLP = Σ (MLP(m(θ)) − "
            "MLP(m(0))) over the layers after the site, n and m each layer's input norms (recon_norm "
            "layer), re-injected"
          : "OV reconstruction θ_OV = Σ W_O W_V θ and the MLP control θ_MLP = Σ (MLP(θ) − MLP(0)) over "
            "the layers after the site, θ unnormed (recon_norm none), re-injected";
  t.columns = {"condition", "site", "accuracy", "mean_answer_prob", "vector_norm"};
  t.columns.insert(t.columns.end(), kMechanismIntervalColumns.begin(), kMechanismIntervalColumns.end());
  auto row = [&](const std::string& condition, const std::string& where, const IclEval& e, double norm) {
    std::vector<nlohmann::json> r = {condition, where, e.accuracy, e.mean_answer_prob, norm};
    for (const nlohmann::json& c : mechanismCells(e, seed))
      r.push_back(c);
    t.rows.push_back(std::move(r));
  };
  row("zero_shot", "", base.zsEval, 0.0);
  row("ltv", site.name(), st.withLtv, theta.norm().item<double>());
  row("ov_reconstruction", ovIv.site.name(), st.withOv, thetaOv.norm().item<double>());
  row("mlp_reconstruction", mlpIv.site.name(), st.withMlp, thetaMlp.norm().item<double>());
  t.provenance = prov;
  return st;
}

// Grid "ltv.key_heads" (saliency of the heads after the site) and table "ltv.key_head_ablation": the top
// key heads ablated with θ injected, against random sets of the same size after the site.
struct KeyHeadStage {
  HeadGrid key;
  Table table;
  std::vector<HeadRef> top;              // the key heads, best first
  IclEval keyAbl;                        // θ with the key heads ablated
  double randAcc = 0;                    // mean accuracy over the random sets (θ's own without any)
  Spread randAccSpread, randProbSpread;  // accuracy and mean answer probability over the random sets
};

KeyHeadStage keyHeadStage(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                          const LtvSplits& s, const Site& site, const at::Tensor& theta,
                          const IclEval& withLtv, const LtvOptions& opt, const Provenance& prov,
                          const AnalysisContext& ctx) {
  const int L = model.config().n_layers, H = model.config().n_heads;
  KeyHeadStage st;
  st.key.id = "ltv.key_heads";
  st.key.name = "LTV key-head saliency |a · ∂p(y*)/∂a| at N, heads after " + site.name();
  st.key.unit = "|a·∂p/∂a|";
  st.key.values = keyHeadSaliency(model, s.zsTrain, site, theta, opt.eval_batch, opt.pad_id,
                                  subContext(ctx, 0.87, 0.93, "key heads"), &st.key.se);
  st.key.provenance = prov;
  const std::vector<HeadRef> ranked = rankHeads(st.key);  // the heads after the site, best first
  const int k = std::max(1, static_cast<int>(std::lround(opt.key_head_fraction * L * H)));
  st.top.assign(ranked.begin(), ranked.begin() + std::min<size_t>(k, ranked.size()));
  at::Tensor meanZ;  // [layers, head, d_head]
  if (opt.ablate_mean)
    meanZ = resolveMeanZ(model, &tok, opt.mean, tokenSeqs(s.iclTrain), subContext(ctx, 0.93, 0.95, "mean z"));
  auto ablated = [&](const std::vector<HeadRef>& heads) {
    std::vector<Intervention> ivs = {addToResidual(site, theta)};
    for (const Intervention& iv : ablateHeads(heads, meanZ))
      ivs.push_back(iv);
    return evalWith(model, s.test.zero_shot, ivs, opt);
  };
  Table& abl = st.table;
  abl.id = "ltv.key_head_ablation";
  abl.name = std::string("LTV with the top key heads ") + (opt.ablate_mean ? "mean" : "zero") +
             "-ablated vs random heads after the site";
  abl.columns = {"condition", "n_heads", "heads", "accuracy", "mean_answer_prob"};
  abl.columns.insert(abl.columns.end(), kMechanismIntervalColumns.begin(), kMechanismIntervalColumns.end());
  abl.columns.insert(abl.columns.end(), kDrawColumns.begin(), kDrawColumns.end());
  // One evaluation's row: its intervals over the test prompts, one draw, no spread.
  auto evalRow = [&](const std::string& condition, const std::vector<HeadRef>& heads, const IclEval& e) {
    std::vector<nlohmann::json> r = {condition, static_cast<int>(heads.size()), headsText(heads), e.accuracy,
                                     e.mean_answer_prob};
    for (const nlohmann::json& c : mechanismCells(e, spec.seed))
      r.push_back(c);
    r.insert(r.end(), {1, nullptr, nullptr});
    abl.rows.push_back(std::move(r));
  };
  evalRow("ltv", {}, withLtv);
  st.keyAbl = ablated(st.top);
  evalRow("ltv_ablate_key", st.top, st.keyAbl);
  // Random sets of the same size among the heads after the site, disjoint from the key heads.
  std::set<HeadRef> excluded(st.top.begin(), st.top.end());
  for (int l = 0; l < firstReadingLayer(site); ++l)
    for (int h = 0; h < H; ++h)
      excluded.insert({l, h});
  std::vector<double> randAcc, randProb;               // [sets]
  const std::vector<HeadRef> live = liveHeads(model);  // random controls: heads that write something
  for (int r = 0; r < opt.random_sets && ranked.size() >= 2 * st.top.size(); ++r) {
    ctx.checkCancelled();
    const std::vector<HeadRef> set =
        randomHeads(live, static_cast<int>(st.top.size()), excluded,
                    toy::deriveSeed(spec.seed, kStreamRandomHeads, static_cast<uint64_t>(r)));
    const IclEval e = ablated(set);
    evalRow(cat("ltv_ablate_random_", r), set, e);
    randAcc.push_back(e.accuracy), randProb.push_back(e.mean_answer_prob);
  }
  // The random sets' mean row: mean, sd and the 95 % t interval of the mean over the sets (accuracies and
  // probabilities: kept in [0, 1]), as TSLA's random rows.
  st.randAccSpread = spreadOf(randAcc);
  st.randProbSpread = spreadOf(randProb);
  if (!randAcc.empty()) {
    const Spread& a = st.randAccSpread;
    const Spread& p = st.randProbSpread;
    auto in01 = [](double v) { return intervalCell(std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : v); };
    abl.rows.push_back({"ltv_ablate_random_mean", static_cast<int>(st.top.size()), "", a.mean, p.mean,
                        in01(a.lo), in01(a.hi), in01(p.lo), in01(p.hi), a.n, intervalCell(a.sd),
                        intervalCell(p.sd)});
  }
  abl.provenance = prov;
  st.randAcc = randAcc.empty() ? withLtv.accuracy : st.randAccSpread.mean;
  return st;
}

// An Eigen matrix as a float32 tensor [rows, cols].
at::Tensor matrixTensor(const Eigen::MatrixXd& m) {
  at::Tensor t = at::empty({m.rows(), m.cols()}, at::kDouble);  // [rows, cols]
  auto a = t.accessor<double, 2>();
  for (int64_t i = 0; i < m.rows(); ++i)
    for (int64_t j = 0; j < m.cols(); ++j)
      a[i][j] = m(i, j);
  return t.to(at::kFloat);
}

// Every prompt set the run used, by the names ltv.h lists.
void recordLtvPrompts(AnalysisOutput& out, const LtvSplits& s, const ConfigStage& cfg) {
  recordPrompts(out, "train", s.trainZs);
  recordPrompts(out, "valid", s.validZs);
  recordPrompts(out, "icl_train", s.iclTrain);
  recordPrompts(out, "zero_shot_train", s.zsTrain);
  recordPrompts(out, "fv_shuffled", s.shuffled);
  recordPrompts(out, "propagation", s.propPrompts);
  recordPrompts(out, "zero_shot", s.test.zero_shot);
  recordPrompts(out, "icl", s.test.icl);
  recordPrompts(out, "fewshot_train", cfg.fewTrain);
  recordPrompts(out, "fewshot_valid", cfg.fewValid);
}

// The summary: the chosen layer's accuracies, mechanism results and training record.
nlohmann::json ltvSummary(const LtvLayout& lay, const Site& site, const ExtractedVectors& base,
                          const LayerSweep& w, const OvStage& ov, const KeyHeadStage& keys,
                          const LtvOptions& opt) {
  const size_t ci = w.chosenIndex;
  const LtvTraining& tc = w.trained.at(lay.chosen);
  return {{"layer", lay.chosen},
          {"site", site.name()},
          {"ltv_accuracy", w.ltv[ci]},
          {"tv_kind", w.additive && w.substituted ? "both"
                      : w.additive                ? "additive"
                                                  : "substituted"},
          {"tv_accuracy", w.additive ? w.tvAdd[ci] : w.tvReplace[ci]},  // the vanilla TV tv_kind names
          {"tv_add_accuracy", orNull(w.tvAdd[ci])},
          {"tv_replace_accuracy", orNull(w.tvReplace[ci])},
          {"fv_accuracy", w.fv[ci]},
          {"zero_shot_accuracy", base.zsEval.accuracy},
          {"icl_accuracy", base.iclAcc},
          {"ov_reconstruction_accuracy", ov.withOv.accuracy},
          {"mlp_reconstruction_accuracy", ov.withMlp.accuracy},
          {"reconstruction_verdict", reconstructionVerdict(ov.withOv.accuracy, ov.withMlp.accuracy)},
          {"recon_norm", opt.recon_norm},
          {"key_heads", headsText(keys.top)},
          {"key_ablation_accuracy", keys.keyAbl.accuracy},
          {"random_ablation_accuracy", keys.randAcc},
          {"random_ablation_sets", keys.randAccSpread.n},  // random_ablation_accuracy is their mean
          {"random_ablation_accuracy_spread", spreadJson(keys.randAccSpread)},
          {"random_ablation_answer_prob_spread", spreadJson(keys.randProbSpread)},
          {"cos_theta_Qtheta", w.cos[ci]},
          {"stretch", w.stretch[ci]},
          {"propagation_r2", w.r2[ci]},
          {"propagation_directions", w.chosenFit.directions},
          {"propagation_fit", w.directions >= w.dModel ? "full" : "subspace"},
          {"label_alignment_theta", w.alignTheta[ci]},
          {"label_alignment_Qtheta", w.alignQtheta[ci]},
          {"ltv_steps_run", tc.steps_run},
          {"ltv_best_step", tc.best_step},
          {"ltv_valid_accuracy", tc.best_valid_accuracy},
          {"fv_heads", headsText(base.fv.heads)}};
}

}  // namespace

AnalysisOutput runLtv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                      const LtvOptions& opt, const AnalysisContext& ctx) {
  const LtvLayout lay = checkRunOptions(model.config(), opt);
  const LtvSplits splits = prepareSplits(tok, spec, opt);
  AnalysisOutput out = startOutput(model, tok, spec, opt, lay.atN, ctx);
  const Provenance prov =
      makeProvenance("ltv", ctx, spec.dataset, spec.seed, spec.n_prompts, out.run.options);
  const SiteText text = siteText(opt.site);

  // Baselines without any vector; the extracted vectors at the site; LTV per layer beside them.
  const ExtractedVectors base = baselineStage(model, splits, lay, opt, ctx);
  const LayerSweep sweep = layerSweepStage(model, spec, lay, splits, base, opt, out, ctx);
  const ConfigStage configs =
      injectionConfigStage(model, lay, splits, base, sweep, opt, text, prov, out, ctx);

  // Mechanism at the chosen layer.
  ctx.report(0.85, "mechanism");
  const Site site = lay.atN.siteOf(lay.chosen);
  const at::Tensor theta = sweep.trained.at(lay.chosen).theta[0][0];  // [d_model]
  const OvStage ov = ovReconstructionStage(model, site, theta, base, splits, opt, spec.seed, prov);
  const KeyHeadStage keys = keyHeadStage(model, tok, spec, splits, site, theta, ov.withLtv, opt, prov, ctx);

  HeadGrid fvGrid = base.fv.aie;
  fvGrid.provenance = prov;
  fvGrid.provenance.options["fv_heads_selected"] = headsText(base.fv.heads);
  out.run.grids = {keys.key, fvGrid};
  out.run.curves = {accuracyCurve(sweep, base, text, prov), rotationCurve(sweep, text, prov)};
  out.run.tables = {configs.table, keys.table, ov.table};
  addLtvIntervals(out.run, base.zsEval.n);
  out.addTensor("W_map", matrixTensor(sweep.chosenFit.map));
  out.addTensor("W_basis", matrixTensor(sweep.chosenFit.basis));
  out.addTensor("fv", base.fv.vector);
  out.addTensor("h_icl", base.hIcl);
  out.addTensor("h_zs", base.hZs);
  recordLtvPrompts(out, splits, configs);
  out.run.summary = ltvSummary(lay, site, base, sweep, ov, keys, opt);
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
