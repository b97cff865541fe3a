// Published results in the GUI (app/gui/published_import.h, heads_tab.h, dynamics_tab.h):
// - File → Import published results adds the dual-route study's Llama-3-8B runs to a session holding a toy
//   induction run; its concept-copying grid is a metric like any other, and compared with the toy run's
//   (4 × 8 vs 32 × 32) it stands beside it as a second heatmap instead of a scatter. With
//   HEADSCOPE_SCREENSHOT_DIR set, the window is saved there as published_beside_toy.png (the docs' picture).
// - A published grid on the same model as a run of one's own (here a hand-made "published" toy grid) is
//   found by "Compare with published", and the scatter then ranks the two.
// - OLMo-2's training checkpoints become a learning-dynamics series: top-k heads as lines over the steps,
//   the grid at the chosen checkpoint beside them.
// - A bad file is one error and adds nothing; imported runs survive a session round trip.
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "curve_view.h"
#include "dynamics_tab.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "main_window.h"
#include "runs_dock.h"
#include "scatter_compare.h"
#include "test_paths.h"

using hs::gui::MainWindow;

namespace {

std::string published(const std::string& rel) {
  return hs::test::sharedData("published/dual_route/" + rel);
}

}  // namespace

class TestPublishedGui : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<MainWindow> w_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    hs::test::isolateSettings("test_published_gui");
    QString error;
    w_ = hs::test::toyWindow(8, &error);
    QVERIFY2(w_, qPrintable(error));
  }

  void publishedLlama3GridStandsBesideTheToyGrid() {
    HS_REQUIRE_FILE(published("causal_scores/Meta-Llama-3-8B/concept_copying_len30_n1024.json"));
    MainWindow& w = *w_;
    const size_t before = w.outputs().size();
    QVERIFY2(w.importRuns({QString::fromStdString(published("causal_scores/Meta-Llama-3-8B")),
                           QString::fromStdString(published("attention_scores/Meta-Llama-3-8B"))}),
             qPrintable(w.lastError()));
    QCOMPARE(w.outputs().size(), before + 1);
    QString pub;
    for (const hs::AnalysisRun& r : w.runs())
      if (r.method == "published") pub = QString::fromStdString(r.id);
    QVERIFY(!pub.isEmpty());
    hs::gui::HeadsTab& heads = *w.headsTab();
    QVERIFY(heads.setCurrentMetric(pub + "/dual_route.concept_copying"));
    QCOMPARE(heads.view()->grid().layers(), 32);
    QCOMPARE(hs::topHeads(heads.view()->grid(), 1).front(), (hs::HeadRef{13, 27}));  // the published top head
    heads.setCompare(true, "induction-1/dual_route.concept_copying");
    QVERIFY(heads.besideView()->isVisible());
    QVERIFY(!heads.scatter()->isVisible());
    QCOMPARE(heads.besideView()->grid().layers(), 4);
    QVERIFY(w.runsDock()->labels().join("\n").contains("published · Meta-Llama-3-8B"));
    if (qEnvironmentVariableIsSet("HEADSCOPE_SCREENSHOT_DIR")) {
      w.resize(1800, 960);
      w.tabs()->setCurrentIndex(MainWindow::HeadsTabIndex);
      QTest::qWait(500);
      const QString f = QDir(qEnvironmentVariable("HEADSCOPE_SCREENSHOT_DIR")).filePath("published_beside_toy.png");
      QVERIFY(w.grab().save(f));
      qInfo("wrote %s", qPrintable(f));
    }
  }

  void compareWithPublishedOnTheSameModel() {
    MainWindow& w = *w_;
    // A published-form concept-copying file for the "toy" model: the toy run's own grid, negated.
    const hs::HeadGrid* own = w.headsTab()->gridOf("induction-1/dual_route.concept_copying");
    QVERIFY(own);
    const std::string folder = dir_.filePath("causal_scores/toy").toStdString();
    std::filesystem::create_directories(folder);
    nlohmann::json list = nlohmann::json::array();
    for (int l = 0; l < own->layers(); ++l)
      for (int h = 0; h < own->heads(); ++h)
        list.push_back({{"layer", l}, {"head_idx", h}, {"score", -own->values(l, h)}});
    std::ofstream(folder + "/concept_copying_len30_n16.json") << list.dump();
    QVERIFY(w.importRuns({QString::fromStdString(folder)}));
    hs::gui::HeadsTab& heads = *w.headsTab();
    QVERIFY(heads.setCurrentMetric("induction-1/dual_route.concept_copying"));
    const QString other = heads.publishedCounterpart(heads.currentMetric());
    QVERIFY2(other.endsWith("/dual_route.concept_copying") && other.startsWith("published-"), qPrintable(other));
    auto* button = heads.findChild<QPushButton*>();
    QVERIFY(button);
    for (QPushButton* b : heads.findChildren<QPushButton*>())
      if (b->text() == "Compare with published") button = b;
    QVERIFY(button->isEnabled());
    button->click();
    QCOMPARE(heads.compareMetric(), other);
    QVERIFY(heads.scatter()->isVisible() && !heads.besideView()->isVisible());
    QVERIFY(heads.scatter()->hasData());
    QVERIFY(heads.scatter()->spearman() < -0.99);  // the negated grid ranks every head in reverse
    // A published grid has no published counterpart of its own.
    QVERIFY(heads.publishedCounterpart(other).isEmpty());
  }

  void olmoCheckpointsShowAsLearningDynamics() {
    HS_REQUIRE_FILE(published("causal_scores/OLMo-2-1124-7B"));
    MainWindow& w = *w_;
    QVERIFY(w.importRuns({QString::fromStdString(published("causal_scores/OLMo-2-1124-7B"))}));
    hs::gui::DynamicsTab& d = *w.dynamicsTab();
    const QStringList labels = d.seriesLabels();
    QVERIFY2(labels.size() == 2, qPrintable(labels.join("; ")));
    QVERIFY(d.setSeries(labels.filter("Concept copying").value(0)));
    d.setTopK(5);
    const hs::Curve& c = d.curveView()->curve();
    QCOMPARE(c.series.size(), size_t(5));
    QVERIFY(c.x == (std::vector<double>{150, 1000, 4000, 16000, 65000, 262000, 928646}));
    const hs::CheckpointSeries* s = d.current();
    QVERIFY(s);
    QCOMPARE(QString::fromStdString(c.series[0].first),
             QString("%1.%2").arg(s->topAtLast(1)[0].layer).arg(s->topAtLast(1)[0].head));
    d.setCheckpoint(0);
    QCOMPARE(d.gridView()->grid().layers(), 32);
    QCOMPARE(d.gridView()->grid().values(3, 4), s->values(3 * 32 + 4, 0));
    w.tabs()->setCurrentWidget(&d);
    QVERIFY(w.currentPlot() == d.plot());
    if (qEnvironmentVariableIsSet("HEADSCOPE_SCREENSHOT_DIR")) {
      d.setCheckpoint(6);
      QTest::qWait(300);
      const QString f = QDir(qEnvironmentVariable("HEADSCOPE_SCREENSHOT_DIR")).filePath("learning_dynamics.png");
      QVERIFY(w.grab().save(f));
    }
  }

  void badFilesAddNothingAndRunsSurviveASession() {
    MainWindow& w = *w_;
    const size_t before = w.outputs().size();
    const QString bad = dir_.filePath("notes.json");
    std::ofstream(bad.toStdString()) << R"({"hello": 1})";
    QVERIFY(!w.importRuns({bad}));
    QVERIFY(w.lastError().contains("not a published dual-route result"));
    QCOMPARE(w.outputs().size(), before);
    const QString path = dir_.filePath("with_published.hscope");
    QVERIFY(w.saveSessionTo(path));
    MainWindow other;
    other.setInteractive(false);
    QVERIFY(other.openSession(path));
    int published = 0;
    for (const hs::AnalysisRun& r : other.runs())
      published += r.method == "published";
    QCOMPARE(published, 1 + 1 + 8);  // Llama-3-8B, the hand-made toy file, OLMo-2's final model and checkpoints
    QCOMPARE(other.dynamicsTab()->seriesLabels().size(), 2);
  }
};

QTEST_MAIN(TestPublishedGui)
#include "test_published_gui.moc"
