// The geometry views (docs/methods.md, "Geometry"): per-layer alignment / logit difference and the 2-D
// projection.
// - principalCoordinates on hand-computed point sets: points on a line give (centred position, 0) and
//   explained variance (1, 0); a cross (±2, 0), (0, ±1) gives the axes with shares 0.8 / 0.2; signs fixed.
// - On the toy model (24 prompts): curves have one finite point per layer, alignment in [0, 1]; the
//   last-layer values equal a direct recomputation from captured hook_resid_post of single unpadded
//   prompts (label subspace by QR of the raw W_U rows, TL direction by hand): by default of the raw
//   residual (the TSLA paper's formula, as TSLA's own curves), with final_norm of RMSNorm(h)·g; the
//   default is TSLA's and the paper's (final_norm off), and every layer of the default curves equals
//   TSLA's subspaceCurves on the raw residual; the default layer is the one of maximal
//   alignment, --layer is honoured and an out-of-range layer refused; the projection table has one row
//   per prompt with the right gold label index and word, matches the coordinates tensor, is centred;
//   the two directions are orthonormal and lie in the label subspace.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <QtTest>

#include <cmath>

#include "analysis/methods/geometry.h"
#include "analysis/methods/tsla.h"
#include "analysis/toolkit/label_projector.h"
#include "analysis/toolkit/prompt_batches.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "util/error.h"

using hs::test::findCurve;

