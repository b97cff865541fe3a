// The views of issue 40, checked against computations written here: the head card lists every grid of the
// session with the head's rank among the live heads (rank_stats directly), its causal-effect and published
// lines, and an OV circuit equal to W_U · norm(W_O W_V norm(e)) computed from the toy model's weights; the
// agreement matrix's Spearman ρ and Jaccard@k equal a direct computation over the live heads, with Fisher's-z
// intervals and the hypergeometric null; the run diff's grid is A − B, its curves A, B and A − B, and its
// differing options are the ones that differ; the Prompts tab filters, sorts, exports and opens the
// per-prompt rows.
#include <ATen/ATen.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "agreement_matrix.h"
#include "attention_tab.h"
#include "evaluation_dock.h"
#include "gui_test_util.h"
#include "head_card.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "model/load/model_loader.h"
#include "prompt_slices.h"
#include "prompt_tab.h"
#include "results/rank_agreement.h"
#include "results/rank_stats.h"
#include "run_diff.h"
#include "task_dock.h"
#include "workspace_views.h"

using hs::AgreementMatrix;
using hs::HeadGrid;
using hs::HeadRef;
using hs::gui::HeadCard;
using hs::gui::MainWindow;

namespace {

HeadGrid grid(const std::string& id, int layers, int heads, const std::vector<double>& v,
              const std::string& unit = "score") {
  HeadGrid g;
  g.id = id;
  g.name = id;
  g.unit = unit;
  g.values.resize(layers, heads);
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h)
      g.values(l, h) = v[static_cast<size_t>(l * heads + h)];
  return g;
}

bool isSilent(const std::vector<HeadRef>& silent, HeadRef h) {
  return std::find(silent.begin(), silent.end(), h) != silent.end();
}

// Written here: the 1-based rank of `head` among the live heads' numbers (largest first, ties share the best
// rank) and how many live heads have a number.
std::pair<int, int> rankAmongLive(const HeadGrid& g, HeadRef head, const std::vector<HeadRef>& silent) {
  int better = 0, of = 0;
  const double x = g.values(head.layer, head.head);
  for (int l = 0; l < g.layers(); ++l)
    for (int h = 0; h < g.heads(); ++h) {
      const double y = g.values(l, h);
      if (isSilent(silent, {l, h}) || std::isnan(y)) continue;
      ++of;
      if (y > x) ++better;
    }
  return {better + 1, of};
}

