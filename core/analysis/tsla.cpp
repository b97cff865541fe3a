#include "analysis/tsla.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/head_toolkit.h"
#include "analysis/icl_eval.h"
#include "analysis/induction_scores.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "results/timestamp.h"
#include "util/error.h"

namespace hs {

namespace {

// [layers, heads] float64 tensor → Eigen.
Eigen::MatrixXd toMatrix(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();  // [layers, heads]
  Eigen::MatrixXd m(c.size(0), c.size(1));
  const double* p = c.data_ptr<double>();
  for (int64_t i = 0; i < c.size(0); ++i)
    for (int64_t j = 0; j < c.size(1); ++j)
      m(i, j) = p[i * c.size(1) + j];
  return m;
}

std::vector<double> toVector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();  // [n]
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// Sum over the selected heads of their prompt-mean output: meanA [layers, heads, d_model] → [d_model].
at::Tensor headSetVector(const at::Tensor& meanA, const std::vector<HeadRef>& heads) {
  at::Tensor v = at::zeros({meanA.size(2)}, meanA.options());  // [d_model]
  for (const HeadRef& h : heads)
    v += meanA[h.layer][h.head];
  return v;
}

nlohmann::json evalJson(const IclEval& e) {
  return {{"accuracy", doubleToJson(e.accuracy)}, {"tr_ratio", doubleToJson(e.tr_ratio)}, {"n", e.n}};
}

}  // namespace

const OptionTable<TslaOptions>& tslaOptionTable() {
  static const OptionTable<TslaOptions> table =
      OptionTable<TslaOptions>()
          .add("top_percent", &TslaOptions::top_percent,
               "share of heads (%) selected by TR, TL, induction score and at random (at least one)",
               OptionCheck::range(0, 100).openBelow())
          .add("ablation", &TslaOptions::ablation, "how the selected heads are ablated in the ablation table",
               OptionCheck::oneOf({"zero", "mean", "both"}))
          .add("random_seed", &TslaOptions::random_seed,
               "seed of the random head set and of the induction-score sequences")
          .add("induction_span", &TslaOptions::induction_span, "induction scores: random tokens per copy",
               OptionCheck::atLeast(2))
          .add("induction_sequences", &TslaOptions::induction_sequences, "induction scores: sequences",
               OptionCheck::atLeast(1))
          .add("steer_layer", &TslaOptions::steer_layer,
               "steer the residual stream entering this layer (-1: n_layers / 2)", OptionCheck::atLeast(-1))
          .add("steer_scale", &TslaOptions::steer_scale, "scale of the steering vectors")
          .add("batch", &TslaOptions::batch, "prompts per forward", OptionCheck::atLeast(1));
  return table;
}

MethodInfo tslaMethod() {
  MethodInfo m;
  m.name = "tsla";
  m.title = "Task recognition and task learning heads (TSLA)";
  m.paper =
      "Yang, Cho, Inoue: Localizing Task Recognition and Task Learning in In-Context Learning via Attention "
      "Head Analysis (ICLR 2026)";
  m.description =
      "Task Subspace Logit Attribution. Each head's write into the residual stream at the last prompt "
      "position is projected onto the label subspace spanned by the unembeddings of the task's label words. "
      "TR (task recognition) is the norm of that projection: how much the head moves the prediction into the "
      "label set. TL (task learning) is the projection's alignment with the correct label's direction: "
      "whether it picks the right label. The top heads by TR, by TL and by induction score, and a random set "
      "of the same size, are ablated on held-out prompts (accuracy and TR ratio) and used as steering "
      "vectors on zero-shot prompts; per-layer curves show how the last-position hidden state aligns with "
      "the subspace with and without the TR and TL heads.";
  m.tasks = {TaskKind::Classification};
  m.options = tslaOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "tsla.tr", "norm", "how much the head writes into the label subspace"},
      {OutputSpec::Kind::Grid, "tsla.tl", "logit / norm", "how much of that write points at the right label"},
      {OutputSpec::Kind::Grid, "tsla.induction", "attention", "prefix-matching (induction) score"},
      {OutputSpec::Kind::Table, "tsla.ablation", "accuracy, TR ratio",
       "each head set ablated on held-out prompts"},
      {OutputSpec::Kind::Table, "tsla.steering", "accuracy, TR ratio",
       "zero-shot prompts steered by each set"},
      {OutputSpec::Kind::Curve, "tsla.alignment", "layer → ‖P h‖/‖h‖", "alignment with the label subspace"},
      {OutputSpec::Kind::Curve, "tsla.logit_diff", "layer → logit", "correct label vs the others"},
      {OutputSpec::Kind::Table, "tsla.overlap", "Jaccard, τ, ρ",
       "agreement of the TR, TL and induction rankings"},
  };
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    ctx.report(0.0, "building the prompts of " + in.task.dataset);
    return runTsla(in.model, *in.tokenizer, buildIclTask(*in.tokenizer, in.task),
                   tslaOptionTable().read(options), ctx);
  };
  return m;
}

