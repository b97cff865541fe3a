// Induction and the dual route (DESIGN 5.2) on the toy model.
// - Definitions, by hand: value-weighted attention on a 3-key case; the copying prompt pair lines up
//   (same length, the corrupt first half lacks e, the two prompts agree from the separator on, −2 is the
//   last filler token); the matching prompt puts e where it says.
// - The `induction` run on the toy model: every grid is a finite 4 × 8 matrix with its stable id; the
//   ablation curves have one series per ordering over k = 0..32 and agree at k = 0; the
//   top-k prefix-matching heads cut induction accuracy more than k random heads from outside the top 2k
//   (numbers printed); token and concept copying grids differ (top-k overlap printed).
// - The run survives a session round trip bit for bit, and the CLI writes a session that reopens with the
//   grids of its --json output.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <set>

#include "analysis/ablation_curves.h"
#include "analysis/dual_route.h"
#include "analysis/induction_run.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/toy/world.h"
#include "test_paths.h"
#include "util/error.h"

using hs::test::findGrid;
using hs::test::findTable;

namespace {

// The options of the test run: small, so the suite stays well under a minute on one core.
hs::InductionRunOptions smallRun() {
  hs::InductionRunOptions o;
  o.n = 8;
  o.n_eval = 48;
  o.seed = 3;
  o.top_k = 4;
  return o;
}

}  // namespace

