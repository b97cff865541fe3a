// What a newcomer hit on the workbench, each as a test that failed before its fix, and the views researchers
// expect: the Prompt tab under ablations agrees with `headscope-cli logits --ablate`; the attention map is
// crisp with hover; a session opened at start shows its head; another model clears the old one's state;
// one intervention per head; stale evaluations are marked; exports honour the file name and size; no
// console noise, no save prompt for an untouched session; undo / redo; the glossary; direct logit
// attribution beside the Prompt tab.
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScreen>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolTip>
#include <QUndoStack>
#include <QtTest>

#include "analysis/framework/registry.h"
#include "attention_tab.h"
#include "curve_view.h"
#include "engine_worker.h"
#include "evaluation_dock.h"
#include "glossary.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "plot_style.h"
#include "prompt_slices.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "runs_dock.h"
#include "scatter_compare.h"
#include "test_paths.h"
#include "workspace_views.h"

using hs::HeadRef;
using hs::gui::InterventionKind;
using hs::gui::MainWindow;

#ifdef HEADSCOPE_CLI_PATH
#define HS_REQUIRE_CLI() \
  if (!QFile::exists(QString::fromStdString(hs::test::cliPath()))) QSKIP("headscope-cli has not been built")
#else
#define HS_REQUIRE_CLI() QSKIP("headscope-cli is not part of this build")
#endif

namespace {
QStringList& gMessages = hs::test::collectedMessages();
using hs::test::collect;
using hs::test::settle;
QString logText(MainWindow& w) {
  return w.findChild<QPlainTextEdit*>()->toPlainText();
}
}  // namespace