std::vector<int> goldLabelIndices(const std::vector<Prompt>& prompts, const std::vector<int>& labelTokens) {
  std::vector<int> gold;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto it = std::find(labelTokens.begin(), labelTokens.end(), prompts[i].answer_token);
    if (it == labelTokens.end())
      fail("prompt ", i, ": answer token ", prompts[i].answer_token, " (", prompts[i].answer,
           ") is not one of the task's label tokens");
    gold.push_back(static_cast<int>(it - labelTokens.begin()));
  }
  return gold;
}

TrTlScores trTlScores(const at::Tensor& headOutputs, const LabelProjector& projector,
                      const std::vector<int>& gold) {
  if (headOutputs.dim() != 4) fail("TR/TL: head outputs must be [prompts, layers, heads, d_model]");
  const int64_t n = headOutputs.size(0), d = headOutputs.size(3);
  if (static_cast<int64_t>(gold.size()) != n)
    fail("TR/TL: ", gold.size(), " gold labels for ", n, " prompts");
  if (n == 0) fail("TR/TL: no prompts");
  const int64_t L = headOutputs.size(1), H = headOutputs.size(2);
  const at::Tensor idx = at::tensor(std::vector<int64_t>(gold.begin(), gold.end()), at::kLong);  // [n]
  const at::Tensor dirs =
      projector.tlDirections().index_select(0, idx).view({n, 1, d});  // [n, 1, d_model] d_{y*}
  at::Tensor tr = at::empty({L, H}, at::kDouble), tl = at::empty({L, H}, at::kDouble);  // [layers, heads]
  // One layer at a time, so the float64 copies stay [n, heads, d_model] (the whole [n, layers, heads,
  // d_model] in float64 is gigabytes for an 8B model).
  for (int64_t l = 0; l < L; ++l) {
    const at::Tensor pa = projector.project(headOutputs.select(1, l));  // [n, heads, d_model] P a
    const at::Tensor norm = pa.norm(2, -1);                             // [n, heads] ‖P a‖
    // ⟨a, d⟩ = ⟨P a, d⟩ because d lies in the label subspace; a head writing nothing there scores 0.
    const at::Tensor dot = (pa * dirs).sum(-1);  // [n, heads]
    const at::Tensor ratio =
        at::where(norm > 0, dot / norm.clamp_min(1e-300), at::zeros_like(dot));  // [n, heads]
    tr[l].copy_(norm.mean(0));
    tl[l].copy_(ratio.mean(0));
  }
  return {toMatrix(tr), toMatrix(tl)};
}

SubspaceCurves subspaceCurves(const at::Tensor& residuals, const LabelProjector& projector,
                              const std::vector<int>& gold) {
  if (residuals.dim() != 3) fail("subspace curves: residuals must be [prompts, layers, d_model]");
  const int64_t n = residuals.size(0), d = residuals.size(2);
  if (static_cast<int64_t>(gold.size()) != n)
    fail("subspace curves: ", gold.size(), " gold labels for ", n, " prompts");
  const at::Tensor h = residuals.to(at::kCPU, at::kDouble);  // [n, layers, d_model]
  const at::Tensor align = projector.projectedNorm(h) / h.norm(2, -1).clamp_min(1e-300);  // [n, layers]
  const at::Tensor idx = at::tensor(std::vector<int64_t>(gold.begin(), gold.end()), at::kLong);  // [n]
  const at::Tensor dirs = projector.tlDirections().index_select(0, idx);  // [n, d_model]
  const at::Tensor diff = (h * dirs.view({n, 1, d})).sum(-1);             // [n, layers]
  return {toVector(align.mean(0)), toVector(diff.mean(0))};
}

