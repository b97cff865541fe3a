#include "analysis/methods/geometry.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <Eigen/SVD>

#include "analysis/methods/tsla.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "results/intervals.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {

Eigen::MatrixXd principalCoordinates(const Eigen::MatrixXd& x, Eigen::MatrixXd* directions,
                                     Eigen::Vector2d* explained) {
  const Eigen::MatrixXd centred = x.rowwise() - x.colwise().mean();  // [n, d]
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(centred, Eigen::ComputeThinV);
  const Eigen::VectorXd s = svd.singularValues();
  const double total = s.squaredNorm();
  Eigen::MatrixXd dirs = Eigen::MatrixXd::Zero(2, x.cols());  // [2, d]
  Eigen::Vector2d share = Eigen::Vector2d::Zero();
  for (int i = 0; i < 2 && i < s.size(); ++i) {
    if (s(i) <= 1e-12 * std::max(1.0, s(0))) break;  // the rows span fewer directions
    Eigen::VectorXd v = svd.matrixV().col(i);
    Eigen::Index arg = 0;
    v.cwiseAbs().maxCoeff(&arg);
    if (v(arg) < 0) v = -v;
    dirs.row(i) = v.transpose();
    share(i) = total > 0 ? s(i) * s(i) / total : 0.0;
  }
  if (directions) *directions = dirs;
  if (explained) *explained = share;
  return centred * dirs.transpose();  // [n, 2]
}

const OptionTable<GeometryOptions>& geometryOptionTable() {
  static const OptionTable<GeometryOptions> table =
      OptionTable<GeometryOptions>()
          .add("layer", &GeometryOptions::layer,
               "layer whose residual (after the layer) is projected in 2-D (-1: the layer of maximal "
               "alignment)",
               OptionCheck::atLeast(-1))
          .add("final_norm", &GeometryOptions::final_norm,
               "measure the residual after the model's final norm (what the unembedding reads); off: the raw "
               "residual, as the TSLA paper's formulas and TSLA's own curves");
  return table;
}