// Written here: Spearman's ρ over the live heads (average ranks, Pearson of the ranks).
std::vector<double> averageRanks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]])
      ++j;
    for (size_t t = i; t <= j; ++t)
      r[idx[t]] = (static_cast<double>(i + j) / 2.0) + 1.0;
    i = j + 1;
  }
  return r;
}
double spearmanLive(const HeadGrid& a, const HeadGrid& b, const std::vector<HeadRef>& silent) {
  std::vector<double> x, y;
  for (int l = 0; l < a.layers(); ++l)
    for (int h = 0; h < a.heads(); ++h)
      if (!isSilent(silent, {l, h}) && !std::isnan(a.values(l, h)) && !std::isnan(b.values(l, h))) {
        x.push_back(a.values(l, h));
        y.push_back(b.values(l, h));
      }
  const std::vector<double> rx = averageRanks(x), ry = averageRanks(y);
  const double n = static_cast<double>(rx.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n,
               my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

QStringList& gMessages = hs::test::collectedMessages();
using hs::test::collect;
using hs::test::settle;

const hs::AnalysisRun* runById(const std::vector<hs::AnalysisRun>& runs, const QString& id) {
  for (const hs::AnalysisRun& r : runs)
    if (QString::fromStdString(r.id) == id) return &r;
  return nullptr;
}

const HeadGrid* gridByKey(const std::vector<hs::AnalysisRun>& runs, const QString& key) {
  const hs::AnalysisRun* r = runById(runs, key.section('/', 0, 0));
  if (!r) return nullptr;
  for (const HeadGrid& g : r->grids)
    if (QString::fromStdString(g.id) == key.section('/', 1)) return &g;
  return nullptr;
}

// Tab `i` of the window, shown and laid out, as drawn.
QImage grabTab(MainWindow& w, int i) {
  w.tabs()->setCurrentIndex(i);
  settle();
  return w.tabs()->currentWidget()->grab().toImage();
}

// How many pixels differ (images of different sizes: all of them).
int64_t differingPixels(const QImage& a, const QImage& b) {
  if (a.size() != b.size()) return int64_t{a.width()} * a.height();
  const QImage x = a.convertToFormat(QImage::Format_ARGB32), y = b.convertToFormat(QImage::Format_ARGB32);
  int64_t n = 0;
  for (int r = 0; r < x.height(); ++r) {
    const auto* p = reinterpret_cast<const QRgb*>(x.constScanLine(r));
    const auto* q = reinterpret_cast<const QRgb*>(y.constScanLine(r));
    for (int c = 0; c < x.width(); ++c)
      n += p[c] != q[c] ? 1 : 0;
  }
  return n;
}

}  // namespace

class TestWorkspaceViews : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_workspace_views"); }

  // rank_agreement on small grids: the live-head filter, Fisher's z interval, the hypergeometric null.
  void rankAgreementStatistics() {
    // 3 × 4 heads, head (0, 1) silent; b ranks a's top three first (in another order) and then reversed.
    const HeadGrid a = grid("a", 3, 4, {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
    const HeadGrid b = grid("b", 3, 4, {10, 99, 12, 11, 1, 2, 3, 4, 5, 6, 7, 8});
    const std::vector<HeadRef> silent = {{0, 1}};
    const hs::RankAgreement r = hs::rankAgreement(a, b, 3, silent);
    QCOMPARE(r.n, 11);
    QVERIFY(std::abs(r.spearman - spearmanLive(a, b, silent)) < 1e-12);
    QVERIFY(std::abs(r.spearman - hs::spearmanRho(hs::withoutHeads(a, silent), hs::withoutHeads(b, silent))) <
            1e-12);
    const double z = std::atanh(r.spearman), se = std::sqrt(1.06 / (11 - 3));
    QVERIFY(std::abs(r.spearman_lo - std::tanh(z - 1.959963984540054 * se)) < 1e-12);
    QVERIFY(std::abs(r.spearman_hi - std::tanh(z + 1.959963984540054 * se)) < 1e-12);
    QVERIFY(r.spearman_lo < r.spearman && r.spearman < r.spearman_hi);
    // Top 3 of a: (0,0) 12, (0,2) 10, (0,3) 9 (the silent 11 is left out); of b: (0,2), (0,3), (0,0).
    QCOMPARE(r.k, 3);
    QCOMPARE(r.overlap, 3);
    QCOMPARE(r.jaccard, 1.0);
    // P(two random 3-sets of 11 are equal) = 1 / C(11, 3).
    QVERIFY(std::abs(r.p_value - 1.0 / 165.0) < 1e-12);
    double total = 0, mean = 0;
    for (int x = 0; x <= 3; ++x) {
      total += hs::overlapProbability(11, 3, x);
      mean += x * hs::overlapProbability(11, 3, x);
    }
    QVERIFY(std::abs(total - 1.0) < 1e-12);
    QVERIFY(std::abs(mean - 9.0 / 11.0) < 1e-12);  // the hypergeometric mean k·k/n
    QVERIFY(r.null_lo <= r.null_mean && r.null_mean <= r.null_hi && r.null_hi < 1.0);
    // The live rank of a head: the silent one is not ranked and not counted.
    const hs::LiveRank lr = hs::liveRank(a, {0, 2}, silent);
    QVERIFY(lr.ranked);
    QCOMPARE(lr.rank, 2);
    QCOMPARE(lr.of, 11);
    QVERIFY(!hs::liveRank(a, {0, 1}, silent).ranked);
  }

  // The card on synthetic runs of registered methods: every grid of the model's shape listed with its live
  // rank, Δ-unit grids and runs whose head options name the head under "effect", published runs with theirs.
  void headCardListsEveryGridWithItsRank() {
    hs::gui::ModelInfo info;
    info.label = "toy";
    info.path = "toy";
    info.layers = 3;
    info.heads = 4;
    info.silent = {{2, 3}};
    std::vector<double> v1(12), v2(12), v3(12);
    for (int i = 0; i < 12; ++i) {
      v1[i] = std::sin(1.3 * i);
      v2[i] = (i * 7) % 12;
      v3[i] = -0.1 * i;
    }
    hs::AnalysisRun induction;
    induction.id = "induction-1";
    induction.method = "induction";
    induction.provenance.model = "toy";
    induction.grids = {grid("induction.prev_token", 3, 4, v1), grid("induction.prefix_matching", 3, 4, v2)};
    hs::AnalysisRun patch;
    patch.id = "patch-1";
    patch.method = "patch";
    patch.provenance.model = "toy";
    patch.grids = {grid("patch.effect", 3, 4, v3, "Δmetric")};
    hs::AnalysisRun evaluate;
    evaluate.id = "evaluate-1";
    evaluate.method = "evaluate";
    evaluate.provenance.model = "toy";
    evaluate.options = {{"zero_ablate", {{1, 2}, {0, 0}}}};
    evaluate.summary = {{"icl", {{"accuracy", 1.0}}}, {"icl_intervened", {{"accuracy", 0.25}}}};
    hs::AnalysisRun published;
    published.id = "published-1";
    published.method = "published";
    published.provenance.model = "Meta-Llama-3-8B";
    std::vector<double> big(32 * 32);
    for (size_t i = 0; i < big.size(); ++i)
      big[i] = std::cos(0.37 * static_cast<double>(i));
    published.grids = {grid("dual_route.concept_copying", 32, 32, big, "ΔP")};

    HeadCard card;
    card.setModel(info);
    card.setRuns({induction, patch, evaluate}, {published});
    QSignalSpy asked(&card, &HeadCard::circuitRequested);
    card.setHead({1, 2});
    QCOMPARE(asked.count(), 1);
    QCOMPARE(card.title(), QString("Layer 1, head 2"));
    const std::vector<HeadCard::Row> scores = card.rows(HeadCard::Section::Scores);
    QCOMPARE(scores.size(), size_t(2));
    const std::vector<hs::AnalysisRun> own = {induction, patch};
    for (const HeadCard::Row& r : card.rows()) {
      if (r.key.isEmpty() || r.section == HeadCard::Section::Published) continue;
      const HeadGrid* g = gridByKey(own, r.key);
      QVERIFY2(g, qPrintable(r.key));
      const auto [rank, of] = rankAmongLive(*g, {1, 2}, info.silent);
      QCOMPARE(r.rank.rank, rank);
      QCOMPARE(r.rank.of, of);
      QCOMPARE(r.rank.of, 11);
      QCOMPARE(r.rank.rank, hs::headRank(hs::withoutHeads(*g, info.silent), {1, 2}));
      QCOMPARE(r.value, g->values(1, 2));
    }
    // The Δ grid is an effect; the evaluate run ablated the head.
    const std::vector<HeadCard::Row> effects = card.rows(HeadCard::Section::Effects);
    QCOMPARE(effects.size(), size_t(2));
    QCOMPARE(effects[0].key, QString("patch-1/patch.effect"));
    QCOMPARE(effects[1].run, QString("evaluate-1"));
    QVERIFY2(effects[1].text.contains("0.25"), qPrintable(effects[1].text));
    // The published head of another model, ranked among that model's heads.
    const std::vector<HeadCard::Row> pub = card.rows(HeadCard::Section::Published);
    QCOMPARE(pub.size(), size_t(1));
    QCOMPARE(pub[0].rank.rank, hs::headRank(published.grids[0], {1, 2}));
    QCOMPARE(pub[0].rank.of, 1024);
    // A silent head is shown, not ranked.
    card.setHead({2, 3});
    for (const HeadCard::Row& r : card.rows(HeadCard::Section::Scores))
      QVERIFY(!r.rank.ranked);
    // The tree holds every row (sections are parents).
    int leaves = 0;
    for (int i = 0; i < card.tree()->topLevelItemCount(); ++i)
      for (int j = 0; j < card.tree()->topLevelItem(i)->childCount(); ++j)
        leaves += card.tree()->topLevelItem(i)->child(j)->data(0, Qt::UserRole).toString().isEmpty() ? 0 : 1;
    QCOMPARE(leaves, 4);  // two scores, the Δ grid, the published grid
  }

  // The whole path on the toy model: the card follows the clicked head, lists every grid of the session's
  // runs with its live rank, gets the pattern and the OV circuit from the worker, and its OV circuit equals
  // the product of the weights computed here. The menu entry brings the card's tab forward.
  void headCardOnTheToyModel() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    hs::gui::WorkspaceViews* views = w->workspaceViews();
    QVERIFY(views);
    HeadCard* card = views->headCard();
    const HeadRef head{1, 3};
    QSignalSpy shown(views, &hs::gui::WorkspaceViews::headCircuitShown);
    w->headsView()->setSelection({head});  // the menu acts on the selection (or the head under it)
    w->headsView()->setMenuHead(head);
    w->headsView()->menuAction(hs::HeadGridView::MenuAction::HeadCard)->trigger();
    QCOMPARE(w->tabs()->currentWidget(), static_cast<QWidget*>(card));
    QCOMPARE(card->head(), head);
    QVERIFY(shown.wait(60000));
    const std::vector<hs::AnalysisRun> runs = w->runs();
    const std::vector<HeadRef>& silent = w->modelInfo().silent;
    // Every grid of every run is a line, with the rank written here.
    int grids = 0;
    for (const hs::AnalysisRun& r : runs)
      grids += static_cast<int>(r.grids.size());
    int listed = 0;
    for (const HeadCard::Row& r : card->rows()) {
      if (r.key.isEmpty()) continue;
      ++listed;
      const HeadGrid* g = gridByKey(runs, r.key);
      QVERIFY2(g, qPrintable(r.key));
      const auto [rank, of] = rankAmongLive(*g, head, silent);
      QCOMPARE(r.rank.rank, rank);
      QCOMPARE(r.rank.of, of);
      QCOMPARE(of, 32 - static_cast<int>(silent.size()));
    }
    QCOMPARE(listed, grids);
    QVERIFY(grids >= 2);
    // The pattern: one row per query, each a distribution over the keys up to it.
    const hs::gui::HeadCircuit& c = card->circuit();
    QVERIFY2(c.patternError.isEmpty(), qPrintable(c.patternError));
    QVERIFY(c.pattern.n > 1);
    for (int q = 0; q < c.pattern.n; ++q) {
      double sum = 0;
      for (int k = 0; k < c.pattern.n; ++k)
        sum += c.pattern.weights[static_cast<size_t>(q * c.pattern.n + k)];
      QVERIFY(std::abs(sum - 1.0) < 1e-4);
    }
    QVERIFY(card->attention()->patternOf(head));
    // The OV circuit on the task's labels, against the weights.
    QVERIFY2(c.ovError.isEmpty(), qPrintable(c.ovError));
    const hs::gui::TaskPreview& p = w->taskDock()->preview();
    QCOMPARE(c.n(), static_cast<int>(p.labelWords.size()));
    hs::LoadedModel m = hs::loadModel("toy");
    const hs::ModelConfig& cfg = m.config;
    const hs::LayerWeights& lw = m.model->weights().layers[static_cast<size_t>(head.layer)];
    const at::Tensor wv = lw.wv.to(at::kDouble).view({cfg.n_kv_heads, cfg.d_head, cfg.d_model});
    const at::Tensor wo = lw.wo.to(at::kDouble).view({cfg.d_model, cfg.n_heads, cfg.d_head});
    const int kv = head.head / (cfg.n_heads / cfg.n_kv_heads);
    auto rms = [&](const at::Tensor& x, const at::Tensor& w) {
      return x / at::sqrt(x.pow(2).mean() + cfg.norm_eps) * w.to(at::kDouble);
    };
    for (int i = 0; i < c.n(); ++i) {
      const at::Tensor e = m.model->weights().tok_emb[c.labelIds[static_cast<size_t>(i)]].to(at::kDouble);
      const at::Tensor out = at::mv(wo.select(1, head.head), at::mv(wv[kv], rms(e, lw.attn_norm_w)));
      const at::Tensor logits = at::mv(m.model->weights().unembed.to(at::kDouble),
                                       rms(out, m.model->weights().final_norm_w));  // [vocab]
      for (int j = 0; j < c.n(); ++j) {
        const double want = logits[c.labelIds[static_cast<size_t>(j)]].item<double>();
        QVERIFY2(
            std::abs(c.ovAt(i, j) - want) < 1e-4 * std::max(1.0, std::abs(want)),
            qPrintable(QString("ov[%1][%2] = %3, expected %4").arg(i).arg(j).arg(c.ovAt(i, j)).arg(want)));
      }
      // The top promoted token is the row's largest logit.
      const int64_t best = logits.argmax().item<int64_t>();
      QCOMPARE(c.promoted[static_cast<size_t>(i)].front().id, static_cast<int>(best));
    }
    QCOMPARE(card->ovView()->grid().layers(), c.n());
    // Clicking another head on the Heads tab moves the card (it follows the selection).
    w->headsView()->setSelection({{3, 0}});
    QCOMPARE(card->head(), (HeadRef{3, 0}));
    QVERIFY(shown.wait(60000));  // its tab is shown: the engine is asked at once
    QCOMPARE(card->circuit().head, (HeadRef{3, 0}));
    // Every tab at 1280 × 800 draws without a painter on an empty buffer (the card's plots included).
    gMessages.clear();
    w->resize(1280, 800);
    const QtMessageHandler old = qInstallMessageHandler(collect);
    for (int tab = 0; tab < w->tabs()->count(); ++tab) {
      w->tabs()->setCurrentIndex(tab);
      settle();
    }
    qInstallMessageHandler(old);
    for (const QString& m : gMessages)
      QVERIFY2(!m.contains("QPainter::begin") && !m.contains("inactive painter"), qPrintable(m));
  }

  // The Agreement tab on the toy model's runs: one row per grid of the model's shape; each cell's Spearman ρ
  // and Jaccard@k equal a direct computation over the live heads; a double-click compares the two grids on
  // the Heads tab.
  void agreementMatrixEqualsDirectComputation() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    // A second ranking of another method: the TSLA run's grids join the matrix when they arrive.
    QSignalSpy grids(w.get(), &MainWindow::gridsShown);
    QVERIFY(w->runAnalysis("tsla", {{"curves", false}, {"perturbation", false}, {"induction_sequences", 8}}));
    QVERIFY(grids.wait(240000));
    AgreementMatrix* m = w->workspaceViews()->agreement();
    const std::vector<hs::AnalysisRun> runs = w->runs();
    const std::vector<HeadRef>& silent = w->modelInfo().silent;
    int expected = 0;
    for (const hs::AnalysisRun& r : runs)
      expected += static_cast<int>(r.grids.size());
    QCOMPARE(m->count(), expected);
    QVERIFY(m->count() >= 4);
    QCOMPARE(m->liveHeads(), 32 - static_cast<int>(silent.size()));
    m->setK(4);
    QCOMPARE(m->kUsed(), 4);
    const int i = m->indexOf("induction-1/induction.prefix_matching");
    QVERIFY(i >= 0);
    for (int j = 0; j < m->count(); ++j) {
      const HeadGrid* a = gridByKey(runs, m->entry(i).key);
      const HeadGrid* b = gridByKey(runs, m->entry(j).key);
      QVERIFY(a && b);
      const hs::RankAgreement& s = m->agreement(i, j);
      const double rho = spearmanLive(*a, *b, silent);
      if (std::isfinite(rho)) QVERIFY2(std::abs(s.spearman - rho) < 1e-12, qPrintable(m->entry(j).key));
      const HeadGrid la = hs::withoutHeads(*a, silent), lb = hs::withoutHeads(*b, silent);
      QCOMPARE(s.jaccard, hs::jaccardAtK(la, lb, 4));
      QCOMPARE(m->agreement(j, i).spearman, s.spearman);  // symmetric
      QVERIFY(m->cellToolTip(i, j).contains("hypergeometric"));
      QVERIFY(m->cellToolTip(i, j).contains("Fisher"));
    }
    // The cell shows the chosen statistic.
    const int j = (i + 1) % m->count();
    m->setStatistic(AgreementMatrix::Statistic::Spearman);
    QCOMPARE(m->table()->item(i, j)->text(), QString::number(m->agreement(i, j).spearman, 'f', 2));
    m->setStatistic(AgreementMatrix::Statistic::Jaccard);
    QCOMPARE(m->table()->item(i, j)->text(), QString::number(m->agreement(i, j).jaccard, 'f', 2));
    // A cell opens the scatter of its two grids, quietly: no painter on a plot not laid out yet.
    w->resize(1280, 800);
    w->tabs()->setCurrentWidget(m);
    settle();
    gMessages.clear();
    const QtMessageHandler old = qInstallMessageHandler(collect);
    Q_EMIT m->table()->cellActivated(i, j);
    settle();
    qInstallMessageHandler(old);
    for (const QString& msg : gMessages)
      QVERIFY2(!msg.contains("QPainter") && !msg.contains("inactive painter"), qPrintable(msg));
    QCOMPARE(w->tabs()->currentWidget(), static_cast<QWidget*>(w->headsTab()));
    QCOMPARE(w->headsTab()->currentMetric(), m->entry(i).key);
    QVERIFY(w->headsTab()->comparing());
    QCOMPARE(w->headsTab()->compareMetric(), m->entry(j).key);
  }

  // A session saved and reopened restores every tab: the typed prompt and its lens toggles, the Attention
  // tab's prompt, the head selection, the Evaluation dock's result, the Head card's head, the agreement's
  // statistic and k, the Prompts tab's source, filter and sort. Checked on the state and on every tab's
  // grab (and the Evaluation dock's), before and after, at the same window size; and the Attention tab's
  // query.
  void everyTabLooksTheSameAfterReopening() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(1600, 1000);
    QTRY_VERIFY_WITH_TIMEOUT(w->taskDock()->preview().prompts.size() > 3, 60000);
    const QStringList prompts = w->taskDock()->preview().prompts;
    w->setPromptText(prompts[3]);
    w->runPrompt();
    w->promptTab()->lensMeasureBox()->setCurrentIndex(1);
    w->attentionTab()->choosePrompt(2);
    w->interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, {{3, 6}});
    QSignalSpy evaluated(w.get(), &MainWindow::evaluationShown);
    w->evaluate();
    QVERIFY(evaluated.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 60000);
    w->headsView()->setSelection({{1, 3}, {3, 3}});  // the card follows the first; Attention shows both
    QTRY_VERIFY_WITH_TIMEOUT(w->attentionTab()->shownCount() == 2, 60000);
    w->attentionTab()->setQueryPosition(9);  // a token clicked on the Attention tab's strip
    hs::gui::WorkspaceViews* views = w->workspaceViews();
    QCOMPARE(views->headCard()->head(), (HeadRef{1, 3}));
    views->agreement()->setStatistic(AgreementMatrix::Statistic::Jaccard);
    views->agreement()->setK(3);
    hs::gui::PromptSlices* slices = views->promptSlices();
    QString evalRun;
    for (const hs::AnalysisRun& r : w->runs())
      if (r.method == "evaluate") evalRun = QString::fromStdString(r.id);
    QVERIFY(slices->setSource(evalRun + "/evaluate.prompts"));
    slices->setFilter("icl", "set");
    slices->sortBy("p_answer_after", Qt::DescendingOrder);
    const int shownRows = slices->rowCount();
    QVERIFY(shownRows > 0 && shownRows < slices->totalRows());
    // Every tab once, so what each asks the engine for (patterns, the card's circuit) has arrived.
    for (int i = 0; i < w->tabs()->count(); ++i)
      grabTab(*w, i);
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy() && views->headCard()->circuit().head == (HeadRef{1, 3}), 60000);
    w->tabs()->setCurrentWidget(w->headsTab());
    std::vector<QImage> before;
    for (int i = 0; i < w->tabs()->count(); ++i)
      before.push_back(grabTab(*w, i));
    const QImage dockBefore = w->evaluationDock()->grab().toImage();
    w->tabs()->setCurrentWidget(w->headsTab());
    QTemporaryDir dir;
    const QString path = dir.filePath("workspace.hscope");
    QVERIFY2(w->saveSessionTo(path), qPrintable(w->lastError()));

    MainWindow w2;  // no model: the session loads the toy model
    w2.setInteractive(false);
    w2.resize(1600, 1000);
    w2.show();
    QSignalSpy shown(&w2, &MainWindow::promptShown);
    QVERIFY2(w2.openSession(path), qPrintable(w2.lastError()));
    QVERIFY(shown.count() > 0 || shown.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w2.isBusy() && !w2.taskDock()->preview().prompts.isEmpty(), 60000);
    hs::gui::WorkspaceViews* views2 = w2.workspaceViews();
    QCOMPARE(w2.tabs()->currentWidget(), static_cast<QWidget*>(w2.headsTab()));
    QCOMPARE(views2->headCard()->head(), (HeadRef{1, 3}));
    QCOMPARE(views2->agreement()->statistic(), AgreementMatrix::Statistic::Jaccard);
    QCOMPARE(views2->agreement()->k(), 3);
    QVERIFY(w2.attentionTab()->queryChosen());
    QCOMPARE(w2.attentionTab()->queryPosition(), 9);
    hs::gui::PromptSlices* slices2 = views2->promptSlices();
    QTRY_COMPARE_WITH_TIMEOUT(slices2->source(), evalRun + "/evaluate.prompts", 60000);
    QCOMPARE(slices2->filterText(), QString("icl"));
    QCOMPARE(slices2->filterColumn(), QString("set"));
    QCOMPARE(slices2->sortColumn(), QString("p_answer_after"));
    QCOMPARE(slices2->sortOrder(), Qt::DescendingOrder);
    QCOMPARE(slices2->rowCount(), shownRows);
    // Each tab, as drawn: what arrives from the engine (patterns, the lens, the card's circuit) may take a
    // moment; a difference that stays is a state the session lost. The images are kept on failure.
    const QString keep = QDir::temp().filePath("headscope-reopen-grabs");
    for (int i = 0; i < w2.tabs()->count(); ++i) {
      const QString name = w2.tabs()->tabText(i).remove('&');
      int64_t diff = 0;
      for (int tries = 0; tries < 300; ++tries) {
        diff = differingPixels(before[static_cast<size_t>(i)], grabTab(w2, i));
        if (diff == 0) break;
        QTest::qWait(100);
      }
      if (diff != 0) {
        QDir().mkpath(keep);
        before[static_cast<size_t>(i)].save(keep + "/" + name + "-before.png");
        grabTab(w2, i).save(keep + "/" + name + "-after.png");
      }
      QVERIFY2(
          diff == 0,
          qPrintable(QString("tab %1: %2 pixels differ after reopening (%3)").arg(name).arg(diff).arg(keep)));
    }
    QTRY_COMPARE_WITH_TIMEOUT(differingPixels(dockBefore, w2.evaluationDock()->grab().toImage()), int64_t{0},
                              30000);
    QVERIFY(!w2.isDirty());
  }

  // The run diff on synthetic runs: differing options highlighted, grid A − B, curves A, B and A − B.
  void runDiffOnSyntheticRuns() {
    hs::AnalysisRun a, b;
    a.id = "induction-1";
    b.id = "induction-2";
    a.method = b.method = "induction";
    a.provenance.model = b.provenance.model = "toy";
    a.options = {{"n", 16}, {"seed", 1}, {"task", {{"dataset", "toy:copy_a"}, {"shots", 8}}}};
    b.options = {{"n", 16}, {"seed", 2}, {"task", {{"dataset", "toy:copy_a"}, {"shots", 4}}}};
    std::vector<double> va(6), vb(6);
    for (int i = 0; i < 6; ++i) {
      va[i] = 0.1 * i;
      vb[i] = 1.0 - 0.3 * i;
    }
    vb[4] = NAN;
    a.grids = {grid("induction.prefix_matching", 2, 3, va), grid("only.a", 2, 3, va)};
    b.grids = {grid("induction.prefix_matching", 2, 3, vb)};
    hs::Curve ca, cb;
    ca.id = cb.id = "acc";
    ca.x = {0, 1, 2, 3};
    cb.x = {1, 2, 3, 4};
    ca.series = {{"icl", {0.5, 0.6, 0.7, 0.8}}, {"zero", {0.1, 0.1, 0.1, 0.1}}};
    cb.series = {{"icl", {0.4, 0.4, 0.9, 1.0}}};
    a.curves = {ca};
    b.curves = {cb};
    hs::gui::RunDiffView view;
    view.resize(1200, 700);
    view.setRuns({a, b});
    QVERIFY(view.setPair("induction-1", "induction-2"));
    QCOMPARE(view.differingOptions(), (QStringList{"seed", "task.shots"}));
    QCOMPARE(view.commonGrids(), QStringList{"induction.prefix_matching"});
    const HeadGrid& d = view.difference();
    QCOMPARE(d.layers(), 2);
    QCOMPARE(d.heads(), 3);
    for (int i = 0; i < 6; ++i) {
      const double got = d.values(i / 3, i % 3), want = va[i] - vb[i];
      if (i == 4)
        QVERIFY(std::isnan(got));
      else
        QCOMPARE(got, want);
    }
    QCOMPARE(view.differenceView()->grid().values(0, 1), va[1] - vb[1]);
    // The overlay: A's two series and B's one on x 0..4; the difference at the shared x 1, 2, 3 for "icl".
    const hs::Curve& o = view.overlay();
    QCOMPARE(o.x, (std::vector<double>{0, 1, 2, 3, 4}));
    QCOMPARE(o.series.size(), size_t(3));
    QCOMPARE(o.series[2].first, std::string("B: icl"));
    QVERIFY(std::isnan(o.series[2].second[0]));
    QCOMPARE(o.series[2].second[4], 1.0);
    const hs::Curve& cd = view.curveDiff();
    QCOMPARE(cd.x, (std::vector<double>{1, 2, 3}));
    QCOMPARE(cd.series.size(), size_t(1));
    QVERIFY(std::abs(cd.series[0].second[0] - (0.6 - 0.4)) < 1e-12);
    QVERIFY(std::abs(cd.series[0].second[2] - (0.8 - 0.9)) < 1e-12);
    // Swapping the pair negates the difference.
    QVERIFY(view.setPair("induction-2", "induction-1"));
    QCOMPARE(view.difference().values(0, 2), vb[2] - va[2]);
  }

  // The run diff in the window: two induction runs of the toy model with different seeds, compared from the
  // View menu's entry; the grid shown is run A's minus run B's.
  void runDiffInTheWindow() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QSignalSpy grids(w.get(), &MainWindow::gridsShown);
    QVERIFY(w->runAnalysis("induction", {{"seed", 2}}));
    QVERIFY(grids.wait(120000));
    hs::gui::RunDiffDialog* dialog = w->workspaceViews()->compareRuns("induction-1", "induction-2");
    QVERIFY(dialog);
    hs::gui::RunDiffView* view = dialog->view();
    QCOMPARE(view->runA(), QString("induction-1"));
    QCOMPARE(view->runB(), QString("induction-2"));
    QVERIFY(view->differingOptions().contains("seed"));
    QVERIFY(view->setGrid("induction.prev_token"));
    const std::vector<hs::AnalysisRun> runs = w->runs();
    const HeadGrid* a = gridByKey(runs, "induction-1/induction.prev_token");
    const HeadGrid* b = gridByKey(runs, "induction-2/induction.prev_token");
    QVERIFY(a && b);
    for (int l = 0; l < a->layers(); ++l)
      for (int h = 0; h < a->heads(); ++h)
        QCOMPARE(view->difference().values(l, h), a->values(l, h) - b->values(l, h));
    // Both runs are the loaded model's: its silent heads are hatched in A − B, as on the Heads tab.
    const std::vector<HeadRef>& silent = w->modelInfo().silent;
    QVERIFY(!silent.empty());
    QCOMPARE(view->differenceView()->silentHeads(), silent);
    QCOMPARE(view->differenceView()->hatchCount(), static_cast<int>(silent.size()));
    dialog->close();
  }

  // The Prompts tab on an evaluate run: its per-prompt table filtered, sorted and exported as shown; a row's
  // prompt is the run's prompt record, decoded by the worker, equal to the task's prompt of that index, and
  // a double-click opens it on the Prompt tab.
  void promptSlicesFilterSortExportOpen() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QSignalSpy evaluated(w.get(), &MainWindow::evaluationShown);
    w->interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, {{3, 2}, {1, 1}});
    w->evaluate();
    QVERIFY(evaluated.wait(120000));
    hs::gui::PromptSlices* slices = w->workspaceViews()->promptSlices();
    const std::vector<hs::AnalysisRun> runs = w->runs();
    const hs::AnalysisRun* run = nullptr;
    for (const hs::AnalysisRun& r : runs)
      if (r.method == "evaluate") run = &r;
    QVERIFY(run);
    const QString id = QString::fromStdString(run->id);
    QVERIFY(slices->sources().contains(id + "/prompts"));  // every run's prompt records
    QVERIFY(slices->setSource(id + "/evaluate.prompts"));
    const hs::Table* table = nullptr;
    for (const hs::Table& t : run->tables)
      if (t.id == "evaluate.prompts") table = &t;
    QVERIFY(table);
    QCOMPARE(slices->totalRows(), static_cast<int>(table->rows.size()));
    QCOMPARE(slices->rowCount(), slices->totalRows());
    // Filter: the zero-shot rows only.
    int zeroShot = 0;
    for (const auto& row : table->rows)
      zeroShot += row[0] == "zero_shot" ? 1 : 0;
    slices->setFilter("zero_shot", "set");
    QCOMPARE(slices->rowCount(), zeroShot);
    for (int r = 0; r < slices->rowCount(); ++r)
      QCOMPARE(slices->cell(r, "set"), QString("zero_shot"));
    slices->setFilter("icl", "set");
    QCOMPARE(slices->rowCount(), static_cast<int>(table->rows.size()) - zeroShot);
    // Sort: the answer's probability after the interventions, largest first, as numbers.
    slices->sortBy("p_answer_after", Qt::DescendingOrder);
    for (int r = 1; r < slices->rowCount(); ++r)
      QVERIFY(slices->cell(r - 1, "p_answer_after").toDouble() >=
              slices->cell(r, "p_answer_after").toDouble());
    // Export: the rows as shown.
    QTemporaryDir dir;
    const QString csv = dir.filePath("icl.csv");
    QVERIFY(slices->exportCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), slices->rowCount() + 1);
    QCOMPARE(lines[0], slices->columns().join(','));
    QCOMPARE(lines[1].section(',', 1, 1), slices->cell(0, "index"));
    // The first shown row's prompt: the task's ICL prompt of its index, decoded from the run's record.
    QTRY_VERIFY_WITH_TIMEOUT(!slices->promptOf(0).isEmpty(), 60000);
    const int index = slices->cell(0, "index").toInt();
    const QStringList prompts = w->taskDock()->preview().prompts;
    QVERIFY(index < prompts.size());
    QCOMPARE(slices->promptOf(0), prompts[index]);
    Q_EMIT slices->view()->activated(slices->view()->model()->index(0, 0));
    QCOMPARE(w->tabs()->currentWidget(), static_cast<QWidget*>(w->promptTab()));
    QCOMPARE(w->promptText(), prompts[index]);
  }
};

QTEST_MAIN(TestWorkspaceViews)
#include "test_workspace_views.moc"