class TestFirstStart : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_first_start"); }
  void init() { QSettings().clear(); }

  // Bug 14: no "[*] placeholder" or "QPainter::begin" warnings on start and save; the start's own
  // analyses leave the session clean (nothing to save on quit).
  void quietStartAndCleanSession() {
    gMessages.clear();
    const QtMessageHandler old = qInstallMessageHandler(collect);
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    if (w) w->headsView()->setSelection({{0, 1}});  // a change while shown: the title marks it ([*])
    QTemporaryDir dir;
    const bool saved = w && w->saveSessionTo(dir.filePath("quiet.hscope"));
    qInstallMessageHandler(old);
    QVERIFY2(w, qPrintable(error));
    QVERIFY(saved);
    for (const QString& m : gMessages)
      QVERIFY2(!m.contains("[*]") && !m.contains("QPainter::begin"), qPrintable(m));
    auto fresh = hs::test::toyWindow(12, &error);
    QVERIFY2(fresh, qPrintable(error));
    QVERIFY(!fresh->isDirty());
  }

  // Bug 1: a session opened with no model loaded (`headscope RUN.hscope`) restores its head's pattern once
  // the model arrives — no "no model is loaded" error — and the title names the file. With a prompt the user
  // typed (a real model's case: the text is not the task's) the pattern is requested when the model arrives,
  // not only when the task's prompt replaces the text.
  void sessionAtStartShowsItsHead_data() {
    QTest::addColumn<bool>("typed");
    QTest::newRow("task's prompt") << false;
    QTest::newRow("typed prompt") << true;
  }
  void sessionAtStartShowsItsHead() {
    QFETCH(bool, typed);
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    const QString text = w->promptText();  // a toy-world text the toy tokenizer knows
    w->headsView()->setSelection({{3, 3}});
    QTemporaryDir dir;
    const QString path = dir.filePath("RUN.hscope");
    QVERIFY(w->saveSessionTo(path));
    w.reset();
    MainWindow w2;
    w2.setInteractive(false);
    if (typed) w2.setPromptText(text);  // typed, not taken from the task: the task preview leaves it alone
    QSignalSpy errors(&w2, &MainWindow::errorShown);
    QSignalSpy pattern(&w2, &MainWindow::patternShown);
    w2.show();
    QVERIFY2(w2.openSession(path), qPrintable(w2.lastError()));
    QVERIFY2(pattern.count() > 0 || pattern.wait(60000), "no pattern of the restored head arrived");
    QCOMPARE(errors.count(), 0);
    QCOMPARE(w2.pattern().head, (HeadRef{3, 3}));
    QVERIFY2(w2.pattern().n > 5, "the pattern is of the session's prompt, not an empty map");
    QCOMPARE(static_cast<int>(w2.pattern().pieces.size()), w2.pattern().n);
    QVERIFY2(w2.windowTitle().contains("RUN.hscope"), qPrintable(w2.windowTitle()));
  }

  // Bug 2: a remembered dataset of a real model (an FV JSON) does not follow the toy model: it starts on a
  // toy task, with no errors.
  void rememberedRealDatasetFallsBackOnTheToy() {
    const std::string fv = hs::test::sharedData("datasets/function_vectors/abstractive/antonym.json");
    HS_REQUIRE_FILE(fv);
    hs::TaskSpec spec;
    spec.dataset = fv;
    spec.n_prompts = 12;
    QSettings().setValue("task/spec", QString::fromStdString(hs::taskSpecToJson(spec).dump()));
    MainWindow w;
    w.setInteractive(false);
    w.setStartAnalyses({"induction", "tsla"});
    QSignalSpy errors(&w, &MainWindow::errorShown);
    QSignalSpy grids(&w, &MainWindow::gridsShown);
    w.openDefault();
    QVERIFY(grids.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.isBusy() && grids.count() >= 2, 120000);
    QCOMPARE(errors.count(), 0);
    QVERIFY(w.taskDock()->spec().dataset.rfind("toy:", 0) == 0);
    QVERIFY(!w.taskDock()->preview().pieces.contains("<pad>"));
  }

  // Bug 3: long run subtitles are elided, so the window's minimum width stays ≤ 1280 px; tabs scroll; a
  // restored geometry larger than the screen is fitted into it.
  void layoutFitsTheScreen() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    hs::AnalysisRun run;
    run.id = "tsla-1";
    run.method = "tsla";
    run.provenance.task =
        "/a/very/long/path/to/a/dataset/folder/that/goes/on/and/on/antonym_with_a_long_name.json";
    hs::Curve c;
    c.id = "tsla.alignment";
    c.x = {0, 1};
    c.series = {{"baseline", {0.1, 0.2}}};
    run.curves = {c};
    w->geometryTab()->setRuns({run});
    // Shown, so that the tab's layout (hidden pages are not laid out) reaches the window's minimum size.
    w->tabs()->setCurrentIndex(MainWindow::GeometryTabIndex);
    QApplication::processEvents();
    qInfo("minimum window size %d x %d", w->minimumSizeHint().width(), w->minimumSizeHint().height());
    // On failure: what takes the width (the docks and every tab's page).
    QStringList widths;
    for (QDockWidget* d : w->findChildren<QDockWidget*>())
      if (d->isVisible()) widths << QString("%1 %2").arg(d->windowTitle()).arg(d->minimumSizeHint().width());
    for (int i = 0; i < w->tabs()->count(); ++i)
      widths
          << QString("%1 %2").arg(w->tabs()->tabText(i)).arg(w->tabs()->widget(i)->minimumSizeHint().width());
    QVERIFY2(
        w->minimumSizeHint().width() <= 1280,
        qPrintable(
            QString("%1 px; minimum widths: %2").arg(w->minimumSizeHint().width()).arg(widths.join(", "))));
    QVERIFY(w->tabs()->usesScrollButtons());
    QSettings().setValue("window/geometry", [] {
      QMainWindow big;
      big.setGeometry(3000, 2000, 5000, 4000);
      return big.saveGeometry();
    }());
    MainWindow restored;
    restored.show();
    const QRect avail = restored.screen()->availableGeometry();
    QVERIFY2(avail.contains(restored.frameGeometry().topLeft()), "the window starts off-screen");
    QVERIFY(restored.width() <= std::max(avail.width(), restored.minimumSizeHint().width()));
  }

  // Bug 3 at 1024 × 700: where the full layout does not fit, the docks become tabs of one column, the
  // window fits, every dock is still there, and every shown button lies inside the window.
  void smallScreenTabsTheDocks() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->fitToScreen(QRect(0, 0, 1024, 700));
    settle();
    const QSize min = w->minimumSizeHint();
    QVERIFY2(min.width() <= 1024 && min.height() <= 700,
             qPrintable(QString("minimum %1 x %2").arg(min.width()).arg(min.height())));
    QVERIFY2(w->width() <= 1024 && w->height() <= 700,
             qPrintable(QString("window %1 x %2").arg(w->width()).arg(w->height())));
    auto* model = w->findChild<QDockWidget*>("ModelDock");
    QVERIFY(model && model->isVisible());
    const QList<QDockWidget*> tabs = w->tabifiedDockWidgets(model);
    QCOMPARE(tabs.size(), 4);  // Task, Interventions, Evaluation, Runs
    // Each tab in turn in front: its buttons, and the window's own, lie inside the window.
    int buttons = 0;
    for (QDockWidget* front : QList<QDockWidget*>{model} + tabs) {
      front->raise();
      settle();
      for (QPushButton* b : w->findChildren<QPushButton*>()) {
        QDockWidget* dock = nullptr;
        for (QWidget* p = b->parentWidget(); p && !dock; p = p->parentWidget())
          dock = qobject_cast<QDockWidget*>(p);
        const bool inGroup = dock == model || tabs.contains(dock);
        if (!b->isVisible() || (inGroup && dock != front))
          continue;  // hidden, or on a tab behind the front one
        ++buttons;
        const QRect r(b->mapTo(w.get(), QPoint(0, 0)), b->size());
        QVERIFY2(w->rect().contains(r),
                 qPrintable(QString("'%1' (with %2 in front) at %3,%4 %5x%6 outside the %7 x %8 window")
                                .arg(b->text(), front->objectName())
                                .arg(r.x())
                                .arg(r.y())
                                .arg(r.width())
                                .arg(r.height())
                                .arg(w->width())
                                .arg(w->height())));
      }
    }
    QVERIFY(buttons >= 5);
  }

  // Bug 4: the file name decides the format; SVG text is in view-box units; a PNG is the pixels asked
  // for; the selection frame is not part of the figure.
  void exportIsWhatWasAskedFor() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTemporaryDir dir;
    hs::ExportOptions o;  // format left at PNG
    o.width = 1011;
    o.height = 700;
    o.dpi = 300;
    QVERIFY(w->exportCurrentPlot(dir.filePath("fig.pdf"), o));
    QFile pdf(dir.filePath("fig.pdf"));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QVERIFY(pdf.readAll().startsWith("%PDF"));
    QVERIFY(w->exportCurrentPlot(dir.filePath("fig.png"), o));
    QCOMPARE(QImage(dir.filePath("fig.png")).size(), QSize(1011, 700));
    QVERIFY(w->exportCurrentPlot(dir.filePath("fig.svg"), o));
    QFile svg(dir.filePath("fig.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(svg.readAll());
    const QRegularExpression size("font-size=\"([0-9.]+)");
    int fonts = 0;
    for (auto it = size.globalMatch(text); it.hasNext(); ++fonts) {
      const double pt = it.next().captured(1).toDouble();
      QVERIFY2(pt >= 5 && pt <= 24,
               qPrintable(QString("font size %1 in a %2-unit view box").arg(pt).arg(1011 * 96 / 300)));
    }
    QVERIFY(fonts > 3);
    o.dpi = 96;
    w->headsView()->clearSelection();
    QVERIFY(w->exportCurrentPlot(dir.filePath("a.png"), o));
    w->headsView()->setSelection({{1, 1}, {2, 2}});
    QVERIFY(w->exportCurrentPlot(dir.filePath("b.png"), o));
    QCOMPARE(QImage(dir.filePath("b.png")), QImage(dir.filePath("a.png")));
  }

  // Bug 5 and the Done-when check: the Prompt tab with three induction heads ablated shows the answer
  // probability `headscope-cli logits … --ablate` gives on the same prompt.
  void promptTabAgreesWithTheCli() {
    HS_REQUIRE_CLI();
    QString error;
    auto w = hs::test::toyWindow(12, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    QSignalSpy shown(w.get(), &MainWindow::promptShown);
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{3, 0}, {3, 3}, {3, 6}});
    QTRY_VERIFY_WITH_TIMEOUT(w->promptView().interventions == 3, 60000);
    const hs::gui::PromptView v = w->promptView();
    QProcess cli;
    cli.start(QString::fromStdString(hs::test::cliPath()),
              {"logits", "toy", "--text", v.text, "--top", "3", "--ablate", "3.0,3.3,3.6"});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitCode(), 0);
    const nlohmann::json out = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
    QCOMPARE(out["top"][0]["id"].get<int>(), v.top.front().id);
    QVERIFY2(std::abs(out["top"][0]["prob"].get<double>() - v.top.front().prob) < 1e-5,
             qPrintable(QString("CLI %1, Prompt tab %2")
                            .arg(out["top"][0]["prob"].get<double>())
                            .arg(v.top.front().prob)));
    // The clean probability is the one without interventions, and differs.
    QVERIFY(std::abs(v.topCleanProb.front() - v.top.front().prob) > 1e-6);
    // Untick "Apply interventions": the clean model.
    w->promptTab()->applyBox()->setChecked(false);
    QTRY_VERIFY_WITH_TIMEOUT(w->promptView().interventions == 0, 60000);
  }

  // Bug 6: words the tokenizer does not know are named, not silently turned into <pad>.
  void unknownWordsAreNamed() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QSignalSpy shown(w.get(), &MainWindow::promptShown);
    w->setPromptText("Hello world, the cat sat on the");
    w->runPrompt();
    QTRY_VERIFY_WITH_TIMEOUT(w->promptView().text == "Hello world, the cat sat on the", 60000);
    QVERIFY2(w->promptView().unknownWords.contains("Hello"),
             qPrintable(w->promptView().unknownWords.join(",")));
    QVERIFY(w->promptTab()->warning().contains("Hello"));
  }

  // Bug 7 and CircuitsVis: crisp cells, hover with query and key tokens and the weight, several heads side
  // by side, a prompt picker over the task's prompts.
  void attentionIsCrispWithHover() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(1500, 950);
    w->headsView()->setSelection({{3, 6}, {1, 2}});
    w->tabs()->setCurrentIndex(MainWindow::AttentionTabIndex);
    QTRY_COMPARE_WITH_TIMEOUT(w->attentionTab()->shownCount(), 2, 60000);
    QVERIFY(!w->attentionTab()->smoothed());
    const hs::gui::PatternView* p = w->attentionTab()->patternOf({1, 2});
    QVERIFY(p);
    QApplication::processEvents();
    const int q = p->n - 1, k = 1;
    const QString hover = w->attentionTab()->hoverText(w->attentionTab()->cellCenter(0, q, k));
    QVERIFY2(hover.contains(QString("query '%1' (%2)").arg(p->pieces[q]).arg(q)), qPrintable(hover));
    QVERIFY2(hover.contains(QString("key '%1' (%2)").arg(p->pieces[k]).arg(k)), qPrintable(hover));
    QVERIFY(hover.endsWith(QString::number(p->weights[static_cast<size_t>(q * p->n + k)], 'f', 3)));
    // The mouse over that cell shows the same text as the tooltip.
    QCustomPlot* plot = w->attentionTab()->plot();
    const QPoint at = w->attentionTab()->cellCenter(0, q, k);
    QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(plot->mapToGlobal(at)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &move);
    QCOMPARE(QToolTip::text(), hover);
    // The picker: the third task prompt; both heads come again on it.
    const QStringList firstPieces = p->pieces;  // p points into the tab, which the new prompt replaces
    w->attentionTab()->choosePrompt(2);
    const QString chosen = w->attentionTab()->chosenPrompt();
    QVERIFY(!chosen.isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(w->attentionTab()->shownCount() == 2 &&
                                 w->attentionTab()->patternOf({3, 6})->pieces.join("").size() > 0 &&
                                 w->pattern().pieces != firstPieces,
                             60000);
  }

  // Bug 8: another model — the old interventions go, the views show the new model's runs, the old runs
  // are labelled and can be closed, a task analysis that cannot run is not started, and the llama2.c
  // tokenizer beside the model is found.
  void anotherModelStartsClean() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(bin);
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->setStartAnalyses({"induction", "tsla", "geometry"});
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{3, 6}});
    QSignalSpy errors(w.get(), &MainWindow::errorShown);
    QSignalSpy grids(w.get(), &MainWindow::gridsShown);
    w->openModel(QString::fromStdString(bin));
    QTRY_VERIFY_WITH_TIMEOUT(w->modelInfo().layers == 5 && grids.count() >= 1, 120000);
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 120000);
    QCOMPARE(errors.count(), 0);
    // The start analyses are queued at once when the task preview arrives: the log has them by now.
    QVERIFY2(!logText(*w).contains("running tsla") && !logText(*w).contains("running geometry"),
             "a task analysis started on the toy model's task");
    QVERIFY(w->modelInfo().tokenizer != "none");
    QVERIFY(w->interventionsDock()->entries().empty());
    QCOMPARE(w->headsView()->grid().layers(), 5);
    QVERIFY(w->runsDock()->labels().join("|").contains("[other model]"));
    w->closeOtherModelsRuns();
    for (const hs::AnalysisRun& r : w->runs())
      QVERIFY(r.provenance.model != "toy");
  }

  // Bug 9: the Attention and Prompt tabs follow the task's prompt when the task changes.
  void promptFollowsTheTask() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!w->taskDock()->preview().text.isEmpty(), 30000);
    QCOMPARE(w->promptText(), w->taskDock()->preview().text);
    hs::TaskSpec spec = w->taskDock()->spec();
    spec.dataset = "toy:copy_a";
    w->taskDock()->setSpec(spec);
    QTRY_VERIFY_WITH_TIMEOUT(w->taskDock()->preview().dataset == "toy:copy_a", 30000);
    QCOMPARE(w->promptText(), w->taskDock()->preview().text);
  }

  // Bug 9, the Attention tab: the selected head's pattern is computed again on the new task's prompt.
  void attentionFollowsTheTask() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!w->taskDock()->preview().text.isEmpty(), 30000);
    w->headsView()->setSelection({{3, 3}});
    QTRY_VERIFY_WITH_TIMEOUT(w->attentionTab()->patternOf({3, 3}) != nullptr, 60000);
    const QStringList before = w->attentionTab()->patternOf({3, 3})->pieces;
    hs::TaskSpec spec = w->taskDock()->spec();
    spec.dataset = "toy:copy_a";
    w->taskDock()->setSpec(spec);
    QTRY_VERIFY_WITH_TIMEOUT(w->taskDock()->preview().dataset == "toy:copy_a", 30000);
    QTRY_VERIFY_WITH_TIMEOUT(
        w->attentionTab()->patternOf({3, 3}) && w->attentionTab()->patternOf({3, 3})->pieces != before,
        30000);
  }

  // Bug 10: Esc with nothing running does nothing; a cancelled job does not show 100 %.
  void cancelIsHonest() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 30000);
    w->cancelJob();
    QVERIFY(!logText(*w).contains("cancel requested"));
    QSignalSpy cancelled(w.get(), &MainWindow::jobCancelled);
    QVERIFY(w->runAnalysis("induction", {{"n", 4000}}));
    QTRY_VERIFY_WITH_TIMEOUT(w->isBusy(), 30000);
    w->cancelJob();
    QVERIFY(cancelled.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 30000);
    QProgressBar* bar = w->findChild<QProgressBar*>();
    QVERIFY(bar->value() < bar->maximum());
  }

  // Bug 11: one intervention per head — a second kind replaces the first, with a notice; counts are of
  // heads.
  void oneInterventionPerHead() {
    hs::gui::InterventionsDock d;
    QSignalSpy notice(&d, &hs::gui::InterventionsDock::notice);
    d.add(InterventionKind::ZeroAblate, {{3, 3}});
    d.add(InterventionKind::MeanAblate, {{3, 3}});
    QCOMPARE(notice.count(), 1);
    QCOMPARE(d.enabledHeads(), 1);
    QVERIFY(!d.entries()[0].enabled && d.entries()[1].enabled);
    d.setEnabled(0, true);  // ticking the first again unticks the second
    QVERIFY(d.entries()[0].enabled && !d.entries()[1].enabled);
    QCOMPARE(notice.count(), 2);
    QCOMPARE(nlohmann::json(hs::gui::evaluateOptions(d.entries())["zero_ablate"]).size(), size_t(1));
  }

  // Bug 12: an evaluation of another task or intervention set is marked stale, not shown as current. The
  // dock also shows intervals, the random control and every prompt.
  void staleEvaluationIsMarked() {
    QString error;
    auto w = hs::test::toyWindow(12, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{3, 6}, {3, 5}});
    QSignalSpy eval(w.get(), &MainWindow::evaluationShown);
    w->evaluate();
    QVERIFY(eval.wait(120000));
    hs::gui::EvaluationDock* d = w->evaluationDock();
    QVERIFY(!d->isStale());
    QVERIFY(d->result()->randomDraws > 0 && std::isfinite(d->result()->randomAccuracy));
    QVERIFY(d->result()->lo[1] <= d->result()->iclIntervened.accuracy);
    QCOMPARE(d->promptTable()->rowCount(), static_cast<int>(d->result()->prompts.size()));
    QVERIFY(d->promptTable()->rowCount() >= 12);
    // At 1280 × 800 every column fits the dock's width (no sideways scrolling), and "All columns…" opens the
    // run's whole per-prompt table on the Prompts tab.
    w->resize(1280, 800);
    settle();
    QTableWidget* t = d->promptTable();
    int columns = 0;
    for (int c = 0; c < t->columnCount(); ++c)
      columns += t->columnWidth(c);
    QVERIFY2(columns <= t->viewport()->width(),
             qPrintable(QString("columns %1 px in %2 px").arg(columns).arg(t->viewport()->width())));
    QVERIFY2(t->isVisible() && t->columnWidth(1) >= 50,  // the query keeps room for its last words
             qPrintable(QString("columns %1, %2, %3, %4, %5 px in %6")
                            .arg(t->columnWidth(0))
                            .arg(t->columnWidth(1))
                            .arg(t->columnWidth(2))
                            .arg(t->columnWidth(3))
                            .arg(t->columnWidth(4))
                            .arg(t->viewport()->width())));
    d->allColumnsButton()->click();
    hs::gui::PromptSlices* slices = w->workspaceViews()->promptSlices();
    QCOMPARE(w->tabs()->currentWidget(), static_cast<QWidget*>(slices));
    QCOMPARE(slices->source(), d->result()->runId + "/evaluate.prompts");
    QCOMPARE(slices->totalRows(), t->rowCount());
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{0, 0}});
    QVERIFY(d->isStale());
    QVERIFY(d->staleReason().contains("interventions"));
    w->interventionsDock()->removeRow(2);
    QVERIFY(!d->isStale());
    hs::TaskSpec spec = w->taskDock()->spec();
    spec.shots = 4;
    w->taskDock()->setSpec(spec);
    QTRY_VERIFY_WITH_TIMEOUT(d->isStale(), 30000);
    QVERIFY(d->staleReason().contains("task"));
  }

  // Bug 13: no plot title or statistics line is wider than its plot at 1280 × 800.
  void plotTextFits() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(1280, 800);
    w->headsTab()->setCompare(true, "induction-1/induction.prev_token");
    for (int t = 0; t < w->tabs()->count(); ++t) {
      w->tabs()->setCurrentIndex(t);
      QApplication::processEvents();
      for (QCustomPlot* p : w->findChildren<QCustomPlot*>()) {
        if (!p->isVisible()) continue;
        p->replot();
        for (int i = 0; i < p->plotLayout()->elementCount(); ++i) {
          auto* text = qobject_cast<QCPTextElement*>(p->plotLayout()->elementAt(i));
          if (!text || text->text().isEmpty()) continue;
          const QRect need =
              QFontMetrics(text->font()).boundingRect(QRect(0, 0, 100000, 100000), 0, text->text());
          QVERIFY2(need.width() <= p->width(), qPrintable(QString("'%1' needs %2 px in a %3-px plot")
                                                              .arg(text->text())
                                                              .arg(need.width())
                                                              .arg(p->width())));
        }
      }
    }
  }

  // Bug 13, widget by widget: in views asked to be 300 px wide, the grid's and the curve's titles and the
  // scatter's title and statistics line are broken into lines that fit, neither clipped nor widening the
  // plot.
  void narrowPlotTextFits() {
    hs::HeadGrid a;
    a.id = "tsla.tr";
    a.name =
        "Task recognition score of every head, averaged over the prompts of the task, with the final norm's "
        "scale folded into the unembedding";
    a.unit = "norm";
    a.values.resize(4, 8);
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 8; ++h)
        a.values(l, h) = (l * 8 + h) % 7 * 0.1;
    hs::HeadGrid b = a;
    b.id = "tsla.tl";
    b.name =
        "Task learning score of every head, averaged over the prompts of the task, with the final norm's "
        "scale "
        "folded into the unembedding";
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 8; ++h)
        b.values(l, h) = (l * 8 + h) % 5 * 0.1;
    hs::Curve c;
    c.id = "tsla.alignment";
    c.name =
        "Alignment of the last position's state with the task subspace of the label words, per layer, with "
        "and without the heads of the task recognition and the task learning orderings, on held-out prompts";
    c.x = {0, 1, 2, 3};
    c.series = {{"baseline", {0.1, 0.2, 0.3, 0.4}}};
    hs::HeadGridView grid;
    grid.setGrid(a);
    hs::ScatterCompare scatter;
    scatter.setGrids(a, b, 3);
    hs::CurveView curve;
    curve.setCurve(c);
    for (QWidget* widget : std::initializer_list<QWidget*>{&grid, &scatter, &curve}) {
      widget->resize(300, 300);
      widget->show();
    }
    QApplication::processEvents();
    int checked = 0;
    for (QCustomPlot* p : {grid.plot(), scatter.plot(), curve.plot()}) {
      p->replot();
      for (int i = 0; i < p->plotLayout()->elementCount(); ++i) {
        auto* text = qobject_cast<QCPTextElement*>(p->plotLayout()->elementAt(i));
        if (!text || text->text().isEmpty()) continue;
        ++checked;
        const QFontMetrics fm(text->font());
        auto width = [&](const QString& s) {
          return fm.boundingRect(QRect(0, 0, 100000, 100000), 0, s).width();
        };
        // Every text here is longer than its plot is wide (the views' minimum widths are above 300 px): a
        // plot as wide as its text grew to it instead of fitting it.
        const QVariant full = text->property("hsFull");
        const QString set = full.isValid() ? full.toString() : text->text();
        QVERIFY2(width(set) > p->width(),
                 qPrintable(QString("the plot grew to its text: '%1' (%2 px) in a %3-px plot")
                                .arg(set)
                                .arg(width(set))
                                .arg(p->width())));
        QVERIFY2(width(text->text()) <= p->width(), qPrintable(QString("'%1' needs %2 px in a %3-px plot")
                                                                   .arg(text->text())
                                                                   .arg(width(text->text()))
                                                                   .arg(p->width())));
      }
    }
    QVERIFY(checked >= 4);  // the grid's title, the scatter's title and statistics, the curve's title
  }

  // Bug 13: at 1280 × 800 the legends of the Task-vectors tab's curves (LTV: six series spanning the plot,
  // the FV curve, the training loss) cover no plotted point, and show every series.
  void legendsCoverNoData() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(1280, 800);
    auto run = [](const std::string& id, const std::string& method, const hs::Curve& c) {
      hs::AnalysisRun r;
      r.id = id;
      r.method = method;
      r.provenance.model = "toy";
      r.provenance.task = "toy:antonym_a";
      r.curves = {c};
      return r;
    };
    // The shapes of the toy model's runs in docs/screenshots: flat lines at the top and bottom, curves
    // crossing the middle, every corner of the axis rect holding data.
    hs::Curve ltv;
    ltv.id = "ltv.accuracy_vs_layer";
    ltv.name = "Zero-shot accuracy with a task vector at blocks.l.hook_resid_post (the output) position N";
    ltv.x = {0, 1, 2, 3};
    ltv.x_label = "layer l";
    ltv.y_label = "accuracy";
    ltv.series = {{"ltv", {0.9, 0.92, 0.94, 0.4}},         {"tv_replace", {0.05, 0.0, 0.08, 0.06}},
                  {"tv_add", {0.02, 0.02, 0.2, 0.35}},     {"fv", {0.48, 0.55, 0.72, 0.38}},
                  {"zero_shot", {0.36, 0.36, 0.36, 0.36}}, {"icl", {0.98, 0.98, 0.98, 0.98}}};
    hs::Curve fv;
    fv.id = "fv.accuracy_vs_layer";
    fv.name = "Zero-shot accuracy with the FV added after layer l";
    fv.x = {0, 1, 2, 3};
    fv.series = {{"fv", {0.62, 0.7, 0.75, 0.42}},
                 {"zero_shot", {0.36, 0.36, 0.36, 0.36}},
                 {"icl", {0.98, 0.98, 0.98, 0.98}}};
    hs::Curve loss;
    loss.id = "site.loss";
    loss.name = "SITE training loss (cross-entropy of the first answer token)";
    std::vector<double> l1, l2;
    for (int i = 0; i < 400; ++i) {
      loss.x.push_back(i);
      l1.push_back(i % 37 == 0 ? 1.0 : 0.6 * std::exp(-i / 40.0) + 0.05 * (i % 7));
      l2.push_back(0.6 * std::exp(-i / 40.0) + 0.1);
    }
    loss.series = {{"loss", l1}, {"loss_avg20", l2}};
    w->taskVectorsTab()->setRuns(
        {run("ltv-1", "ltv", ltv), run("fv-1", "fv", fv), run("site-1", "site", loss)});
    w->tabs()->setCurrentIndex(MainWindow::TaskVectorsTabIndex);
    QApplication::processEvents();
    int checked = 0;
    for (hs::CurveView* view : w->taskVectorsTab()->findChildren<hs::CurveView*>()) {
      QCustomPlot* p = view->plot();
      if (!p->isVisible() || p->graphCount() == 0) continue;
      p->replot();
      const QRect legend = p->legend->outerRect();
      QVERIFY2(p->rect().contains(legend), "the legend is cut by the plot's frame");
      int items = 0;
      for (int i = 0; i < p->legend->elementCount(); ++i)
        items += p->legend->item(i) ? 1 : 0;
      QCOMPARE(items, p->graphCount());
      for (int g = 0; g < p->graphCount(); ++g) {
        const QCPGraph* graph = p->graph(g);
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
          const QPointF px = graph->coordsToPixels(it->key, it->value);
          QVERIFY2(!legend.contains(px.toPoint()),
                   qPrintable(QString("'%1': the legend covers %2 (%3, %4)")
                                  .arg(view->curve().id.c_str(), graph->name())
                                  .arg(it->key)
                                  .arg(it->value)));
        }
      }
      ++checked;
    }
    QCOMPARE(checked, 3);
  }

  // Undo / redo of interventions (head selections are not undo steps).
  void undoAndRedo() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    // Undo steps are the interventions' changes; head selections are not (issue 40, bug 12).
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{2, 1}});
    w->interventionsDock()->add(InterventionKind::MeanAblate, {{1, 1}});
    w->headsView()->setSelection({{0, 3}});
    w->undoStack()->undo();
    QCOMPARE(w->interventionsDock()->entries().size(), size_t(1));
    QCOMPARE(w->headsView()->selection(), (std::vector<HeadRef>{{0, 3}}));
    w->undoStack()->undo();
    QVERIFY(w->interventionsDock()->entries().empty());
    w->undoStack()->redo();
    w->undoStack()->redo();
    QCOMPARE(w->interventionsDock()->entries().size(), size_t(2));
    QCOMPARE(w->headsView()->selection(), (std::vector<HeadRef>{{0, 3}}));
  }

  // Every dock in the View menu; Help has About and the glossary; every output of every method is in the
  // glossary, which the metric selector opens.
  void menusAndGlossary() {
    MainWindow w;
    QMenu* view = w.menuBar()->findChild<QMenu*>("ViewMenu");
    QVERIFY(view);
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      QVERIFY2(view->actions().contains(d->toggleViewAction()), qPrintable(d->windowTitle()));
    QStringList menus;
    for (QAction* a : w.menuBar()->actions())
      menus << a->text();
    QVERIFY(menus.contains("&Help"));
    for (const hs::MethodInfo& m : hs::methods())
      for (const hs::OutputSpec& o : m.outputs)
        QVERIFY2(hs::gui::glossaryEntry(QString::fromStdString(o.id)), o.id.c_str());
    for (const char* term : {"tr_ratio", "aie", "alpha", "dla", "silent"})
      QVERIFY(hs::gui::glossaryEntry(term));
    QVERIFY(w.headsTab()->findChild<QPushButton*>("GlossaryButton"));
  }

  // Direct logit attribution beside the Prompt tab: a layer × head map and a ranked list of every head,
  // every MLP and the embeddings, summing (with the biases) to the logit.
  void attributionTab() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(w->promptView().dlaHeads.layers() == 4, 60000);
    const hs::gui::PromptView& v = w->promptView();
    QVERIFY(w->attributionTab()->view()->hasGrid());
    QCOMPARE(w->attributionTab()->ranked()->rowCount(), 4 * 8 + 4 + 1);
    double sum = v.dlaEmbed;
    for (int l = 0; l < 4; ++l) {
      sum += v.dlaMlp[static_cast<size_t>(l)];
      for (int h = 0; h < 8; ++h)
        sum += v.dlaHeads.values(l, h);
    }
    QVERIFY2(std::abs(sum - v.dlaLogit) < 1e-3, qPrintable(QString("%1 vs %2").arg(sum).arg(v.dlaLogit)));
    // Silent heads are hatched and never ranked.
    const auto& silent = w->modelInfo().silent;
    QCOMPARE(w->headsView()->hatchCount(), static_cast<int>(silent.size()));
    for (const HeadRef& h : silent)
      QVERIFY(!w->headsView()->rankOf(h));
  }
};

QTEST_MAIN(TestFirstStart)
#include "test_first_start.moc"
