// TSLA (DESIGN 5.1): the label projector, TR/TL scores and the full run.
// - Projector on hand-computed cases: rows e1, e2 in R³ project (1,2,3) to (1,2,0); collinear or
//   redundant label rows (rank-deficient Gram matrix) still give the projection onto their span; the
//   TL direction is W[y*] − mean of the other rows; batched inputs keep their leading shape.
// - TR/TL and the per-layer curves on a hand-computed [2 prompts, 1 layer, 2 heads, d=3] case,
//   including a head that writes nothing into the label subspace (TR = TL = 0).
// - The final norm: folded rows read the logits (RMSNorm and LayerNorm, hand-derived); with final_norm
//   the last layer's logit difference is the model's own, on the raw residual it is not.
// - On the toy model (24 prompts, 8 labels): the TR grid equals a direct recomputation from captured
//   hook_z of single unpadded prompts, W_O by hand and an orthonormal basis of the folded label rows (QR);
//   grids are finite 4×8 with |TL| ≤ max ‖d_y‖; head sets have the requested size and the random set
//   avoids the TR/TL sets; the held-out prompts are the spec's next prompts with other queries; induction
//   scores use the toy world's syllables; mean ablation uses the toy world's neutral text; the ablation
//   table has every set × mode and zero-ablating the top TR heads lowers the TR ratio at least as much as
//   ablating random heads (a property of a trained model); the curves over k agree with the table and a
//   direct evaluation; the perturbation prompts keep their tokens (shuffled inputs) or use number labels;
//   attention shares of a padded batch equal single prompts'; curves have one point per layer, alignment
//   in [0, 1], and ablating the TR heads leaves the layers below them unchanged but changes the curve.
// - An open-ended task runs with per-prompt label sets.
// - The run written as a session (saveSession) reopens with identical grids, curves, tables and tensors;
//   the CLI (when built) writes a session whose grids equal the in-process run.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "../engine/engine_fixtures.h"
#include "analysis/head_toolkit.h"
#include "analysis/icl_eval.h"
#include "analysis/label_projector.h"
#include "analysis/tsla.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/toy/world.h"
#include "test_paths.h"
#include "util/error.h"

using hs::test::findCurve;
using hs::test::findGrid;
using hs::test::findTable;

namespace {

at::Tensor vec(std::vector<double> v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kDouble));
}

double maxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// The ablation row (heads, mode) → (accuracy, tr_ratio).
std::pair<double, double> ablationRow(const hs::Table& t, const std::string& heads, const std::string& mode) {
  for (const auto& row : t.rows)
    if (row[0] == heads && row[1] == mode) return {row[3].get<double>(), row[4].get<double>()};
  throw std::runtime_error("no ablation row " + heads + "/" + mode);
}

}  // namespace