class TestDualRoute : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;
  hs::AnalysisOutput run_;

 private Q_SLOTS:
  void initTestCase() {
    toy_ = hs::loadModel("toy");
    QVERIFY(toy_.tokenizer);
    QVERIFY(hs::isToyVocabulary(*toy_.model, toy_.tokenizer.get()));
    at::NoGradGuard noGrad;
    QElapsedTimer t;
    t.start();
    run_ = hs::runInduction(*toy_.model, toy_.tokenizer.get(), smallRun(), hs::test::modelContext("toy"));
    qInfo("induction run (n %d, n_eval %d): %.1f s", smallRun().n, smallRun().n_eval, t.elapsed() / 1000.0);
    qInfo("summary: %s", run_.run.summary.dump().c_str());
  }

  // ---- definitions ----

  void valueWeightedAttentionHandCase() {
    // One query over 3 keys, two heads (float32 inputs: tolerance 1e-6). Head 0: A = (0.5, 0.3, 0.2), ‖v‖ =
    // (5, 1, 0) → A‖v‖ = (2.5, 0.3, 0) / 2.8. Head 1 attends only to the zero-norm value: all weights 0.
    at::Tensor pattern = at::zeros({1, 2, 1, 3}, at::kFloat);  // [batch, head, q, k]
    pattern[0][0][0] = at::tensor({0.5f, 0.3f, 0.2f});
    pattern[0][1][0] = at::tensor({0.f, 0.f, 1.f});
    at::Tensor v = at::zeros({1, 3, 2, 2}, at::kFloat);  // [batch, k, head, d_head]
    for (int h = 0; h < 2; ++h) {
      v[0][0][h] = at::tensor({3.f, 4.f});   // ‖v‖ = 5
      v[0][1][h] = at::tensor({0.f, -1.f});  // ‖v‖ = 1
    }
    const at::Tensor w = hs::valueWeightedAttention(pattern, v);  // [1, 2, 1, 3]
    QVERIFY(w.sizes().vec() == (std::vector<int64_t>{1, 2, 1, 3}));
    QVERIFY(std::abs(w[0][0][0][0].item<double>() - 2.5 / 2.8) < 1e-6);
    QVERIFY(std::abs(w[0][0][0][1].item<double>() - 0.3 / 2.8) < 1e-6);
    QCOMPARE(w[0][0][0][2].item<double>(), 0.0);
    QCOMPARE(w[0][1].abs().sum().item<double>(), 0.0);
    // Plain attention would put 0.2 on key 2; weighting by ‖v‖ removes what carries no value.
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::valueWeightedAttention(pattern, v.narrow(1, 0, 2)));
  }

  void copyingPairLinesUp_data() {
    QTest::addColumn<bool>("concept");
    QTest::newRow("random tokens") << false;
    QTest::newRow("real words") << true;
  }
  void copyingPairLinesUp() {
    QFETCH(bool, concept);
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build();
    const hs::DualRouteVocab v = hs::toyDualRouteVocab(w);
    hs::DualRouteOptions o;
    for (int i = 0; i < 5; ++i) {
      const hs::CopyingPair p = hs::copyingPair(v, o, concept, i);
      const size_t E = p.entity.size(), F = size_t(o.filler_len);
      QVERIFY(E >= 2 && E <= (concept ? 3u : 5u));
      // [bos] first-half(F) sep rand(F − E) e0
      QCOMPARE(p.clean.size(), 1 + F + 1 + (F - E) + 1);
      QCOMPARE(p.corrupt.size(), p.clean.size());
      QCOMPARE(p.clean.front(), int64_t(hs::toy::tok::kBos));
      QCOMPARE(p.clean[1 + F], int64_t(hs::toy::tok::kArrow));
      // The clean first half is rand then e; the second half repeats rand and ends with e0.
      const std::vector<int64_t> rand(p.clean.begin() + 1, p.clean.begin() + 1 + long(F - E));
      QVERIFY(std::equal(p.entity.begin(), p.entity.end(), p.clean.begin() + 1 + long(F - E)));
      QVERIFY(std::equal(rand.begin(), rand.end(), p.clean.begin() + 2 + long(F)));
      QCOMPARE(p.clean.back(), p.entity[0]);
      QCOMPARE(p.clean[p.clean.size() - 2], rand.back());  // −2: the last filler token predicts e0
      // From the separator on, both prompts are identical; the corrupt first half holds rand's tokens
      // (shuffled) plus E others, and none of e's.
      QVERIFY(std::equal(p.clean.begin() + 1 + long(F), p.clean.end(), p.corrupt.begin() + 1 + long(F)));
      const std::set<int64_t> half(p.corrupt.begin() + 1, p.corrupt.begin() + 1 + long(F));
      QCOMPARE(half.size(), F);
      for (int64_t t : rand)
        QVERIFY(half.count(t));
      for (int64_t t : p.entity)
        QVERIFY(!half.count(t));
      if (concept)
        QVERIFY(w.conceptOf(hs::toy::Lang::A, {p.entity.begin(), p.entity.end()}) >= 0 ||
                w.conceptOf(hs::toy::Lang::B, {p.entity.begin(), p.entity.end()}) >= 0);
    }
  }

  void matchingPromptPositions() {
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build();
    const hs::DualRouteVocab v = hs::toyDualRouteVocab(w);
    hs::DualRouteOptions o;
    const hs::MatchingPrompt m = hs::matchingPrompt(v, o, false, 0);
    // [bos] r1(10) e r2 → r1: the last token is r1's last, e[0] follows r1's first occurrence.
    QCOMPARE(m.tokens.size(), size_t(1 + o.filler_len + 1 + o.r1_len));
    QCOMPARE(m.entity_first, int64_t(1 + o.r1_len));
    QCOMPARE(m.tokens[size_t(m.entity_first)], m.entity.front());
    QCOMPARE(m.tokens[size_t(m.entity_last)], m.entity.back());
    QCOMPARE(m.tokens.back(), m.tokens[size_t(o.r1_len)]);
    QCOMPARE(m.tokens[size_t(o.filler_len + 1)], int64_t(hs::toy::tok::kArrow));
  }

  // ---- the run on the toy model ----

  void gridsAreFiniteLayerByHead() {
    for (const char* id :
         {"induction.prev_token", "induction.prefix_matching", "dual_route.token_copying",
          "dual_route.concept_copying", "dual_route.next_token_matching", "dual_route.last_token_matching"}) {
      const hs::HeadGrid* g = findGrid(run_.run, id);
      QVERIFY2(g, id);
      QCOMPARE(g->layers(), 4);
      QCOMPARE(g->heads(), 8);
      QVERIFY2(g->values.allFinite(), id);
      QVERIFY2(g->values.cwiseAbs().maxCoeff() > 0, id);  // something was measured
      QCOMPARE(g->provenance.method, std::string("induction"));
      QCOMPARE(g->provenance.model, std::string("toy"));
    }
    // Attention-type scores are shares of one query's attention.
    for (const char* id : {"dual_route.next_token_matching", "dual_route.last_token_matching"}) {
      const hs::HeadGrid* g = findGrid(run_.run, id);
      QVERIFY(g->values.minCoeff() >= 0 && g->values.maxCoeff() <= 1 + 1e-9);
    }
  }

  void ablationCurvesPerOrdering() {
    QCOMPARE(int(run_.run.curves.size()), 4);
    for (const hs::Curve& c : run_.run.curves) {
      QVERIFY(c.x == (std::vector<double>{0, 1, 2, 4, 8, 16, 32}));
      QCOMPARE(int(c.series.size()), 4);
      QStringList line;
      for (const auto& [id, y] : c.series) {
        QCOMPARE(y.size(), c.x.size());
        QCOMPARE(y.front(), c.series.front().second.front());  // k = 0 is the same unablated model
        for (double a : y)
          QVERIFY(a >= 0 && a <= 1);
        QStringList ys;
        for (double a : y)
          ys << QString::number(a, 'f', 2);
        line << QString("%1 [%2]").arg(QString::fromStdString(id), ys.join(" "));
      }
      qInfo("%s: %s", c.id.c_str(), qPrintable(line.join("; ")));
    }
  }

  void topPrefixHeadsCutInductionMoreThanRandomHeads() {
    const hs::Table* t = findTable(run_.run, "induction.ablation");
    QVERIFY(t);
    QCOMPARE(int(t->rows.size()), 3);
    const double base = t->rows[0][2].get<double>();
    const double top = t->rows[1][2].get<double>();
    const double rnd = t->rows[2][2].get<double>();
    qInfo(
        "induction accuracy: baseline %.3f, top-4 prefix-matching ablated %.3f (%s), 4 random ablated %.3f "
        "(%s)",
        base, top, t->rows[1][1].get<std::string>().c_str(), rnd, t->rows[2][1].get<std::string>().c_str());
    QVERIFY2(base > 0.5, "the toy model copies random spans");
    QVERIFY2(base - top > base - rnd, "top prefix-matching heads matter more than random ones");
    // The random heads never include a top-8 prefix-matching head.
    const hs::HeadGrid* pm = findGrid(run_.run, "induction.prefix_matching");
    std::set<std::string> top8;
    for (const hs::HeadRef& h : hs::topHeads(*pm, 8))
      top8.insert(std::to_string(h.layer) + "." + std::to_string(h.head));
    const QStringList rndHeads = QString::fromStdString(t->rows[2][1].get<std::string>()).split(',');
    QCOMPARE(rndHeads.size(), 4);
    for (const QString& h : rndHeads)
      QVERIFY(!top8.count(h.toStdString()));
  }

  void tokenAndConceptCopyingDiffer() {
    const hs::HeadGrid* tok = findGrid(run_.run, "dual_route.token_copying");
    const hs::HeadGrid* con = findGrid(run_.run, "dual_route.concept_copying");
    QVERIFY(tok && con);
    const double diff = (tok->values - con->values).cwiseAbs().maxCoeff();
    qInfo("token vs concept copying: max |diff| %.4f, Jaccard@4 %.3f, Jaccard@8 %.3f, Spearman %.3f", diff,
          hs::jaccardAtK(*tok, *con, 4), hs::jaccardAtK(*tok, *con, 8), hs::spearmanRho(*tok, *con));
    QVERIFY(diff > 1e-4);
    QCOMPARE(run_.run.summary["token_vs_concept_jaccard_at_4"].get<double>(), hs::jaccardAtK(*tok, *con, 4));
    const hs::Table* cp = findTable(run_.run, "dual_route.concept_patching");
    QVERIFY(cp);
    for (const auto& row : cp->rows) {
      double total = 0;
      for (size_t c = 3; c < row.size(); ++c)
        total += row[c].get<double>();
      QVERIFY(std::abs(total - 1.0) < 1e-9);  // every pair lands in exactly one outcome
      qInfo("concept patching %s: %s", row[0].get<std::string>().c_str(), nlohmann::json(row).dump().c_str());
    }
  }

  // ---- sessions ----

  void sessionRoundTripKeepsGrids() {
    QTemporaryDir dir;
    const hs::Session back = hs::test::saveAndReopen(dir, "induction.hscope", run_);
    const hs::AnalysisRun* r = back.findRun("induction-1");
    QVERIFY(r);
    QCOMPARE(r->grids.size(), run_.run.grids.size());
    for (size_t i = 0; i < r->grids.size(); ++i) {
      QCOMPARE(r->grids[i].id, run_.run.grids[i].id);
      QVERIFY(r->grids[i].values == run_.run.grids[i].values);
    }
    QCOMPARE(nlohmann::json(r->curves).dump(), nlohmann::json(run_.run.curves).dump());
    QCOMPARE(nlohmann::json(r->tables).dump(), nlohmann::json(run_.run.tables).dump());
  }

  void cliWritesSessionThatReopens() {
    HS_RUN_CLI_ANALYSIS(o, "run", "induction",
                        {"induction", "toy", "--n", "4", "--n-eval", "16", "--seed", "5", "--ks", "0,2,8"});
    const hs::AnalysisRun *r = o.run, &written = o.written;
    QCOMPARE(r->grids.size(), size_t(6));
    QCOMPARE(r->grids.size(), written.grids.size());
    for (size_t i = 0; i < r->grids.size(); ++i) {
      QCOMPARE(r->grids[i].id, written.grids[i].id);
      QVERIFY2(r->grids[i].values == written.grids[i].values, r->grids[i].id.c_str());
      QVERIFY(r->grids[i].values.allFinite());
    }
    QVERIFY(r->curves.front().x == (std::vector<double>{0, 2, 8}));
  }
};

QTEST_GUILESS_MAIN(TestDualRoute)
#include "test_dual_route.moc"