class TestGeometry : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;
  std::unique_ptr<hs::IclTask> task_;
  hs::AnalysisOutput run_;

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);
    toy_ = hs::loadModel("toy");
    QVERIFY(toy_.tokenizer);
    hs::TaskSpec spec;
    spec.n_prompts = 24;
    task_ = std::make_unique<hs::IclTask>(hs::buildIclTask(*toy_.tokenizer, spec));
    hs::GeometryOptions o;
    run_ = hs::runGeometry(*toy_.model, *toy_.tokenizer, *task_, o, hs::test::modelContext(toy_.path));
    qInfo("geometry summary: %s", run_.run.summary.dump().c_str());
  }

  void principalCoordinatesHandComputed() {
    Eigen::MatrixXd line(3, 3);
    line << 1, 0, 0, 3, 0, 0, 2, 0, 0;
    Eigen::MatrixXd dirs;
    Eigen::Vector2d share;
    Eigen::MatrixXd xy = hs::principalCoordinates(line, &dirs, &share);
    Eigen::MatrixXd expect(3, 2);
    expect << -1, 0, 1, 0, 0, 0;
    QVERIFY((xy - expect).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY(std::abs(share(0) - 1) < 1e-12 && share(1) == 0);
    QVERIFY(dirs.row(1).isZero());

    Eigen::MatrixXd cross(4, 2);
    cross << 2, 0, -2, 0, 0, 1, 0, -1;
    xy = hs::principalCoordinates(cross, &dirs, &share);
    expect.resize(4, 2);
    expect << 2, 0, -2, 0, 0, 1, 0, -1;
    QVERIFY((xy - expect).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY(std::abs(share(0) - 0.8) < 1e-12 && std::abs(share(1) - 0.2) < 1e-12);
    // Mirrored input gives the same directions (sign convention), mirrored coordinates.
    const Eigen::MatrixXd flipped = hs::principalCoordinates(-cross);
    QVERIFY((flipped + expect).cwiseAbs().maxCoeff() < 1e-12);
  }

  // The last layer's alignment and logit difference recomputed prompt by prompt from a plain forward:
  // h = hook_resid_post(L − 1) at the last position, or RMSNorm(h) ⊙ g with finalNorm; P from the QR of the
  // raw W_U rows of the labels. Returns {mean alignment, mean logit difference}.
  std::pair<double, double> lastLayerDirect(bool finalNorm) const {
    const int L = toy_.model->config().n_layers;
    const at::Tensor w = hs::unembedRows(*toy_.model, task_->label_tokens).to(at::kDouble);  // [labels, d]
    const at::Tensor q = std::get<0>(at::linalg_qr(w.t(), "reduced"));                       // [d, labels]
    const std::vector<int> gold = hs::goldLabelIndices(task_->icl, task_->label_tokens);
    const int64_t nl = w.size(0);
    const at::Tensor g = toy_.model->weights().final_norm_w.to(at::kDouble);  // [d]
    double align = 0, diff = 0;
    at::NoGradGuard noGrad;
    for (size_t i = 0; i < task_->icl.size(); ++i) {
      const hs::Prompt& pr = task_->icl[i];
      hs::RunRequest req;
      req.tokens = at::tensor(std::vector<int64_t>(pr.ids.begin(), pr.ids.end()), at::kLong).view({1, -1});
      req.capture = {hs::residPost(L - 1)};
      const at::Tensor raw =
          toy_.model->run(req).cache.at(hs::residPost(L - 1))[0][pr.last].to(at::kDouble);  // [d]
      const at::Tensor h =
          finalNorm ? raw * at::rsqrt(raw.pow(2).mean() + toy_.model->config().norm_eps) * g : raw;  // [d]
      align += at::matmul(q.t(), h).norm().item<double>() / h.norm().item<double>();
      const at::Tensor d = w[gold[i]] - (w.sum(0) - w[gold[i]]) / double(nl - 1);  // [d]
      diff += at::dot(h, d).item<double>();
    }
    const double n = double(task_->icl.size());
    return {align / n, diff / n};
  }

  static void checkLastLayer(const hs::AnalysisRun& r, std::pair<double, double> direct) {
    const double al = findCurve(r, "geometry.alignment")->series[0].second.back();
    const double ld = findCurve(r, "geometry.logit_diff")->series[0].second.back();
    QVERIFY2(std::abs(direct.first - al) < 1e-4,
             qPrintable(QString("alignment %1 vs %2").arg(direct.first).arg(al)));
    QVERIFY2(std::abs(direct.second - ld) < 1e-3 * std::max(1.0, std::abs(direct.second)),
             qPrintable(QString("logit diff %1 vs %2").arg(direct.second).arg(ld)));
  }

  void curvesMatchDirectRecomputation() {
    const hs::Curve* al = findCurve(run_.run, "geometry.alignment");
    const hs::Curve* ld = findCurve(run_.run, "geometry.logit_diff");
    QVERIFY(al && ld);
    const int L = toy_.model->config().n_layers;
    for (const hs::Curve* c : {al, ld}) {
      QVERIFY(c->x.size() == size_t(L));
      QVERIFY(c->series.size() == 1 && c->series[0].first == "baseline");
      for (double v : c->series[0].second)
        QVERIFY(std::isfinite(v));
    }
    for (double v : al->series[0].second)
      QVERIFY(v >= 0 && v <= 1 + 1e-9);

    // The default: the raw residual (what the paper's formula reads; final_norm off).
    QVERIFY(!run_.run.options.at("final_norm").get<bool>());
    checkLastLayer(run_.run, lastLayerDirect(false));
    // final_norm: the curves read what the unembedding reads, RMSNorm(h) ⊙ g.
    hs::GeometryOptions o;
    o.final_norm = true;
    const hs::AnalysisOutput normed = hs::runGeometry(*toy_.model, *toy_.tokenizer, *task_, o);
    QVERIFY(normed.run.options.at("final_norm").get<bool>());
    checkLastLayer(normed.run, lastLayerDirect(true));
    qInfo("last-layer logit difference: raw %.3f, final-normed %.3f",
          findCurve(run_.run, "geometry.logit_diff")->series[0].second.back(),
          findCurve(normed.run, "geometry.logit_diff")->series[0].second.back());
  }

  // Geometry's curves are TSLA's subspace curves: the same default (off, as in the paper) and, with it, the
  // same numbers at every layer.
  void defaultFollowsThePaperAndTsla() {
    QVERIFY(!hs::GeometryOptions{}.final_norm);
    QCOMPARE(hs::GeometryOptions{}.final_norm, hs::TslaOptions{}.final_norm);
    QVERIFY(!hs::geometryMethod().option("final_norm")->default_value.get<bool>());
    const int L = toy_.model->config().n_layers;
    at::NoGradGuard noGrad;
    const at::Tensor raw = hs::captureAtLast(*toy_.model, hs::tokenSeqs(task_->icl), hs::residPost, {});
    const hs::SubspaceCurves sc =
        hs::subspaceCurves(raw.to(at::kDouble), hs::taskProjector(*toy_.model, *task_, "test"),
                           hs::goldLabelIndices(task_->icl, task_->label_tokens));
    const auto& al = findCurve(run_.run, "geometry.alignment")->series[0].second;
    const auto& ld = findCurve(run_.run, "geometry.logit_diff")->series[0].second;
    for (int l = 0; l < L; ++l) {
      QVERIFY(std::abs(al[size_t(l)] - sc.alignment[size_t(l)]) < 1e-9);
      QVERIFY(std::abs(ld[size_t(l)] - sc.logit_diff[size_t(l)]) <
              1e-9 * std::max(1.0, std::abs(ld[size_t(l)])));
    }
  }

  void projection() {
    const hs::Curve* al = findCurve(run_.run, "geometry.alignment");
    const auto& y = al->series[0].second;
    const int best = int(std::max_element(y.begin(), y.end()) - y.begin());
    QCOMPARE(run_.run.summary.at("layer").get<int>(), best);
    QVERIFY(!run_.run.tables.empty());
    const hs::Table& t = run_.run.tables[0];
    QCOMPARE(t.id, std::string("geometry.projection"));
    QVERIFY(t.columns == (std::vector<std::string>{"x", "y", "gold_label", "gold_word", "prompt"}));
    QCOMPARE(t.rows.size(), task_->icl.size());
    const at::Tensor coords = run_.tensors.at("geometry-1/coordinates");  // [n, 2]
    const at::Tensor dirs = run_.tensors.at("geometry-1/directions");     // [2, d]
    const std::vector<int> gold = hs::goldLabelIndices(task_->icl, task_->label_tokens);
    double sx = 0, sy = 0;
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const auto& row = t.rows[i];
      QCOMPARE(row[2].get<int>(), gold[i]);
      QCOMPARE(row[3].get<std::string>(), task_->dataset.label_words[size_t(gold[i])]);
      QCOMPARE(row[4].get<int>(), int(i));
      QCOMPARE(row[0].get<double>(), coords[int64_t(i)][0].item<double>());
      QCOMPARE(row[1].get<double>(), coords[int64_t(i)][1].item<double>());
      sx += row[0].get<double>(), sy += row[1].get<double>();
    }
    QVERIFY(std::abs(sx) < 1e-6 && std::abs(sy) < 1e-6);
    // Orthonormal directions inside the label subspace.
    const hs::LabelProjector p(hs::unembedRows(*toy_.model, task_->label_tokens));
    QVERIFY((p.project(dirs) - dirs).abs().max().item<double>() < 1e-9);
    QVERIFY((at::matmul(dirs, dirs.t()) - at::eye(2, at::kDouble)).abs().max().item<double>() < 1e-9);
  }

  void layerOption() {
    hs::GeometryOptions o;
    o.layer = 1;
    const hs::AnalysisOutput r = hs::runGeometry(*toy_.model, *toy_.tokenizer, *task_, o);
    QCOMPARE(r.run.summary.at("layer").get<int>(), 1);
    QCOMPARE(r.run.tables[0].provenance.options.at("layer_used").get<int>(), 1);
    // The curves do not depend on the projected layer.
    QVERIFY(r.run.curves[0].series == run_.run.curves[0].series);
    o.layer = 4;
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runGeometry(*toy_.model, *toy_.tokenizer, *task_, o));
  }
};

QTEST_GUILESS_MAIN(TestGeometry)
#include "test_geometry.moc"
