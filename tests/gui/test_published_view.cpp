// Published results in the GUI: the shipped published session imported next to a toy run (nothing of the
// session closed), the published Llama-3-8B grid beside the toy's grid with their own shapes and titles;
// the scatter's Spearman / Kendall / Jaccard@k against formulas written here; one line instead of a scatter
// for grids of different shapes; the Dynamics tab on the OLMo-2 training checkpoints (one column per
// checkpoint, a head's curve equal to the published files' values); the view state through a saved session.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "curve_view.h"
#include "dynamics_view.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "qcustomplot_include.h"
#include "scatter_compare.h"
#include "test_paths.h"

using hs::HeadRef;
using hs::gui::HeadsTab;
using hs::gui::MainWindow;

namespace {

QString shippedSession() {
  return QString::fromStdString(hs::test::sourceDir("resources/published/dual_route_final_models.hscope"));
}
const std::string kOlmo = "published/dual_route/causal_scores/OLMo-2-1124-7B";

// The key "<run id>/<grid id>" of `gridId` in the run of `model` imported as published results.
QString publishedKey(const MainWindow& w, const std::string& model, const std::string& gridId) {
  for (const hs::AnalysisRun& r : w.runs())
    if (r.method == "published" && r.provenance.model == model)
      for (const hs::HeadGrid& g : r.grids)
        if (g.id == gridId) return QString::fromStdString(r.id + "/" + g.id);
  return {};
}

std::vector<double> flat(const hs::HeadGrid& g) {  // layer-major
  std::vector<double> v;
  for (int l = 0; l < g.layers(); ++l)
    for (int h = 0; h < g.heads(); ++h)
      v.push_back(g.values(l, h));
  return v;
}

// Fractional ranks (ties share the mean of the ranks they span), 1 = smallest.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t t = i; t <= j; ++t)
      r[order[t]] = mean;
    i = j + 1;
  }
  return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n,
               mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  return pearson(ranks(a), ranks(b));
}

// τ-b = (C − D) / sqrt((n0 − n1)(n0 − n2)) over all pairs.
double kendallB(const std::vector<double>& a, const std::vector<double>& b) {
  double c = 0, d = 0, tiesA = 0, tiesB = 0, n0 = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j) {
      n0 += 1;
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0) tiesA += 1;
      if (db == 0) tiesB += 1;
      if (da * db > 0) c += 1;
      if (da * db < 0) d += 1;
    }
  return (c - d) / std::sqrt((n0 - tiesA) * (n0 - tiesB));
}

// |top-k(a) ∩ top-k(b)| / |top-k(a) ∪ top-k(b)|, largest first, ties to the lower flat index.
double jaccardTop(const std::vector<double>& a, const std::vector<double>& b, int k) {
  auto top = [k](const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] > v[y]; });
    return std::set<size_t>(order.begin(), order.begin() + k);
  };
  const std::set<size_t> ta = top(a), tb = top(b);
  size_t both = 0;
  for (size_t i : ta)
    both += tb.count(i);
  return static_cast<double>(both) / static_cast<double>(ta.size() + tb.size() - both);
}

}  // namespace