class TestTsla : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;
  std::unique_ptr<hs::IclTask> task_;
  hs::AnalysisOutput run_;
  hs::TslaOptions opts_;

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);
    toy_ = hs::loadModel("toy");
    QVERIFY(toy_.tokenizer);
    hs::TaskSpec spec;  // toy:category_label, 8 shots
    spec.n_prompts = 24;
    task_ = std::make_unique<hs::IclTask>(hs::buildIclTask(*toy_.tokenizer, spec));
    opts_.top_percent = 12.5;  // 4 of the toy's 32 heads
    QElapsedTimer t;
    t.start();
    run_ = hs::runTsla(*toy_.model, *toy_.tokenizer, *task_, opts_, hs::test::modelContext(toy_.path));
    qInfo("toy tsla run: %lld ms", static_cast<long long>(t.elapsed()));
    qInfo("summary: %s", run_.run.summary.dump().c_str());
    for (const auto* id : {"tsla.ablation", "tsla.steering", "tsla.overlap"}) {
      const hs::Table* tab = findTable(run_.run, id);
      if (!tab) continue;
      for (const auto& row : tab->rows)
        qInfo("%s %s", id, nlohmann::json(row).dump().c_str());
    }
    for (const auto* id : {"tsla.alignment", "tsla.logit_diff"})
      if (const hs::Curve* c = findCurve(run_.run, id))
        for (const auto& [name, y] : c->series)
          qInfo("%s %s %s", id, name.c_str(), nlohmann::json(y).dump().c_str());
  }

  void projectorHandComputed() {
    // Rows e1, e2: P (1,2,3) = (1,2,0).
    const hs::LabelProjector p(at::stack({vec({1, 0, 0}), vec({0, 1, 0})}));
    QVERIFY(maxDiff(p.project(vec({1, 2, 3})), vec({1, 2, 0})) < 1e-12);
    QCOMPARE(p.projectedNorm(vec({1, 2, 3})).item<double>(), std::sqrt(5.0));
    // Collinear rows e1, 2 e1 (G = [[1,2],[2,4]] singular): projection onto span(e1).
    const hs::LabelProjector c(at::stack({vec({1, 0, 0}), vec({2, 0, 0})}));
    QVERIFY(maxDiff(c.project(vec({1, 2, 3})), vec({1, 0, 0})) < 1e-12);
    // Three rows spanning the plane z = 0 (rank 2 of 3), unnormalised.
    const hs::LabelProjector r(at::stack({vec({1, 1, 0}), vec({1, -1, 0}), vec({2, 0, 0})}));
    QVERIFY(maxDiff(r.project(vec({1, 2, 3})), vec({1, 2, 0})) < 1e-12);
    // A tilted line: span((1,1,0)) takes (1,2,3) to (1.5,1.5,0).
    const hs::LabelProjector t(vec({3, 3, 0}).view({1, 3}));
    QVERIFY(maxDiff(t.project(vec({1, 2, 3})), vec({1.5, 1.5, 0})) < 1e-12);
    // Batched: [2, 2, 3] in, [2, 2, 3] out, each vector projected.
    const at::Tensor batch = at::stack({at::stack({vec({1, 2, 3}), vec({0, 0, 5})}),
                                        at::stack({vec({-1, 4, 0}), vec({7, 0, 1})})});  // [2, 2, 3]
    const at::Tensor pb = p.project(batch);
    QVERIFY(pb.sizes().vec() == (std::vector<int64_t>{2, 2, 3}));
    QVERIFY(maxDiff(pb[1][1], vec({7, 0, 0})) < 1e-12);
    QVERIFY(maxDiff(pb[0][1], vec({0, 0, 0})) < 1e-12);
    // TL direction: W[y*] − mean of the others.
    const hs::LabelProjector three(at::stack({vec({1, 0, 0}), vec({0, 1, 0}), vec({0, 0, 1})}));
    QVERIFY(maxDiff(three.tlDirection(0), vec({1, -0.5, -0.5})) < 1e-12);
    QVERIFY(maxDiff(three.tlDirections()[2], vec({-0.5, -0.5, 1})) < 1e-12);
    QVERIFY_THROWS_EXCEPTION(hs::Error, three.tlDirection(3));
    QVERIFY_THROWS_EXCEPTION(hs::Error, p.project(vec({1, 2})));
  }

  void trTlHandComputed() {
    // Labels e1, e2 in R³; 2 prompts (gold 0, then 1), 1 layer, 2 heads.
    const hs::LabelProjector p(at::stack({vec({1, 0, 0}), vec({0, 1, 0})}));
    at::Tensor a = at::zeros({2, 1, 2, 3}, at::kDouble);  // [n, layers, heads, d_model]
    a[0][0][0] = vec({3, 4, 5});  // P a = (3,4,0), ‖·‖ = 5, d_0 = (1,-1,0): ⟨a,d⟩ = -1
    a[1][0][0] = vec({0, 2, 7});  // P a = (0,2,0), ‖·‖ = 2, d_1 = (-1,1,0): ⟨a,d⟩ = 2
    a[0][0][1] = vec({0, 0, 9});  // writes only outside the label plane
    a[1][0][1] = vec({0, 0, -1});
    const hs::TrTlScores s = hs::trTlScores(a, p, {0, 1});
    QVERIFY(s.tr.rows() == 1 && s.tr.cols() == 2);
    QVERIFY(std::abs(s.tr(0, 0) - 3.5) < 1e-12);  // (5 + 2) / 2
    QVERIFY(std::abs(s.tl(0, 0) - 0.4) < 1e-12);  // (-1/5 + 2/2) / 2
    QCOMPARE(s.tr(0, 1), 0.0);
    QCOMPARE(s.tl(0, 1), 0.0);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::trTlScores(a, p, {0}));  // gold count mismatch

    // Curves: h after layer 0 = (3,0,4): alignment 3/5, ⟨h, d_0⟩ = 3; after layer 1 = (0,1,0): 1 and -1.
    at::Tensor h = at::zeros({1, 2, 3}, at::kDouble);  // [n, layers, d_model]
    h[0][0] = vec({3, 0, 4});
    h[0][1] = vec({0, 1, 0});
    const hs::SubspaceCurves c = hs::subspaceCurves(h, p, {0});
    QVERIFY(c.alignment.size() == 2);
    QVERIFY(std::abs(c.alignment[0] - 0.6) < 1e-12 && std::abs(c.alignment[1] - 1.0) < 1e-12);
    QVERIFY(std::abs(c.logit_diff[0] - 3.0) < 1e-12 && std::abs(c.logit_diff[1] + 1.0) < 1e-12);
  }

  void goldLabels() {
    const std::vector<int> gold = hs::goldLabelIndices(task_->icl, task_->label_tokens);
    QCOMPARE(gold.size(), task_->icl.size());
    for (size_t i = 0; i < gold.size(); ++i)
      QCOMPARE(task_->label_tokens[static_cast<size_t>(gold[i])], task_->icl[i].answer_token);
    std::vector<hs::Prompt> bad = {task_->icl[0]};
    bad[0].answer_token = -5;
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::goldLabelIndices(bad, task_->label_tokens));
  }

  // TR(l, k) from scratch: each prompt alone (no padding), hook_z captured, W_O sliced by hand, and the
  // label subspace through an orthonormal basis (QR of (W_U[Y] diag g)ᵀ, g the final norm's weight: the
  // default final_norm folds it) instead of the Gram pseudo-inverse.
  void trEqualsDirectRecomputation() {
    const hs::HeadGrid* tr = findGrid(run_.run, "tsla.tr");
    QVERIFY(tr);
    QVERIFY(run_.run.options.at("final_norm").get<bool>());
    const auto& c = toy_.model->config();
    const at::Tensor g = toy_.model->weights().final_norm_w.to(at::kDouble);  // [d]
    const at::Tensor wt =
        (hs::unembedRows(*toy_.model, task_->label_tokens).to(at::kDouble) * g).t();  // [d, labels]
    const at::Tensor q = std::get<0>(at::linalg_qr(wt, "reduced"));                   // [d, labels]
    const std::vector<hs::HeadRef> heads = {hs::topHeads(*tr, 1)[0], {0, 0}, {c.n_layers - 1, c.n_heads - 1}};
    at::NoGradGuard noGrad;
    for (const hs::HeadRef& h : heads) {
      double sum = 0;
      for (const hs::Prompt& pr : task_->icl) {
        hs::RunRequest req;
        req.tokens = at::tensor(std::vector<int64_t>(pr.ids.begin(), pr.ids.end()), at::kLong).view({1, -1});
        req.capture = {hs::attnZ(h.layer)};
        const at::Tensor z =
            toy_.model->run(req).cache.at(hs::attnZ(h.layer))[0][pr.last][h.head];  // [d_head]
        const at::Tensor wo =
            toy_.model->weights().layers[h.layer].wo.slice(1, h.head * c.d_head,
                                                           (h.head + 1) * c.d_head);  // [d, d_head]
        const at::Tensor a = at::matmul(wo.to(at::kDouble), z.to(at::kDouble));       // [d]
        sum += at::matmul(q.t(), a).norm().item<double>();
      }
      const double direct = sum / static_cast<double>(task_->icl.size());
      const double grid = tr->values(h.layer, h.head);
      if (std::abs(direct - grid) > 1e-4 * std::max(1.0, std::abs(direct)))
        QFAIL(qPrintable(
            QString("TR(%1,%2): grid %3, direct %4").arg(h.layer).arg(h.head).arg(grid).arg(direct)));
    }
  }

  void toyGridsAndSets() {
    const hs::HeadGrid* tr = findGrid(run_.run, "tsla.tr");
    const hs::HeadGrid* tl = findGrid(run_.run, "tsla.tl");
    QVERIFY(tr && tl);
    for (const hs::HeadGrid* g : {tr, tl}) {
      QCOMPARE(g->layers(), 4);
      QCOMPARE(g->heads(), 8);
      QVERIFY(g->values.allFinite());
      QCOMPARE(g->provenance.method, std::string("tsla"));
      QCOMPARE(g->provenance.n_prompts, 24);
      QCOMPARE(g->provenance.options.at("top_percent").get<double>(), 12.5);
      QCOMPARE(g->provenance.options.at("task").at("dataset").get<std::string>(),
               std::string("toy:category_label"));
    }
    QVERIFY(tr->values.minCoeff() >= 0);
    // |TL| ≤ ‖d_{y*}‖ (Cauchy–Schwarz inside the label subspace).
    const hs::LabelProjector p(hs::unembedRows(*toy_.model, task_->label_tokens, true));
    const double maxDir = p.tlDirections().norm(2, -1).max().item<double>();
    QVERIFY(tl->values.cwiseAbs().maxCoeff() <= maxDir + 1e-9);

    const auto& s = run_.run.summary;
    QCOMPARE(s.at("n_heads_selected").get<int>(), 4);
    const auto trTop = s.at("top_tr").get<std::vector<hs::HeadRef>>();
    const auto tlTop = s.at("top_tl").get<std::vector<hs::HeadRef>>();
    const auto rnd = s.at("random").get<std::vector<hs::HeadRef>>();
    QVERIFY(trTop == hs::topHeads(*tr, 4));
    QVERIFY(tlTop == hs::topHeads(*tl, 4));
    QCOMPARE(rnd.size(), size_t(4));
    QCOMPARE(s.at("top_induction").get<std::vector<hs::HeadRef>>().size(), size_t(4));
    for (const hs::HeadRef& h : rnd) {
      QVERIFY(std::find(trTop.begin(), trTop.end(), h) == trTop.end());
      QVERIFY(std::find(tlTop.begin(), tlTop.end(), h) == tlTop.end());
    }
  }

  void ablationTable() {
    const hs::Table* t = findTable(run_.run, "tsla.ablation");
    QVERIFY(t);
    QCOMPARE(t->rows.size(), size_t(1 + 2 * 4));  // baseline + {zero, mean} × {tr, tl, induction, random}
    for (const auto& row : t->rows) {
      QCOMPARE(row.size(), t->columns.size());
      const double acc = row[3].get<double>(), ratio = row[4].get<double>();
      QVERIFY(acc >= 0 && acc <= 1 && ratio >= 0 && ratio <= 1);
      QVERIFY(acc <= ratio + 1e-12);  // a correct answer is a label
    }
    const auto [accBase, ratioBase] = ablationRow(*t, "baseline", "none");
    const auto [accTr, ratioTr] = ablationRow(*t, "tr", "zero");
    const auto [accRnd, ratioRnd] = ablationRow(*t, "random", "zero");
    qInfo("baseline acc %.3f TR %.3f | -TR acc %.3f TR %.3f | -random acc %.3f TR %.3f", accBase, ratioBase,
          accTr, ratioTr, accRnd, ratioRnd);
    QVERIFY2(ratioBase - ratioTr >= ratioBase - ratioRnd - 1e-12,
             "zero-ablating the top TR heads should lower the TR ratio at least as much as random heads");
    // Baseline of the summary and the table agree.
    QCOMPARE(run_.run.summary.at("baseline").at("accuracy").get<double>(), accBase);
  }

  void steeringAndCurves() {
    const hs::Table* st = findTable(run_.run, "tsla.steering");
    QVERIFY(st);
    QCOMPARE(st->rows.size(), size_t(4));  // none, tr, tl, random
    QCOMPARE(st->rows[0][0].get<std::string>(), std::string("none"));
    QVERIFY(st->rows[1][2].get<double>() > 0);  // a TR vector exists
    QVERIFY(run_.tensors.at("tsla-1/steering_tr").sizes().vec() == (std::vector<int64_t>{128}));
    QVERIFY(run_.tensors.at("tsla-1/head_outputs_mean").sizes().vec() == (std::vector<int64_t>{4, 8, 128}));

    for (const char* id : {"tsla.alignment", "tsla.logit_diff"}) {
      const hs::Curve* c = findCurve(run_.run, id);
      QVERIFY(c);
      QVERIFY(c->x == (std::vector<double>{0, 1, 2, 3}));
      QCOMPARE(c->series.size(), size_t(3));
      QCOMPARE(c->series[0].first, std::string("baseline"));
      for (const auto& [name, y] : c->series) {
        QCOMPARE(y.size(), size_t(4));
        for (double v : y)
          QVERIFY(std::isfinite(v));
      }
    }
    const hs::Curve* al = findCurve(run_.run, "tsla.alignment");
    for (const auto& [name, y] : al->series)
      for (double v : y)
        QVERIFY(v >= 0 && v <= 1 + 1e-9);
    // Ablating heads changes nothing below the lowest ablated layer (causality of the residual stream).
    const auto trTop = run_.run.summary.at("top_tr").get<std::vector<hs::HeadRef>>();
    int lowest = 4;
    for (const hs::HeadRef& h : trTop)
      lowest = std::min(lowest, h.layer);
    for (int l = 0; l < lowest; ++l)
      QCOMPARE(al->series[1].second[size_t(l)], al->series[0].second[size_t(l)]);
    QVERIFY(al->series[1].second != al->series[0].second);  // and the ablation reached the residual

    const hs::Table* ov = findTable(run_.run, "tsla.overlap");
    QVERIFY(ov);
    QCOMPARE(ov->rows.size(), size_t(3));
    for (const auto& row : ov->rows) {
      const double j = row[3].get<double>();
      QVERIFY(j >= 0 && j <= 1);
    }
  }

  // The final norm folded into W_U: rows scaled by its weight g (RMSNorm), centred after scaling for a
  // LayerNorm, so that ⟨row_y, h⟩ / s(h) + ⟨W_U[y], b⟩ is logit y for any residual h (hand-derived).
  void foldedRowsReadTheLogits() {
    const hs::Transformer& m = *toy_.model;
    const at::Tensor g = m.weights().final_norm_w.to(at::kDouble);  // [d]
    const at::Tensor raw = hs::unembedRows(m, task_->label_tokens).to(at::kDouble);
    QVERIFY(maxDiff(hs::unembedRows(m, task_->label_tokens, true), raw * g) < 1e-6);

    hs::ModelConfig c = hs::test::tinyLlamaConfig();
    c.norm = hs::NormKind::LayerNorm;
    const hs::Transformer ln(c, hs::test::randomWeights(c, 5));
    const std::vector<int> ys = {3, 17, 40};
    const at::Tensor rows = hs::unembedRows(ln, ys, true).to(at::kDouble);  // [3, d]
    const at::Tensor h = at::randn({c.d_model}, at::kDouble) * 2 + 0.5;     // [d]
    const at::Tensor s = at::sqrt((h - h.mean()).pow(2).mean() + c.norm_eps);
    const at::Tensor logits = ln.logitLens(h.to(at::kFloat)).to(at::kDouble);  // [vocab]
    const at::Tensor w = hs::unembedRows(ln, ys).to(at::kDouble);
    const at::Tensor b = ln.weights().final_norm_b.to(at::kDouble);
    for (size_t i = 0; i < ys.size(); ++i) {
      const double folded = (at::dot(rows[i], h) / s + at::dot(w[i], b)).item<double>();
      QVERIFY2(std::abs(folded - logits[ys[i]].item<double>()) < 1e-4,
               qPrintable(QString("label %1: folded %2, logit %3")
                              .arg(ys[i])
                              .arg(folded)
                              .arg(logits[ys[i]].item<double>())));
    }
    // finalNormed is the model's final norm: unembedding it gives the logits.
    const at::Tensor viaNorm = at::matmul(ln.weights().unembed.to(at::kDouble), hs::finalNormed(ln, h));
    QVERIFY(maxDiff(viaNorm, logits) < 1e-4);
  }

  // With final_norm (the default) the per-layer logit difference at the last layer is the model's own
  // logit difference logit[y*] − mean logit[y'] at N (each prompt run alone); on the raw residual it is not.
  void lastLayerLogitDiffIsTheModels() {
    const hs::Curve* diff = findCurve(run_.run, "tsla.logit_diff");
    QVERIFY(diff);
    const std::vector<int>& labels = task_->label_tokens;
    double sum = 0;
    for (const hs::Prompt& p : task_->icl) {
      hs::RunRequest req;
      req.tokens = at::tensor(std::vector<int64_t>(p.ids.begin(), p.ids.end()), at::kLong).view({1, -1});
      const at::Tensor logits = toy_.model->run(req).logits[0][-1].to(at::kDouble);  // [vocab]
      double others = 0, gold = 0;
      for (int y : labels)
        (y == p.answer_token ? gold : others) += logits[y].item<double>();
      sum += gold - others / static_cast<double>(labels.size() - 1);
    }
    const double model = sum / static_cast<double>(task_->icl.size());
    const double last = diff->series[0].second.back();
    qInfo("last-layer logit difference: curve %.6f, model %.6f", last, model);
    QVERIFY(std::abs(last - model) < 1e-4 * std::max(1.0, std::abs(model)));
    // The raw residual (final_norm off) reads something else.
    const hs::PromptLabels pl = hs::promptLabels(*task_, task_->icl);
    const at::Tensor h = hs::captureAtLast(*toy_.model, hs::tokenSeqs(task_->icl), hs::residPost);
    const hs::SubspaceCurves rawCurves = hs::subspaceCurves(h, *toy_.model, pl, false);
    QVERIFY(std::abs(rawCurves.logit_diff.back() - model) > 1e-2 * std::max(1.0, std::abs(model)));
  }

  // The held-out prompts are the spec's next prompts: the same draws, other queries of the split.
  void heldOutIsDisjoint() {
    const int n = static_cast<int>(task_->icl.size());
    const hs::IclTask held = hs::heldOutTask(*toy_.tokenizer, *task_, n);
    hs::TaskSpec both = task_->spec;
    both.n_prompts = 2 * n;
    const hs::IclTask all = hs::buildIclTask(*toy_.tokenizer, both);
    const std::set<int> analysed(task_->query_index.begin(), task_->query_index.end());
    for (int i = 0; i < n; ++i) {
      QVERIFY(held.icl[size_t(i)].ids == all.icl[size_t(n + i)].ids);
      QVERIFY(!analysed.count(held.query_index[size_t(i)]));
    }
    // The run's recorded sets are these prompts.
    std::vector<std::vector<int64_t>> icl, eval;
    for (const hs::PromptRecord& r : run_.run.prompts) {
      if (r.set == "icl") icl.push_back(r.ids);
      if (r.set == "eval") eval.push_back(r.ids);
    }
    QCOMPARE(int(icl.size()), n);
    QCOMPARE(int(eval.size()), n);
    for (int i = 0; i < n; ++i) {
      QVERIFY(eval[size_t(i)] ==
              std::vector<int64_t>(held.icl[size_t(i)].ids.begin(), held.icl[size_t(i)].ids.end()));
      QVERIFY(icl[size_t(i)] ==
              std::vector<int64_t>(task_->icl[size_t(i)].ids.begin(), task_->icl[size_t(i)].ids.end()));
    }
    // A split too small for both sets is refused, naming the queries.
    try {
      hs::heldOutTask(*toy_.tokenizer, *task_, 100000);
      QFAIL("heldOutTask accepted more prompts than the split has queries");
    } catch (const hs::Error& e) {
      QVERIFY2(std::string(e.what()).find("queries") != std::string::npos, e.what());
    }
  }

  // Induction scores draw from the toy world's syllables (the ids `induction` uses), not [V/8, V).
  void inductionOnTrainedIds() {
    const hs::HeadGrid* ind = findGrid(run_.run, "tsla.induction");
    QVERIFY(ind);
    const auto range = hs::inductionTokenRange(*toy_.model, toy_.tokenizer.get());
    const hs::toy::ToyWorld world = hs::toy::ToyWorld::build();
    QCOMPARE(range.first, int64_t(world.syllableIdRange().first));
    QCOMPARE(range.second, int64_t(world.vocabSize()));
    QVERIFY(ind->provenance.options.at("induction_tokens") == nlohmann::json({range.first, range.second}));
    const hs::Transformer tiny = hs::test::tinyLlama();
    QVERIFY(
        (hs::inductionTokenRange(tiny, nullptr) == std::pair<int64_t, int64_t>{12, 37}));  // [50/4, 150/4)
  }

  // Mean ablation replaces a head by its mean over the toy world's neutral text (the default corpus),
  // not by its mean on the task's prompts.
  void meanAblationUsesTheCorpusMean() {
    const hs::Table* t = findTable(run_.run, "tsla.ablation");
    QVERIFY(t);
    const auto trTop = run_.run.summary.at("top_tr").get<std::vector<hs::HeadRef>>();
    const at::Tensor corpus =
        hs::meanZ(*toy_.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions);  // [layers, heads, d_head]
    const hs::IclTask held = hs::heldOutTask(*toy_.tokenizer, *task_, int(task_->icl.size()));
    hs::IclEvalOptions eo;
    eo.label_tokens = task_->label_tokens;
    eo.interventions = hs::meanHeads(trTop, corpus);
    const hs::IclEval e = hs::evaluateIcl(*toy_.model, held.icl, eo);
    const auto [acc, ratio] = ablationRow(*t, "tr", "mean");
    QCOMPARE(acc, e.accuracy);
    QCOMPARE(ratio, e.tr_ratio);
    const std::string what = run_.run.options.at("mean_source_description").get<std::string>();
    QVERIFY2(what.find("toy world") != std::string::npos, what.c_str());
    QCOMPARE(run_.run.options.at("mean_source").get<std::string>(), std::string("corpus"));
    // The task's own mean is another tensor.
    hs::MeanSource task;
    task.source = "task";
    const at::Tensor own =
        hs::resolveMeanZ(*toy_.model, toy_.tokenizer.get(), task, hs::tokenSeqs(task_->icl));
    QVERIFY(maxDiff(own, corpus) > 1e-3);
  }

  // The mean-ablation curves use the corpus mean as well: every point k >= 1 of the TR, TL and random
  // orderings' "(mean)" series equals the held-out accuracy and TR ratio with that ordering's first k heads
  // replaced by their mean over the toy world's text, evaluated directly. (The task's own mean at N puts
  // the task signal back: with it the large-k points keep far more of the accuracy.)
  void meanAblationCurvesUseTheCorpusMean() {
    const hs::Curve* acc = findCurve(run_.run, "tsla.ablation_curve.accuracy");
    const hs::Curve* ratio = findCurve(run_.run, "tsla.ablation_curve.tr_ratio");
    const hs::HeadGrid* tr = findGrid(run_.run, "tsla.tr");
    const hs::HeadGrid* tl = findGrid(run_.run, "tsla.tl");
    QVERIFY(acc && ratio && tr && tl);
    const at::Tensor corpus =
        hs::meanZ(*toy_.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions);  // [layers, heads, d_head]
    const hs::IclTask held = hs::heldOutTask(*toy_.tokenizer, *task_, int(task_->icl.size()));
    auto series = [](const hs::Curve* c, const std::string& name) {
      for (const auto& [n, y] : c->series)
        if (n == name) return y;
      throw std::runtime_error("no series " + name);
    };
    const std::vector<std::pair<std::string, std::vector<hs::HeadRef>>> orders = {
        {"tr", hs::topHeads(*tr, 32)},
        {"tl", hs::topHeads(*tl, 32)},
        {"random", hs::randomHeadOrder(4, 8, opts_.random_seed)}};
    for (const auto& [name, order] : orders) {
      const std::vector<double> ya = series(acc, name + " (mean)"), yr = series(ratio, name + " (mean)");
      QCOMPARE(ya.size(), acc->x.size());
      for (size_t i = 1; i < acc->x.size(); ++i) {
        const std::vector<hs::HeadRef> heads(order.begin(), order.begin() + long(acc->x[i]));
        hs::IclEvalOptions eo;
        eo.label_tokens = task_->label_tokens;
        eo.interventions = hs::meanHeads(heads, corpus);
        const hs::IclEval e = hs::evaluateIcl(*toy_.model, held.icl, eo);
        QVERIFY2(ya[i] == e.accuracy && yr[i] == e.tr_ratio,
                 qPrintable(QString("%1 (mean) k=%2: curve %3 / %4, corpus mean %5 / %6")
                                .arg(QString::fromStdString(name))
                                .arg(acc->x[i])
                                .arg(ya[i])
                                .arg(yr[i])
                                .arg(e.accuracy)
                                .arg(e.tr_ratio)));
      }
    }
  }

  // Curves over k: x = 0, 1, 2, 4, 8, 16 (half of 32 heads), one series per ordering and mode, k = 0 the
  // baseline, k = 4 the table's rows (4 heads = 12.5 %), the random ordering's prefix evaluated directly.
  void ablationCurves() {
    const hs::Curve* acc = findCurve(run_.run, "tsla.ablation_curve.accuracy");
    const hs::Curve* ratio = findCurve(run_.run, "tsla.ablation_curve.tr_ratio");
    const hs::Table* t = findTable(run_.run, "tsla.ablation");
    QVERIFY(acc && ratio && t);
    QVERIFY(acc->x == (std::vector<double>{0, 1, 2, 4, 8, 16}));
    QCOMPARE(acc->series.size(), size_t(8));
    const auto [accBase, ratioBase] = ablationRow(*t, "baseline", "none");
    for (const auto& [name, y] : acc->series)
      QCOMPARE(y[0], accBase);
    auto series = [](const hs::Curve* c, const std::string& name) {
      for (const auto& [n, y] : c->series)
        if (n == name) return y;
      throw std::runtime_error("no series " + name);
    };
    QCOMPARE(series(acc, "tr (zero)")[3], ablationRow(*t, "tr", "zero").first);
    QCOMPARE(series(ratio, "tl (mean)")[3], ablationRow(*t, "tl", "mean").second);
    const std::vector<hs::HeadRef> order = hs::randomHeadOrder(4, 8, opts_.random_seed);
    hs::IclEvalOptions eo;
    eo.label_tokens = task_->label_tokens;
    eo.interventions = hs::zeroHeads({order.begin(), order.begin() + 8});
    const hs::IclTask held = hs::heldOutTask(*toy_.tokenizer, *task_, int(task_->icl.size()));
    QCOMPARE(series(ratio, "random (zero)")[4], hs::evaluateIcl(*toy_.model, held.icl, eo).tr_ratio);
    for (const auto& [name, y] : acc->series)
      qInfo("curve accuracy %s %s", name.c_str(), nlohmann::json(y).dump().c_str());
    for (const auto& [name, y] : ratio->series)
      qInfo("curve tr_ratio %s %s", name.c_str(), nlohmann::json(y).dump().c_str());
  }

  // Perturbations: shuffled demonstration inputs keep every token (inputs move between demos) and the
  // label set; number labels put "1".."k" in place of the label words, the answer among them.
  void perturbationTables() {
    const hs::Table* t = findTable(run_.run, "tsla.perturbation");
    QVERIFY(t);
    QCOMPARE(t->rows.size(), size_t(2 * (1 + 2 * 4)));
    std::vector<const hs::PromptRecord*> eval, shuffled, numbers;
    for (const hs::PromptRecord& r : run_.run.prompts) {
      if (r.set == "eval") eval.push_back(&r);
      if (r.set == "shuffled_inputs") shuffled.push_back(&r);
      if (r.set == "number_labels") numbers.push_back(&r);
    }
    QCOMPARE(shuffled.size(), eval.size());
    int moved = 0;
    for (size_t i = 0; i < eval.size(); ++i) {
      std::vector<int64_t> a = eval[i]->ids, b = shuffled[i]->ids;
      moved += a != b;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      QVERIFY(a == b);
      QVERIFY(shuffled[i]->answer_ids == eval[i]->answer_ids);
    }
    QVERIFY(moved > 0);
    QVERIFY(!numbers.empty());
    const int one = *toy_.tokenizer->idOf("1");
    for (const hs::PromptRecord* r : numbers) {
      QVERIFY(std::find(r->label_ids.begin(), r->label_ids.end(), r->answer_ids[0]) != r->label_ids.end());
      for (int64_t id : r->label_ids)
        QVERIFY(id >= one && id < one + 9);
    }
    for (const auto& row : t->rows)
      qInfo("tsla.perturbation %s", nlohmann::json(row).dump().c_str());
  }

  // Attention shares from the batched, left-padded run equal those of each prompt run alone.
  void attentionSharesDirect() {
    const std::vector<hs::Prompt> two = {task_->icl[0], task_->icl[1]};
    const hs::AttentionShares batched = hs::attentionShares(*toy_.model, two, {}, 2);
    Eigen::MatrixXd labels = Eigen::MatrixXd::Zero(4, 8), query = labels;
    for (const hs::Prompt& p : two) {
      hs::RunRequest req;
      req.tokens = at::tensor(std::vector<int64_t>(p.ids.begin(), p.ids.end()), at::kLong).view({1, -1});
      for (int l = 0; l < 4; ++l)
        req.capture.insert(hs::attnPattern(l));
      const hs::RunResult r = toy_.model->run(req);
      for (int l = 0; l < 4; ++l)
        for (int h = 0; h < 8; ++h) {
          const at::Tensor a = r.cache.at(hs::attnPattern(l))[0][h][p.last].to(at::kDouble);  // [k_pos]
          for (const hs::Prompt::Demo& d : p.demos)
            labels(l, h) += a.slice(0, d.label.begin, d.label.end).sum().item<double>() / 2;
          query(l, h) += a.slice(0, p.query_input.begin, p.query_input.end).sum().item<double>() / 2;
        }
    }
    QVERIFY((batched.labels - labels).cwiseAbs().maxCoeff() < 1e-5);
    QVERIFY((batched.query - query).cwiseAbs().maxCoeff() < 1e-5);
    QVERIFY(findGrid(run_.run, "tsla.attention_labels") && findGrid(run_.run, "tsla.attention_query"));
    const hs::Table* t = findTable(run_.run, "tsla.attention");
    QVERIFY(t);
    for (const auto& row : t->rows)
      qInfo("tsla.attention %s", nlohmann::json(row).dump().c_str());
  }

  // An open-ended (FV-style) task: label sets per prompt from the demonstrations' answers; TR/TL vectors
  // steer zero-shot prompts, scored by accuracy.
  void generationTask() {
    hs::TaskSpec spec;
    spec.dataset = "toy:antonym_a";
    spec.shots = 10;
    spec.n_prompts = 16;
    const hs::IclTask task = hs::buildIclTask(*toy_.tokenizer, spec);
    const hs::PromptLabels pl = hs::promptLabels(task, task.icl);
    for (size_t i = 0; i < task.icl.size(); ++i) {
      QCOMPARE(pl.sets[i][size_t(pl.gold[i])], task.icl[i].answer_token);
      QVERIFY(pl.sets[i].size() >= 2 && pl.sets[i].size() <= 11);
    }
    hs::TslaOptions o = opts_;
    o.curves = false;
    const hs::AnalysisOutput out = hs::runTsla(*toy_.model, *toy_.tokenizer, task, o);
    const hs::HeadGrid* tr = findGrid(out.run, "tsla.tr");
    QVERIFY(tr && tr->values.allFinite());
    QVERIFY(!findTable(out.run, "tsla.perturbation"));
    const hs::Table* st = findTable(out.run, "tsla.steering");
    QVERIFY(st);
    QCOMPARE(st->rows.size(), size_t(4));
    for (const auto& row : st->rows)
      qInfo("antonym_a steering %s", nlohmann::json(row).dump().c_str());
  }

  void sessionRoundTrip() {
    QTemporaryDir dir;
    const hs::Session back =
        hs::test::saveAndReopen(dir, "tsla.hscope", run_, hs::taskSpecToJson(task_->spec));
    const hs::AnalysisRun* r = back.findRun("tsla-1");
    QVERIFY(r);
    QCOMPARE(r->grids.size(), run_.run.grids.size());
    for (size_t i = 0; i < r->grids.size(); ++i) {
      QCOMPARE(r->grids[i].id, run_.run.grids[i].id);
      QVERIFY(r->grids[i].values == run_.run.grids[i].values);
      QVERIFY(r->grids[i].provenance.options == run_.run.grids[i].provenance.options);
    }
    for (size_t i = 0; i < r->curves.size(); ++i)
      QVERIFY(r->curves[i].series == run_.run.curves[i].series);
    for (size_t i = 0; i < r->tables.size(); ++i)
      QVERIFY(nlohmann::json(r->tables[i].rows) == nlohmann::json(run_.run.tables[i].rows));
    QVERIFY(r->summary == run_.run.summary);
    for (const auto& [name, t] : run_.tensors)
      QVERIFY(at::equal(back.tensors.at(name), t));
  }

  void cliSessionMatchesInProcess() {
#ifndef HEADSCOPE_CLI_PATH
    QSKIP("headscope-cli is not built in this configuration");
#else
    if (!std::filesystem::exists(hs::test::cliPath())) QSKIP("headscope-cli not built");
    QTemporaryDir dir;
    const QString out = dir.filePath("run.hscope");
    QProcess p;
    p.start(QString::fromStdString(hs::test::cliPath()),
            {"tsla", "toy", "--n", "16", "--top-percent", "12.5", "--ablation", "zero", "--out", out});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const hs::Session s = hs::loadSession(out.toStdString());
    QCOMPARE(s.runs.size(), size_t(1));
    hs::TaskSpec spec;
    spec.n_prompts = 16;
    const hs::IclTask task = hs::buildIclTask(*toy_.tokenizer, spec);
    hs::TslaOptions o;
    o.top_percent = 12.5;
    o.ablation = "zero";
    const hs::AnalysisOutput direct = hs::runTsla(*toy_.model, *toy_.tokenizer, task, o);
    for (const char* id : {"tsla.tr", "tsla.tl"}) {
      const hs::HeadGrid* a = findGrid(s.runs[0], id);
      const hs::HeadGrid* b = findGrid(direct.run, id);
      QVERIFY(a && b);
      QVERIFY((a->values - b->values).cwiseAbs().maxCoeff() < 1e-9);
    }
    QCOMPARE(s.task.at("dataset").get<std::string>(), std::string("toy:category_label"));
#endif
  }

  void refusesBadOptions() {
    hs::TslaOptions bad = opts_;
    bad.ablation = "half";
    const hs::IclTask held = hs::heldOutTask(*toy_.tokenizer, *task_, 4);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runTsla(*toy_.model, *toy_.tokenizer, *task_, held, bad));
    // A held-out set sharing queries with the analysed prompts is refused.
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runTsla(*toy_.model, *toy_.tokenizer, *task_, *task_, opts_));
  }
};

QTEST_GUILESS_MAIN(TestTsla)
#include "test_tsla.moc"