MethodInfo geometryMethod() {
  MethodInfo m;
  m.name = "geometry";
  m.title = "Label-subspace geometry of the hidden states";
  m.paper =
      "Yang, Cho, Inoue: Localizing Task Recognition and Task Learning in In-Context Learning (ICLR 2026)";
  m.description =
      "How the last-position hidden state of ICL prompts moves into the label subspace (spanned by the "
      "unembeddings of the label words) layer by layer: its alignment ‖P h‖/‖h‖ and the logit difference of "
      "the correct label against the others, per layer; and at one layer, the prompts' hidden states "
      "projected onto the two principal directions inside the subspace, coloured by their gold label.";
  m.tasks = {TaskKind::Classification};
  m.options = geometryOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Curve, "geometry.alignment", "layer → ‖P h‖/‖h‖",
       "alignment with the label subspace"},
      {OutputSpec::Kind::Curve, "geometry.logit_diff", "layer → logit", "correct label vs the others"},
      {OutputSpec::Kind::Table, "geometry.projection", "x, y",
       "2-D projection of the hidden states at one layer", "Geometry",
       "Last-position states on the task subspace"},
      {OutputSpec::Kind::Tensor, "coordinates", "", "[prompts, 2] the projection"},
      {OutputSpec::Kind::Tensor, "directions", "", "[2, d_model] the principal directions"},
  };
  m.gui.at_start = true;
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    ctx.report(0.0, "building the prompts of " + in.task.dataset);
    return runGeometry(in.model, *in.tokenizer, buildIclTask(*in.tokenizer, in.task),
                       geometryOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runGeometry(const Transformer& model, const Tokenizer& /*tok*/, const IclTask& task,
                           const GeometryOptions& opts, const AnalysisContext& ctx) {
  const int L = model.config().n_layers;
  if (opts.layer < -1 || opts.layer >= L)
    fail("geometry: layer ", opts.layer, " outside 0..", L - 1,
         " (or -1 for the layer of maximal alignment)");
  if (task.icl.empty()) fail("geometry: empty prompt set");
  const LabelProjector projector = taskProjector(model, task, "geometry");
  at::NoGradGuard noGrad;

  nlohmann::json options = geometryOptionTable().write(opts);
  const Provenance prov = iclProvenance("geometry", ctx, task, options);
  AnalysisOutput out;
  out.run.id = ctx.runId("geometry");
  out.run.method = "geometry";
  out.run.options = prov.options;

  const std::vector<int> gold = goldLabelIndices(task.icl, task.label_tokens);
  const at::Tensor raw =
      captureAtLast(model, tokenSeqs(task.icl), residPost, {}, subContext(ctx, 0.0, 0.9, "residuals"));
  const at::Tensor h =
      opts.final_norm ? finalNormed(model, raw) : raw.to(at::kDouble);  // [n, layers, d_model] float64
  const SubspaceCurves sc = subspaceCurves(h, projector, gold);
  Curve align{"geometry.alignment", "Label-subspace alignment ‖P h‖/‖h‖", "layer", "alignment", {}, {}, prov};
  Curve diff{"geometry.logit_diff",
             "Logit difference ⟨h, W_U[y*] − mean W_U[y']⟩",
             "layer",
             "logit diff",
             {},
             {},
             prov};
  for (int l = 0; l < L; ++l)
    align.x.push_back(l), diff.x.push_back(l);
  align.series.push_back({"baseline", sc.alignment});
  diff.series.push_back({"baseline", sc.logit_diff});
  // 95 % intervals: a bootstrap over the prompts (seeded with the task's seed).
  align.intervals.push_back(bootstrapSeriesInterval("baseline", sc.alignment_per_prompt, task.spec.seed));
  diff.intervals.push_back(bootstrapSeriesInterval("baseline", sc.logit_diff_per_prompt, task.spec.seed));

  int layer = opts.layer;
  if (layer < 0)
    layer =
        static_cast<int>(std::max_element(sc.alignment.begin(), sc.alignment.end()) - sc.alignment.begin());
  const at::Tensor ph = projector.project(h.select(1, layer)).contiguous();  // [n, d_model] P h at `layer`
  const int64_t n = ph.size(0), d = ph.size(1);
  const Eigen::MatrixXd phm =
      Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          ph.data_ptr<double>(), n, d);
  Eigen::MatrixXd dirs;
  Eigen::Vector2d explained;
  const Eigen::MatrixXd xy = principalCoordinates(phm, &dirs, &explained);  // [n, 2]

  Table proj{"geometry.projection",
             "Last-position hidden states in the label subspace (layer " + std::to_string(layer) + ")",
             {"x", "y", "gold_label", "gold_word", "prompt"},
             {},
             prov};
  proj.provenance.options["layer_used"] = layer;
  for (int64_t i = 0; i < n; ++i) {
    const int g = gold[i];
    const std::string word =
        g < static_cast<int>(task.dataset.label_words.size()) ? task.dataset.label_words[g] : "";
    proj.rows.push_back({doubleToJson(xy(i, 0)), doubleToJson(xy(i, 1)), g, word, static_cast<int>(i)});
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor xyRows = xy, dirRows = dirs;
  const at::Tensor coords = at::from_blob(xyRows.data(), {n, 2}, at::kDouble).clone();  // [n, 2]
  const at::Tensor dirT = at::from_blob(dirRows.data(), {2, d}, at::kDouble).clone();   // [2, d_model]
  out.addTensor("coordinates", coords);
  out.addTensor("directions", dirT);

  recordPrompts(out, "icl", task.icl, {task.label_tokens});
  out.run.curves = {align, diff};
  out.run.tables = {proj};
  out.run.summary = {{"layer", layer},
                     {"alignment_at_layer", doubleToJson(sc.alignment[layer])},
                     {"logit_diff_at_layer", doubleToJson(sc.logit_diff[layer])},
                     {"explained_variance", {doubleToJson(explained(0)), doubleToJson(explained(1))}},
                     {"alignment", sc.alignment},
                     {"logit_diff", sc.logit_diff},
                     {"n_prompts", n}};
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