class TestPublishedView : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_published_view"); }

  // The shipped session joins a toy session: both kept, the published Llama-3-8B concept-copying grid
  // beside the toy's grid; a scatter of the two says in one line why it cannot be drawn.
  void publishedGridBesideAToyRun() {
    HS_REQUIRE_FILE(shippedSession().toStdString());
    QString error;
    auto w = hs::test::toyWindow(8, &error);
    QVERIFY2(w, qPrintable(error));
    const size_t toyRuns = w->runs().size();
    const QString toyKey = w->headsTab()->currentMetric();
    QVERIFY(!toyKey.isEmpty());
    QVERIFY2(w->importRuns({shippedSession()}), qPrintable(w->lastError()));
    QCOMPARE(w->runs().size(), toyRuns + 4);  // four published models, the toy run still there
    QCOMPARE(w->headsTab()->currentMetric(), toyKey);
    QVERIFY(w->isDirty());

    const QString llama = publishedKey(*w, "Meta-Llama-3-8B", "dual_route.concept_copying");
    QVERIFY(!llama.isEmpty());
    QVERIFY(w->headsTab()->compareKeys().contains(llama));
    // Another model's grid may be the shown metric too (issue 40), but never offers interventions.
    QVERIFY(w->headsTab()->metricKeys().contains(llama));
    QVERIFY(w->headsTab()->showsLoadedModel());

    w->headsTab()->setCompareMode(HeadsTab::CompareMode::SideBySide);
    w->headsTab()->setCompare(true, llama);
    QVERIFY(w->headsTab()->secondView()->isVisible());
    const hs::HeadGrid& toy = w->headsView()->grid();
    QCOMPARE(toy.layers(), 4);  // the toy model: 4 layers × 8 heads
    QCOMPARE(toy.heads(), 8);
    const hs::HeadGrid& pub = w->headsTab()->secondView()->grid();
    QCOMPARE(pub.layers(), 32);  // Llama-3-8B: 32 layers × 32 heads
    QCOMPARE(pub.heads(), 32);
    QCOMPARE(pub.id, std::string("dual_route.concept_copying"));
    const QString leftTitle = w->headsView()->titleText(),
                  rightTitle = w->headsTab()->secondView()->titleText();
    QVERIFY2(leftTitle.contains(toyKey.section('/', 0, 0)) && leftTitle.contains("toy"),
             qPrintable(leftTitle));
    QVERIFY2(leftTitle.contains(QString::fromStdString(toy.name)), qPrintable(leftTitle));
    QVERIFY2(rightTitle.contains("Meta-Llama-3-8B") && rightTitle.contains("Concept copying") &&
                 rightTitle.contains(llama.section('/', 0, 0)),
             qPrintable(rightTitle));
    // Each map has its own colour scale: the published ΔP range is not the toy's.
    QVERIFY(w->headsView()->colorMap()->dataRange() != w->headsTab()->secondView()->colorMap()->dataRange());
    // The other model's map asks for no interventions.
    QVERIFY(!w->headsTab()->secondView()->menuEnabled());

    w->headsTab()->setCompareMode(HeadsTab::CompareMode::Scatter);
    QVERIFY(w->headsTab()->compareMessageShown());
    QVERIFY(!w->headsTab()->scatter()->isVisible());
    const QString message = w->headsTab()->compareMessage();
    QVERIFY2(message.contains("4 × 8") && message.contains("32 × 32") && !message.contains('\n'),
             qPrintable(message));
    // Equal shapes again: the scatter, no message.
    w->headsTab()->setCompare(true, toyKey);
    QVERIFY(!w->headsTab()->compareMessageShown());
    QVERIFY(w->headsTab()->scatter()->isVisible() && w->headsTab()->scatter()->hasData());

    // Importing the same session again keeps everything, with fresh run ids.
    QVERIFY2(w->importRuns({shippedSession()}), qPrintable(w->lastError()));
    QCOMPARE(w->runs().size(), toyRuns + 8);
    std::set<std::string> ids;
    for (const hs::AnalysisRun& r : w->runs())
      QVERIFY2(ids.insert(r.id).second, r.id.c_str());
  }

  // Spearman, Kendall and Jaccard@k of the scatter against the formulas above, on published grids of
  // equal shape (Llama-3-8B vs Llama-2-7B concept copying; concept vs token copying on Llama-3-8B).
  void scatterStatisticsMatchTheFormulas() {
    HS_REQUIRE_FILE(shippedSession().toStdString());
    MainWindow w;  // no model: every run is in the metric picker
    w.setInteractive(false);
    w.show();
    QVERIFY2(w.importRuns({shippedSession()}), qPrintable(w.lastError()));
    const std::pair<QString, QString> pairs[] = {
        {publishedKey(w, "Meta-Llama-3-8B", "dual_route.concept_copying"),
         publishedKey(w, "Llama-2-7b-hf", "dual_route.concept_copying")},
        {publishedKey(w, "Meta-Llama-3-8B", "dual_route.concept_copying"),
         publishedKey(w, "Meta-Llama-3-8B", "dual_route.token_copying")}};
    for (const auto& [x, y] : pairs) {
      QVERIFY(!x.isEmpty() && !y.isEmpty());
      QVERIFY(w.headsTab()->setCurrentMetric(x));
      w.headsTab()->setCompareMode(HeadsTab::CompareMode::Scatter);
      w.headsTab()->jaccardKBox()->setValue(20);
      w.headsTab()->setCompare(true, y);
      const hs::ScatterCompare* s = w.headsTab()->scatter();
      QVERIFY(s->isVisible() && s->hasData());
      const std::vector<double> a = flat(*w.headsTab()->gridOf(x)), b = flat(*w.headsTab()->gridOf(y));
      QCOMPARE(a.size(), size_t(1024));
      const double rho = spearman(a, b), tau = kendallB(a, b), jac = jaccardTop(a, b, 20);
      qInfo("%s vs %s: rho %.6f tau %.6f J@20 %.4f", qPrintable(x), qPrintable(y), rho, tau, jac);
      QVERIFY2(std::abs(s->spearman() - rho) < 1e-9,
               qPrintable(QString("%1 vs %2").arg(s->spearman()).arg(rho)));
      QVERIFY2(std::abs(s->kendall() - tau) < 1e-9,
               qPrintable(QString("%1 vs %2").arg(s->kendall()).arg(tau)));
      QCOMPARE(s->k(), 20);
      QVERIFY2(std::abs(s->jaccardAtK() - jac) < 1e-12,
               qPrintable(QString("%1 vs %2").arg(s->jaccardAtK()).arg(jac)));
      QVERIFY(std::isfinite(rho) && std::abs(rho) < 1);  // two different metrics: not trivially 1
    }
  }

  // The OLMo-2 training checkpoints: one column per checkpoint folder, in step order, and a head's curve
  // equal to that head's score in each checkpoint's published file.
  void dynamicsFollowsAHeadAcrossCheckpoints() {
    const std::string dir = hs::test::sharedData(kOlmo);
    HS_REQUIRE_FILE(dir);
    // The checkpoints, read from the folder names ("stage1-step1000-tokens5B" → step 1000).
    std::map<double, QString> checkpoints;
    const QRegularExpression stepRe("step([0-9]+)");
    for (const QString& sub :
         QDir(QString::fromStdString(dir)).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
      const QRegularExpressionMatch m = stepRe.match(sub);
      if (m.hasMatch()) checkpoints[m.captured(1).toDouble()] = sub;
    }
    QVERIFY(checkpoints.size() >= 2);

    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY2(w.importRuns({QString::fromStdString(dir)}), qPrintable(w.lastError()));
    hs::gui::DynamicsTab* d = w.dynamicsTab();
    QVERIFY2(d->setCurrentSeries("OLMo-2-1124-7B/dual_route.concept_copying"),
             qPrintable(d->seriesKeys().join(", ")));
    w.tabs()->setCurrentIndex(MainWindow::DynamicsTabIndex);
    d->setTopK(16);
    QCOMPARE(d->heatmap()->grid().heads(), static_cast<int>(checkpoints.size()));  // columns = checkpoints
    QCOMPARE(d->heatmap()->grid().layers(), 16);                                   // rows = top 16 heads
    QCOMPARE(d->rowHeads().size(), size_t(16));

    // Clicking the fifth row adds its head's curve.
    d->setCurveHeads({});
    QApplication::processEvents();
    d->heatmap()->plot()->replot();
    const HeadRef head = d->rowHeads()[4];
    QTest::mouseClick(d->heatmap()->plot(), Qt::LeftButton, {}, d->heatmap()->cellCenter({4, 2}));
    QCOMPARE(d->curveHeads(), std::vector<HeadRef>{head});
    const hs::Curve& curve = d->curveView()->curve();
    QCOMPARE(curve.series.size(), size_t(1));
    QCOMPARE(curve.x.size(), checkpoints.size());

    // The published files are the oracle.
    size_t j = 0;
    for (const auto& [step, sub] : checkpoints) {
      QCOMPARE(curve.x[j], step);
      QFile f(QString::fromStdString(dir) + "/" + sub + "/concept_copying_len30_n256.json");
      QVERIFY(f.open(QIODevice::ReadOnly));
      double expected = std::nan("");
      for (const QJsonValue& e : QJsonDocument::fromJson(f.readAll()).array()) {
        const QJsonObject o = e.toObject();
        if (o["layer"].toInt() == head.layer && o["head_idx"].toInt() == head.head)
          expected = o["score"].toDouble();
      }
      QVERIFY2(
          std::abs(curve.series[0].second[j] - expected) <= 1e-12 * std::max(1.0, std::abs(expected)),
          qPrintable(QString("step %1: %2 vs %3").arg(step).arg(curve.series[0].second[j]).arg(expected)));
      QCOMPARE(d->heatmap()->grid().values(4, static_cast<Eigen::Index>(j)), curve.series[0].second[j]);
      ++j;
    }
    // The rows are the best heads at the last checkpoint, best first.
    const hs::HeadGrid& m = d->heatmap()->grid();
    for (int r = 1; r < m.layers(); ++r)
      QVERIFY(m.values(r - 1, m.heads() - 1) >= m.values(r, m.heads() - 1));
    // Clicking the row again removes the curve.
    QTest::mouseClick(d->heatmap()->plot(), Qt::LeftButton, {}, d->heatmap()->cellCenter({4, 0}));
    QVERIFY(d->curveHeads().empty());
  }

  // Compare mode, compared grid, Dynamics series, rows and curves come back from a saved session.
  void viewStateRoundTripsThroughASession() {
    const std::string dir = hs::test::sharedData(kOlmo);
    HS_REQUIRE_FILE(dir);
    HS_REQUIRE_FILE(shippedSession().toStdString());
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY2(w.importRuns({shippedSession(), QString::fromStdString(dir)}), qPrintable(w.lastError()));
    const QString llama = publishedKey(w, "Meta-Llama-3-8B", "dual_route.concept_copying");
    const QString olmo = publishedKey(w, "OLMo-2-1124-7B", "dual_route.token_copying");
    QVERIFY(!llama.isEmpty() && !olmo.isEmpty());
    QVERIFY(w.headsTab()->setCurrentMetric(olmo));
    w.headsTab()->setCompareMode(HeadsTab::CompareMode::SideBySide);
    w.headsTab()->setCompare(true, llama);
    hs::gui::DynamicsTab* d = w.dynamicsTab();
    QVERIFY(d->setCurrentSeries("OLMo-2-1124-7B/dual_route.token_copying"));
    d->setTopK(10);
    const std::vector<HeadRef> curves = {d->rowHeads()[1], d->rowHeads()[7], {0, 0}};
    d->setCurveHeads(curves);
    w.tabs()->setCurrentIndex(MainWindow::DynamicsTabIndex);

    QTemporaryDir tmp;
    const QString path = tmp.filePath("published.hscope");
    QVERIFY2(w.saveSessionTo(path), qPrintable(w.lastError()));

    MainWindow w2;
    w2.setInteractive(false);
    QVERIFY2(w2.openSession(path), qPrintable(w2.lastError()));
    QCOMPARE(w2.runs().size(), w.runs().size());
    QCOMPARE(w2.headsTab()->currentMetric(), olmo);
    QVERIFY(w2.headsTab()->comparing());
    QCOMPARE(w2.headsTab()->compareMetric(), llama);
    QVERIFY(w2.headsTab()->compareMode() == HeadsTab::CompareMode::SideBySide);
    QVERIFY(w2.headsTab()->secondView()->grid().values == w.headsTab()->secondView()->grid().values);
    QCOMPARE(w2.dynamicsTab()->currentSeriesKey(), QString("OLMo-2-1124-7B/dual_route.token_copying"));
    QCOMPARE(w2.dynamicsTab()->topK(), 10);
    QCOMPARE(w2.dynamicsTab()->curveHeads(), curves);
    QCOMPARE(w2.dynamicsTab()->curveView()->curve().series.size(), size_t(3));
    QCOMPARE(w2.tabs()->currentIndex(), static_cast<int>(MainWindow::DynamicsTabIndex));
  }
};

QTEST_MAIN(TestPublishedView)
#include "test_published_view.moc"