LabelProjector taskProjector(const Transformer& model, const IclTask& task, const std::string& method) {
  if (!task.classification())
    fail(method, ": task ", task.spec.dataset,
         " is not a classification task; the label subspace needs a label set (e.g. toy:category_label)");
  if (task.label_tokens.size() < 2)
    fail(method, ": task ", task.spec.dataset, " has ", task.label_tokens.size(),
         " label tokens, need at least 2");
  return LabelProjector(unembedRows(model, task.label_tokens));
}

Provenance iclProvenance(const std::string& method, const AnalysisContext& ctx, const IclTask& task,
                         const nlohmann::json& options) {
  Provenance p = makeProvenance(method, ctx, task.spec.dataset, task.spec.seed,
                                static_cast<int>(task.icl.size()), options);
  p.options["task"] = taskSpecToJson(task.spec);
  p.options["label_tokens"] = task.label_tokens;
  return p;
}

AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const TslaOptions& opts, const AnalysisContext& ctx) {
  TaskSpec spec = task.spec;
  spec.seed = task.spec.seed + 1;  // held-out prompts: same dataset and labels, other queries and demos
  const IclTask evalTask = buildIclTask(tok, spec, task.dataset);
  return runTsla(model, task, evalTask, opts, ctx);
}

AnalysisOutput runTsla(const Transformer& model, const IclTask& task, const IclTask& evalTask,
                       const TslaOptions& opts, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  if (opts.ablation != "zero" && opts.ablation != "mean" && opts.ablation != "both")
    fail("tsla: ablation must be zero, mean or both, got '", opts.ablation, "'");
  if (!(opts.top_percent > 0 && opts.top_percent <= 100))
    fail("tsla: top percent must be in (0, 100], got ", opts.top_percent);
  if (opts.steer_layer < -1 || opts.steer_layer >= L)
    fail("tsla: steering layer ", opts.steer_layer, " outside 0..", L - 1, " (or -1 for n_layers / 2)");
  const int steerLayer = opts.steer_layer >= 0 ? opts.steer_layer : L / 2;
  if (!std::isfinite(opts.steer_scale))
    fail("tsla: steering scale ", opts.steer_scale, " is not a finite number");
  if (task.icl.empty() || evalTask.icl.empty()) fail("tsla: empty prompt set");
  const LabelProjector projector = taskProjector(model, task, "tsla");
  if (evalTask.label_tokens != task.label_tokens)
    fail("tsla: the held-out task has other label tokens than the analysed task");
  at::NoGradGuard noGrad;

  nlohmann::json options = tslaOptionTable().write(opts);
  options["final_norm"] = false;
  options["eval_seed"] = evalTask.spec.seed;
  options["eval_n_prompts"] = evalTask.icl.size();
  const Provenance prov = iclProvenance("tsla", ctx, task, options);
  AnalysisOutput out;
  out.run.id = ctx.runId("tsla");
  out.run.method = "tsla";
  out.run.options = prov.options;

  // 1. Head outputs at N and the TR / TL grids.
  const std::vector<int> gold = goldLabelIndices(task.icl, task.label_tokens);
  const at::Tensor a =
      headOutputsAtLast(model, tokenSeqs(task.icl), {},
                        subContext(ctx, 0.0, 0.1, "head outputs"));  // [n, layers, heads, d_model]
  const TrTlScores scores = trTlScores(a, projector, gold);
  HeadGrid tr{"tsla.tr", "Task recognition ‖P a‖", "norm", scores.tr, prov};
  HeadGrid tl{"tsla.tl", "Task learning ⟨a, W_U[y*] − mean W_U[y']⟩ / ‖P a‖", "logit / norm", scores.tl,
              prov};

  // 2. Head sets: top k by TR, by TL, by prefix matching; random k outside the TR and TL sets.
  const int k = topPercentCount(L * H, opts.top_percent);
  const std::vector<HeadRef> trTop = topHeads(tr, k), tlTop = topHeads(tl, k);
  InductionScoreOptions io;
  io.span = opts.induction_span;
  io.n_sequences = opts.induction_sequences;
  io.seed = opts.random_seed;
  io.bos = c.bos_token_id;
  InductionScores ind = inductionScores(model, io, subContext(ctx, 0.1, 0.15, "induction heads"));
  ind.induction.id = "tsla.induction";
  ind.induction.name = "Induction (prefix matching) score";
  ind.induction.unit = "attention";
  ind.induction.provenance = prov;
  const std::vector<HeadRef> indTop = topHeads(ind.induction, k);
  std::set<HeadRef> chosen(trTop.begin(), trTop.end());
  chosen.insert(tlTop.begin(), tlTop.end());
  const std::vector<HeadRef> randTop = randomHeads(L, H, k, chosen, opts.random_seed);
  const std::vector<std::pair<std::string, const std::vector<HeadRef>*>> sets = {
      {"tr", &trTop}, {"tl", &tlTop}, {"induction", &indTop}, {"random", &randTop}};

  // 3. Ablation on the held-out prompts.
  IclEvalOptions eo;
  eo.batch = opts.batch;
  eo.label_tokens = task.label_tokens;
  const IclEval base = evaluateIcl(model, evalTask.icl, eo, subContext(ctx, 0.15, 0.2, "baseline"));
  std::vector<std::string> modes;
  if (opts.ablation != "mean") modes.push_back("zero");
  if (opts.ablation != "zero") modes.push_back("mean");
  at::Tensor meanZ;  // [layers, heads, d_head] mean z at N over the analysed prompts
  if (opts.ablation != "zero")
    meanZ = hs::meanZ(model, tokenSeqs(task.icl), ZMean::LastPosition, subContext(ctx, 0.2, 0.25, "mean z"));
  Table ablation{"tsla.ablation", "Accuracy and TR ratio with head sets ablated", {}, {}, prov};
  ablation.columns = {"heads", "mode", "n_heads", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  ablation.rows.push_back(
      {"baseline", "none", 0, doubleToJson(base.accuracy), doubleToJson(base.tr_ratio), 0.0, 0.0});
  nlohmann::json ablSummary = nlohmann::json::object();
  const double nAbl = static_cast<double>(modes.size() * sets.size());
  int done = 0;
  for (const std::string& mode : modes)
    for (const auto& [name, heads] : sets) {
      if (heads->empty()) continue;  // a model too small for a disjoint random set
      eo.interventions = mode == "mean" ? meanHeads(*heads, meanZ) : zeroHeads(*heads);
      const IclEval e =
          evaluateIcl(model, evalTask.icl, eo,
                      subContext(ctx, 0.25 + 0.35 * done / nAbl, 0.25 + 0.35 * (done + 1) / nAbl,
                                 "ablate " + name + " (" + mode + ")"));
      ++done;
      ablation.rows.push_back({name, mode, static_cast<int>(heads->size()), doubleToJson(e.accuracy),
                               doubleToJson(e.tr_ratio), doubleToJson(e.accuracy - base.accuracy),
                               doubleToJson(e.tr_ratio - base.tr_ratio)});
      ablSummary[mode][name] = evalJson(e);
    }

  // 4. Steering zero-shot prompts with each set's summed mean output, at N of the residual entering
  //    layer steerLayer.
  const at::Tensor meanA = a.mean(0);  // [layers, heads, d_model]
  Table steering{"tsla.steering", "Zero-shot accuracy and TR ratio with steering vectors", {}, {}, prov};
  steering.columns = {"vector", "layer", "norm", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  eo.interventions.clear();
  const IclEval zs = evaluateIcl(model, evalTask.zero_shot, eo, subContext(ctx, 0.6, 0.65, "zero-shot"));
  steering.rows.push_back(
      {"none", steerLayer, 0.0, doubleToJson(zs.accuracy), doubleToJson(zs.tr_ratio), 0.0, 0.0});
  nlohmann::json steerSummary = {{"none", evalJson(zs)}};
  done = 0;
  for (const auto& [name, heads] : sets) {
    if (name == "induction" || heads->empty()) continue;
    const at::Tensor v = headSetVector(meanA, *heads);  // [d_model]
    out.addTensor("steering_" + name, v);
    eo.interventions = {
        addToResidual(residPre(steerLayer), v.to(model.device(), model.dtype()), {-1}, opts.steer_scale)};
    const IclEval e = evaluateIcl(model, evalTask.zero_shot, eo,
                                  subContext(ctx, 0.65 + 0.05 * done, 0.7 + 0.05 * done, "steer " + name));
    ++done;
    steering.rows.push_back({name, steerLayer, v.norm().item<double>(), doubleToJson(e.accuracy),
                             doubleToJson(e.tr_ratio), doubleToJson(e.accuracy - zs.accuracy),
                             doubleToJson(e.tr_ratio - zs.tr_ratio)});
    steerSummary[name] = evalJson(e);
  }

  // 5. Per-layer geometry of the last-position residual, with and without the TR / TL heads.
  Curve align{"tsla.alignment", "Label-subspace alignment ‖P h‖/‖h‖", "layer", "alignment", {}, {}, prov};
  Curve diff{
      "tsla.logit_diff", "Logit difference ⟨h, W_U[y*] − mean W_U[y']⟩", "layer", "logit diff", {}, {}, prov};
  for (int l = 0; l < L; ++l)
    align.x.push_back(l), diff.x.push_back(l);
  const std::vector<std::pair<std::string, const std::vector<HeadRef>*>> variants = {
      {"baseline", nullptr}, {"without_tr", &trTop}, {"without_tl", &tlTop}};
  done = 0;
  for (const auto& [name, heads] : variants) {
    const at::Tensor h = captureAtLast(
        model, tokenSeqs(task.icl), residPost, heads ? zeroHeads(*heads) : std::vector<Intervention>{},
        subContext(ctx, 0.75 + 0.07 * done, 0.82 + 0.07 * done, "residuals " + name));  // [n, L, d]
    ++done;
    const SubspaceCurves sc = subspaceCurves(h, projector, gold);
    align.series.push_back({name, sc.alignment});
    diff.series.push_back({name, sc.logit_diff});
  }

  // 6. Overlap of the rankings.
  Table overlap{"tsla.overlap", "Agreement of TR, TL and induction head rankings", {}, {}, prov};
  overlap.columns = {"a", "b", "k", "jaccard", "kendall_tau", "spearman_rho"};
  const std::vector<std::pair<const HeadGrid*, const HeadGrid*>> pairs = {
      {&tr, &tl}, {&tr, &ind.induction}, {&tl, &ind.induction}};
  for (const auto& [x, y] : pairs)
    overlap.rows.push_back({x->id, y->id, k, doubleToJson(jaccardAtK(*x, *y, k)),
                            doubleToJson(kendallTauB(*x, *y)), doubleToJson(spearmanRho(*x, *y))});

  out.addTensor("head_outputs_mean", meanA);
  out.run.grids = {tr, tl, ind.induction};
  out.run.curves = {align, diff};
  out.run.tables = {ablation, steering, overlap};
  out.run.summary = {{"n_prompts", task.icl.size()},
                     {"n_eval_prompts", evalTask.icl.size()},
                     {"n_heads_selected", k},
                     {"baseline", evalJson(base)},
                     {"ablation", ablSummary},
                     {"steering", steerSummary},
                     {"steer_layer", steerLayer},
                     {"top_tr", trTop},
                     {"top_tl", tlTop},
                     {"top_induction", indTop},
                     {"random", randTop},
                     {"induction_copy_accuracy", ind.copy_accuracy}};
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
