// The workbench on the toy model, driven like a user: click and Ctrl-click heads, add interventions from
// the heatmap's menu, evaluate with the top induction heads ablated, export the plot, cancel a long job,
// and keep the event loop responsive while the worker computes.
#include <QAction>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QListWidget>
#include <QSet>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <cmath>

#include "evaluation_dock.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "qcustomplot_include.h"
#include "results/rank_stats.h"
#include "results_tab.h"

using hs::HeadGridView;
using hs::HeadRef;
using hs::gui::InterventionEntry;
using hs::gui::MainWindow;

class TestWorkbench : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_workbench"); }

  // `headscope` with no arguments: the toy model and real heatmaps of its 4 × 8 heads; the task preview
  // shows the exact ids of the first ICL prompt with a role per token.
  void startShowsToyHeatmapsAndTaskPreview() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QCOMPARE(w->modelInfo().layers, 4);
    QCOMPARE(w->modelInfo().heads, 8);
    const hs::HeadGrid& g = w->headsView()->grid();
    QCOMPARE(g.layers(), 4);
    QCOMPARE(g.heads(), 8);
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 8; ++h)
        QVERIFY(std::isfinite(g.values(l, h)) && g.values(l, h) >= 0 && g.values(l, h) <= 1);
    // Every grid of the run is selectable as a metric.
    QVERIFY(w->headsTab()->metricKeys().contains("induction-1/induction.prefix_matching"));
    QVERIFY(w->headsTab()->metricKeys().contains("induction-1/induction.prev_token"));
    // Geometry / task-vector panels wait for their analyses.
    QVERIFY(!w->geometryTab()->isFilled(0));
    QVERIFY(!w->taskVectorsTab()->isFilled(0));

    QSignalSpy preview(w.get(), &MainWindow::taskPreviewShown);
    if (w->taskDock()->preview().ids.empty()) QVERIFY(preview.wait(20000));
    const hs::gui::TaskPreview& p = w->taskDock()->preview();
    QVERIFY2(p.error.isEmpty(), qPrintable(p.error));
    QVERIFY(p.classification);
    QCOMPARE(p.roles.size(), p.pieces.size());
    QCOMPARE(static_cast<int>(p.ids.size()), p.pieces.size());
    QCOMPARE(p.roles.count("label"), 8);  // one label token per demonstration (toy labels are one token)
    QVERIFY(p.roles.contains("input"));
  }

  // SITE and LTV train through the model on the engine thread (autograd must be available there) and fill
  // the Task-vectors tab: α grid, LTV accuracy vs layer, the SITE loss curve, and the live training loss.
  void taskVectorMethodsTrainOnTheWorker() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    hs::TaskSpec antonym;
    antonym.dataset = "toy:antonym_a";
    antonym.shots = 10;
    antonym.n_prompts = 20;
    const nlohmann::json task = hs::taskSpecToJson(antonym);
    w->runAnalysis("site", {{"steps", 40}}, task);
    w->runAnalysis("ltv", {{"steps", 60}, {"layers", {2}}, {"configs", false}}, task);
    hs::gui::ResultsTab* tv = w->taskVectorsTab();
    QTRY_VERIFY2_WITH_TIMEOUT(tv->isFilled(tv->panelIndex("ltv.accuracy_vs_layer")) || !w->lastError().isEmpty(),
                              "LTV did not arrive", 120000);
    QVERIFY2(w->lastError().isEmpty(), qPrintable(w->lastError()));
    QVERIFY(tv->isFilled(tv->panelIndex("site.alpha")));
    QVERIFY(tv->isFilled(tv->panelIndex("site.loss")));
    QVERIFY(!tv->isFilled(tv->panelIndex("fv.accuracy_vs_layer")));  // FV has not run
    QVERIFY(w->headsTab()->metricKeys().contains("site-1/site.alpha"));
    // The loss reached the UI thread while training: the live curve holds the last trained layer's steps.
    const hs::Curve& live = tv->liveCurve();
    QCOMPARE(live.series.size(), size_t(1));
    QCOMPARE(live.series.front().first, std::string("ltv.loss_l2"));
    QVERIFY(live.x.size() >= 25);
    QCOMPARE(live.x.front(), 1.0);
    QCOMPARE(live.series.front().second.size(), live.x.size());
  }

  // Click selects one head, Ctrl-click adds a second; each menu action adds that kind for the selection.
  void clickSelectsAndMenuAddsInterventions() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    HeadGridView* v = w->headsView();
    QTest::mouseClick(v->plot(), Qt::LeftButton, {}, v->cellCenter({2, 5}));
    QCOMPARE(v->selection(), (std::vector<HeadRef>{{2, 5}}));
    QTest::mouseClick(v->plot(), Qt::LeftButton, Qt::ControlModifier, v->cellCenter({0, 1}));
    QCOMPARE(v->selection(), (std::vector<HeadRef>{{0, 1}, {2, 5}}));

    v->menuAction(HeadGridView::MenuAction::ZeroAblate)->trigger();
    std::vector<InterventionEntry> e = w->interventionsDock()->entries();
    QCOMPARE(e.size(), size_t(2));
    QCOMPARE(e[0].kind, hs::gui::InterventionKind::ZeroAblate);
    QCOMPARE(e[0].head, (HeadRef{0, 1}));
    QCOMPARE(e[1].head, (HeadRef{2, 5}));

    QTest::mouseClick(v->plot(), Qt::LeftButton, {}, v->cellCenter({3, 7}));
    v->menuAction(HeadGridView::MenuAction::MeanAblate)->trigger();
    v->menuAction(HeadGridView::MenuAction::PatchFromClean)->trigger();
    v->menuAction(HeadGridView::MenuAction::AddToSteering)->trigger();
    v->menuAction(HeadGridView::MenuAction::ZeroAblate)->trigger();  // a new head for zero-ablate
    v->menuAction(HeadGridView::MenuAction::ZeroAblate)->trigger();  // ... but not twice
    e = w->interventionsDock()->entries();
    QCOMPARE(e.size(), size_t(6));
    using K = hs::gui::InterventionKind;
    const std::vector<K> kinds = {K::ZeroAblate, K::ZeroAblate, K::MeanAblate,
                                  K::PatchClean, K::Steer,      K::ZeroAblate};
    for (size_t i = 2; i < e.size(); ++i) {
      QCOMPARE(e[i].kind, kinds[i]);
      QCOMPARE(e[i].head, (HeadRef{3, 7}));
    }
    // The checkbox disables an entry; Remove drops it.
    w->interventionsDock()->setEnabled(0, false);
    QVERIFY(!w->interventionsDock()->entries()[0].enabled);
    w->interventionsDock()->removeRow(0);
    QCOMPARE(w->interventionsDock()->entries().size(), size_t(5));
    QCOMPARE(w->interventionsDock()->list()->count(), 5);
    QVERIFY(w->isDirty());

    // "Show attention pattern" shows that head on the Attention tab.
    QSignalSpy pattern(w.get(), &MainWindow::patternShown);
    v->setMenuHead(HeadRef{1, 4});
    v->menuAction(HeadGridView::MenuAction::ShowPattern)->trigger();
    // An earlier click may still deliver its pattern first: wait for this head's.
    QTRY_COMPARE_WITH_TIMEOUT(w->pattern().head, (HeadRef{1, 4}), 20000);
    QCOMPARE(w->tabs()->currentIndex(), int(MainWindow::AttentionTabIndex));
  }

  // Zero-ablating the 3 heads with the highest induction score lowers ICL accuracy on a copying task
  // (toy:copy_a, "x → x", which the model solves by copying from the demonstrations); the baseline is the
  // same in both evaluations.
  void ablatingTopInductionHeadsLowersAccuracy() {
    QString error;
    auto w = hs::test::toyWindow(48, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    QVERIFY(w->headsTab()->setCurrentMetric("induction-1/induction.prefix_matching"));
    hs::HeadGrid low = w->headsView()->grid();
    low.values = -low.values;
    auto evaluateWith = [&](const std::vector<HeadRef>& heads) {
      w->interventionsDock()->clear();
      w->interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, heads);
      QSignalSpy done(w.get(), &MainWindow::evaluationShown);
      w->evaluate();
      if (!done.wait(60000)) qWarning("evaluation did not finish: %s", qPrintable(w->lastError()));
      return *w->evaluationDock()->result();
    };
    w->headsView()->selectTopK(3);
    const hs::gui::EvalResult top = evaluateWith(w->headsView()->selection());
    const hs::gui::EvalResult bottom = evaluateWith(hs::topHeads(low, 3));
    qInfo(
        "ICL accuracy: baseline %.3f, top-3 induction heads ablated %.3f, bottom-3 ablated %.3f; "
        "TR ratio %.3f -> %.3f",
        top.icl.accuracy, top.iclIntervened.accuracy, bottom.iclIntervened.accuracy, top.icl.trRatio,
        top.iclIntervened.trRatio);
    QCOMPARE(top.icl.n, 48);
    QCOMPARE(top.nAblated, 3);
    QCOMPARE(top.icl.accuracy, bottom.icl.accuracy);
    QVERIFY(top.icl.accuracy > 0.5);  // the toy model does the task in context
    QVERIFY(top.iclIntervened.accuracy < top.icl.accuracy);
    // No patches: the zero-shot prompts are untouched.
    QCOMPARE(top.zeroShotIntervened.accuracy, top.zeroShot.accuracy);
    QVERIFY(w->evaluationDock()->table()->item(0, 2)->text().startsWith("-"));
  }

  // The heatmap exports to PNG (not blank), SVG (with the axis labels) and PDF (a real PDF of some size).
  void exportWritesPlotFiles() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QTemporaryDir dir;
    hs::ExportOptions o;
    o.width = 640;
    o.height = 480;
    o.dpi = 96;
    const QString png = dir.filePath("heads.png"), svg = dir.filePath("heads.svg"),
                  pdf = dir.filePath("heads.pdf");
    QVERIFY2(w->exportCurrentPlot(png, o), qPrintable(w->lastError()));
    o.format = hs::ExportFormat::Svg;
    QVERIFY2(w->exportCurrentPlot(svg, o), qPrintable(w->lastError()));
    o.format = hs::ExportFormat::Pdf;
    QVERIFY2(w->exportCurrentPlot(pdf, o), qPrintable(w->lastError()));

    const QImage img(png);
    QCOMPARE(img.size(), QSize(640, 480));
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 4)
      for (int x = 0; x < img.width(); x += 4)
        colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString("only %1 colours").arg(colours.size())));

    QFile s(svg);
    QVERIFY(s.open(QIODevice::ReadOnly));
    const QByteArray svgText = s.readAll();
    QVERIFY(svgText.contains("<svg"));
    QVERIFY(svgText.contains("layer"));
    QVERIFY(svgText.contains("head"));

    QFile p(pdf);
    QVERIFY(p.open(QIODevice::ReadOnly));
    const QByteArray pdfBytes = p.readAll();
    QVERIFY(pdfBytes.startsWith("%PDF"));
    QVERIFY2(pdfBytes.size() > 4000, qPrintable(QString::number(pdfBytes.size())));

    // Data: the shown grid as CSV, one row per layer.
    const QString csv = dir.filePath("heads.csv");
    QVERIFY(w->exportCurrentData(csv));
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = c.readAll().trimmed().split('\n');
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[0], QByteArray("layer,h0,h1,h2,h3,h4,h5,h6,h7"));
  }

  // Cancel stops a long job within 2 s, and while it runs a 10 ms timer keeps ticking: no gap reaches half of
  // the 1.5 s watched (a job on the GUI thread would block it for all of them; a loaded machine alone delays
  // ticks by tens to a few hundred milliseconds).
  void cancelIsPromptAndTheUiStaysResponsive() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QSignalSpy cancelled(w.get(), &MainWindow::jobCancelled);
    w->runAnalysis("induction", {{"n", 1000000}});
    QTRY_VERIFY_WITH_TIMEOUT(w->isBusy(), 10000);

    QElapsedTimer clock;
    clock.start();
    qint64 last = 0, worst = 0;
    QTimer tick;
    tick.setInterval(10);
    connect(&tick, &QTimer::timeout, this, [&] {
      const qint64 now = clock.elapsed();
      worst = std::max(worst, now - last);
      last = now;
    });
    tick.start();
    QTest::qWait(1500);
    tick.stop();
    QVERIFY(w->isBusy());  // still computing: the timer ran alongside the job
    qInfo("largest gap between 10 ms ticks while the job ran: %lld ms", worst);
    QVERIFY2(worst < 750, qPrintable(QString("gap of %1 ms").arg(worst)));

    QElapsedTimer stop;
    stop.start();
    w->cancelJob();
    QVERIFY(cancelled.wait(5000));
    qInfo("cancel took %lld ms", stop.elapsed());
    QVERIFY(stop.elapsed() < 2000);
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 2000);
    QCOMPARE(w->outputs().size(), size_t(1));  // the cancelled run left nothing behind
    QVERIFY(w->lastError().isEmpty());
  }
};

QTEST_MAIN(TestWorkbench)
#include "test_workbench.moc"
