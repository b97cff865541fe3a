// Issue 40: what a user trying the workbench at 1920 × 1080 and 1280 × 800 on the toy model and stories260K
// hit, each as a test that failed before its fix (tests/mutations/workbench brings each defect back):
// sessions reopen as saved; runs are named by what differs; progress names each stage once; undo, the
// session's modified mark and the metric picker behave; patches share their source; a real model gets its
// tasks; the study view; no painting of hidden plots; and the layouts at both sizes.
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollBar>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyleOptionComboBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextDocument>
#include <QToolTip>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest>

#include <set>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/data_roots.h"
#include "analysis/framework/registry.h"
#include "attention_tab.h"
#include "evaluation_dock.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "model/load/model_loader.h"
#include "outputs_tab.h"
#include "plot_style.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "run_label.h"
#include "runs_dock.h"
#include "scatter_compare.h"
#include "session/session.h"
#include "study_view.h"
#include "task_dock.h"
#include "test_paths.h"

using hs::HeadRef;
using hs::gui::InterventionEntry;
using hs::gui::InterventionKind;
using hs::gui::MainWindow;
using hs::gui::VectorSource;

namespace {

QStringList& gMessages = hs::test::collectedMessages();
using hs::test::collect;

using hs::test::settle;

// The tooltip label Qt shows (QTipLabel), or nullptr.
QWidget* shownToolTip() {
  for (QWidget* w : QApplication::allWidgets())
    if (w->objectName() == "qtooltip_label" && w->isVisible()) return w;
  return nullptr;
}

// A run of `method` on the toy model whose options are the method's defaults with `changed` over them.
hs::AnalysisRun runWithOptions(const std::string& id, const std::string& method,
                               const nlohmann::json& changed) {
  hs::AnalysisRun r;
  r.id = id;
  r.method = method;
  r.provenance.method = method;
  r.provenance.model = "toy";
  r.provenance.task = "toy:category_label";
  r.provenance.seed = 1;
  r.options = nlohmann::json::object();
  for (const hs::OptionSpec& o : hs::requireMethod(method).options)
    r.options[o.key] = o.default_value;
  for (auto it = changed.begin(); it != changed.end(); ++it)
    r.options[it.key()] = it.value();
  hs::HeadGrid g;
  g.id = method + ".score";
  g.name = "Score";
  g.values = Eigen::MatrixXd::Constant(4, 8, 0.5);
  g.provenance = r.provenance;
  r.grids.push_back(g);
  hs::Curve c;
  c.id = method + ".curve";
  c.name = "Curve";
  c.x = {0, 1};
  c.series = {{"a", {0.1, 0.2}}};
  r.curves.push_back(c);
  r.summary = {{"accuracy", 0.5}, {"note", "a very long summary value that a JSON dump would not break"}};
  return r;
}

// A run holding every panel result the registry places on the Geometry and Task vectors tabs, made by hand.
hs::AnalysisRun panelRun(const std::string& id) {
  hs::AnalysisRun r;
  r.id = id;
  r.method = "geometry";
  r.provenance.method = "geometry";
  r.provenance.model = "toy";
  r.provenance.task = "toy:category_label";
  for (const hs::MethodInfo& m : hs::methods())
    for (const hs::OutputSpec& o : m.outputs) {
      if (o.panel.empty() || o.id.find('*') != std::string::npos) continue;
      if (o.kind == hs::OutputSpec::Kind::Grid) {
        hs::HeadGrid g;
        g.id = o.id;
        g.values = Eigen::MatrixXd::Random(4, 8);
        r.grids.push_back(g);
      } else if (o.kind == hs::OutputSpec::Kind::Curve) {
        hs::Curve c;
        c.id = o.id;
        // As long as LTV's rotation curve names itself, with as many series.
        c.name =
            "Linear propagation W = QΣ from the residual stream after layer l (hook_resid_post) to the "
            "last layer (the full W, r = d = 128): rotation cos(θ, Qθ), stretch ‖Σθ‖/‖θ‖, and ‖P v‖/‖v‖ "
            "of θ and Qθ in the label subspace";
        c.x = {0, 1, 2, 3};
        for (const char* series :
             {"cos_theta_Qtheta", "stretch", "fit_r2", "label_alignment_theta", "label_alignment_Qtheta"})
          c.series.push_back({series, {0.1, 0.4, 0.2, 0.3}});
        r.curves.push_back(c);
      } else if (o.kind == hs::OutputSpec::Kind::Table) {
        hs::Table t;
        t.id = o.id;
        t.columns = {"x", "y", "label"};
        for (int i = 0; i < 12; ++i)
          t.rows.push_back({0.1 * i, 0.05 * i * i, i % 2 ? "green" : "gray"});
        r.tables.push_back(t);
      }
    }
  return r;
}

}  // namespace

class TestWorkspace : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    hs::test::isolateSettings("test_workspace");
    hs::setDataRoots({HEADSCOPE_SHARED_DATA_DIR});  // as the app's roots (app/common/data_roots.h)
  }
  void init() { QSettings().clear(); }

  // Bug 2: a session reopens as it was saved: the Prompt tab's own (typed) text, the lens toggles, the
  // Attention tab's prompt and the Evaluation dock's result (from its evaluate run); a version-1 session
  // (without them) still opens.
  void sessionReopensAsSaved() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(w->taskDock()->preview().prompts.size() > 3, 60000);
    const QStringList prompts = w->taskDock()->preview().prompts;
    const QString typed = prompts[3];  // a toy-world text the tokenizer knows, not the task's first prompt
    QVERIFY(typed != w->promptText());
    w->setPromptText(typed);
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{3, 6}});
    w->promptTab()->lensMeasureBox()->setCurrentIndex(1);
    w->promptTab()->lensDifferenceBox()->setChecked(true);
    w->attentionTab()->choosePrompt(2);
    w->headsView()->setSelection({{3, 3}});
    QSignalSpy evaluated(w.get(), &MainWindow::evaluationShown);
    w->evaluate();
    QVERIFY(evaluated.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 60000);
    QVERIFY(w->evaluationDock()->result().has_value());
    const hs::gui::EvalResult before = *w->evaluationDock()->result();
    QTemporaryDir dir;
    const QString path = dir.filePath("as-saved.hscope");
    QVERIFY2(w->saveSessionTo(path), qPrintable(w->lastError()));

    MainWindow w2;  // no model: the session loads the toy model
    w2.setInteractive(false);
    w2.show();
    QSignalSpy shown(&w2, &MainWindow::promptShown);
    QSignalSpy errors(&w2, &MainWindow::errorShown);
    QVERIFY2(w2.openSession(path), qPrintable(w2.lastError()));
    QVERIFY(shown.count() > 0 || shown.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w2.isBusy() && !w2.taskDock()->preview().prompts.isEmpty(), 60000);
    QCOMPARE(w2.promptText(), typed);
    QCOMPARE(w2.promptView().text, typed);
    QCOMPARE(w2.promptTab()->lensMeasureBox()->currentIndex(), 1);
    QVERIFY(w2.promptTab()->lensDifferenceBox()->isChecked());
    QCOMPARE(w2.attentionTab()->chosenPrompt(), prompts[2]);
    QVERIFY2(w2.evaluationDock()->result().has_value(), "the Evaluation dock lost its result");
    const hs::gui::EvalResult& after = *w2.evaluationDock()->result();
    QCOMPARE(after.runId, before.runId);
    QCOMPARE(after.iclIntervened.accuracy, before.iclIntervened.accuracy);
    QCOMPARE(after.prompts.size(), before.prompts.size());
    QVERIFY2(!w2.evaluationDock()->isStale(), qPrintable(w2.evaluationDock()->staleReason()));
    QCOMPARE(errors.count(), 0);
    QVERIFY(!w2.isDirty());

    // A version-1 session (no prompt, attention or evaluation state) opens with their defaults.
    hs::Session v1 = hs::loadSession(path.toStdString());
    v1.view_state = {{"format_version", 1}, {"tab", 0}};
    const QString old = dir.filePath("v1.hscope");
    hs::saveSession(old.toStdString(), v1);
    QVERIFY2(w2.openSession(old), qPrintable(w2.lastError()));
    QVERIFY(!w2.evaluationDock()->result().has_value());
    QCOMPARE(w2.promptText(), typed);  // the text shown stays
  }

  // Bug 1: two runs that differ in their options are told apart everywhere (Runs dock, metric pickers,
  // Results tab); the tooltip is formatted (no raw JSON), lists the options and fits the screen.
  void runLabelsShowTheirOptions() {
    const hs::AnalysisRun a = runWithOptions("tsla-1", "tsla", nlohmann::json::object());
    const hs::OptionSpec& changed = hs::requireMethod("tsla").options.front();
    nlohmann::json other = changed.default_value;
    other = other.is_number_integer() ? nlohmann::json(other.get<int64_t>() + 1)
            : other.is_number()       ? nlohmann::json(other.get<double>() * 2 + 1)
            : other.is_boolean()      ? nlohmann::json(!other.get<bool>())
                                      : nlohmann::json("other");
    const hs::AnalysisRun b = runWithOptions("tsla-2", "tsla", {{changed.key, other}});
    hs::gui::MainWindow w;
    w.setInteractive(false);
    w.runsDock()->setRuns({a, b}, "toy");
    const QStringList labels = w.runsDock()->labels();
    QCOMPARE(labels.size(), 2);
    QVERIFY2(labels[0] != labels[1], qPrintable(labels.join(" | ")));
    QVERIFY2(labels[1].contains(QString::fromStdString(changed.key) + "="), qPrintable(labels[1]));
    w.headsTab()->setRuns({a, b});
    QComboBox* metric = w.headsTab()->metricBox();
    QCOMPARE(metric->count(), 2);
    QVERIFY(metric->itemText(0) != metric->itemText(1));
    w.resultsTab()->setRuns({a, b});
    auto* tree = w.resultsTab()->findChild<QTreeWidget*>();
    QVERIFY(tree && tree->topLevelItemCount() == 2);
    QVERIFY(tree->topLevelItem(0)->text(0) != tree->topLevelItem(1)->text(0));

    // The tooltip: every option by name, no JSON object, and lines that wrap on the screen.
    const QString tip = w.runsDock()->list()->item(1)->toolTip();
    for (const hs::OptionSpec& o : hs::requireMethod("tsla").options)
      QVERIFY2(tip.contains(QString::fromStdString(o.key)), qPrintable(QString::fromStdString(o.key)));
    QVERIFY2(!tip.contains("{\""), "raw JSON in the tooltip");
    w.show();
    const QRect screen = w.screen()->availableGeometry();
    QToolTip::showText(screen.topLeft() + QPoint(100, 100), tip, w.runsDock()->list());
    QWidget* label = shownToolTip();
    QVERIFY(label);
    qInfo("tooltip %d x %d on a %d x %d screen", label->width(), label->height(), screen.width(),
          screen.height());
    QVERIFY2(label->width() <= screen.width() / 2,
             qPrintable(QString("the tooltip is %1 px wide").arg(label->width())));
    QToolTip::hideText();
  }

  // Bug 7: a stage's progress names the stage once, however the stage and the code inside it word it
  // (the dual-route method on the toy model, every message unthrottled).
  void progressNamesEachStageOnce() {
    hs::AnalysisContext root;
    QStringList messages;
    root.progress = [&](double, const std::string& m) { messages << QString::fromStdString(m); };
    const hs::AnalysisContext stage = hs::subContext(root, 0.5, 0.75, "last-token matching");
    stage.report(0.5, "last-token matching: prompt 33/200");
    hs::subContext(hs::subContext(root, 0, 1, "ltv"), 0, 1, "layer 2").report(0.5, "epoch 3");
    QCOMPARE(messages, (QStringList{"last-token matching: prompt 33/200", "ltv: layer 2: epoch 3"}));

    messages.clear();
    const hs::LoadedModel toy = hs::loadModel("toy", {});
    const hs::MethodInputs in{*toy.model, toy.tokenizer.get(), {}};
    hs::runMethod(hs::requireMethod("dual-route"), in, {{"n", 4}, {"n_matching", 4}}, root);
    QVERIFY(!messages.isEmpty());
    bool matching = false;
    for (const QString& m : messages) {
      const QStringList parts = m.split(": ");
      for (int i = 1; i < parts.size(); ++i)
        QVERIFY2(!parts[i].startsWith(parts[i - 1]), qPrintable("doubled: " + m));
      matching = matching || m.contains("last-token matching");
    }
    QVERIFY(matching);
  }

  // Bug 12: Ctrl+Z undoes the last change of the interventions, not the head selections made since; a new
  // metric is a view, not an edit; another model's (published) grid can be the shown metric.
  void undoMetricAndPublishedGrids() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QVERIFY(!w->isDirty());
    const QStringList keys = w->headsTab()->metricKeys();
    QVERIFY(keys.size() >= 2);
    QVERIFY(w->headsTab()->setCurrentMetric(keys[1]));
    QVERIFY2(!w->isDirty(), "choosing another metric marked the session modified");

    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{1, 2}});
    w->headsView()->setSelection({{0, 1}});
    w->headsView()->setSelection({{2, 3}, {3, 3}});
    w->undoStack()->undo();
    QVERIFY2(w->interventionsDock()->entries().empty(), "Ctrl+Z undid a head selection, not the ablation");
    QCOMPARE(w->headsView()->selection(), (std::vector<HeadRef>{{2, 3}, {3, 3}}));
    w->undoStack()->redo();
    QCOMPARE(w->interventionsDock()->entries().size(), size_t(1));

    const QStringList shipped = MainWindow::shippedPublishedSessions();
    if (shipped.isEmpty()) QSKIP("no published sessions are shipped in this build");
    QVERIFY2(w->importRuns({shipped.first()}), qPrintable(w->lastError()));
    QString published;
    for (const QString& k : w->headsTab()->compareKeys())
      if (!w->headsTab()->metricKeys().contains(k) || k.startsWith("published")) published = k;
    QVERIFY(!published.isEmpty());
    QVERIFY2(w->headsTab()->metricKeys().contains(published), "a published grid cannot be the metric");
    QVERIFY(w->headsTab()->setCurrentMetric(published));
    QCOMPARE(w->headsView()->grid().id, w->headsTab()->gridOf(published)->id);
    QVERIFY(!w->headsTab()->showsLoadedModel());
    QVERIFY2(!w->headsView()->menuEnabled(), "another model's heads offered for interventions");
  }

  // Bug 9: patches of several heads share one source (as the evaluation needs): setting one entry's source
  // sets the others', a head added later takes it, and Evaluate runs instead of refusing.
  void patchesShareTheirSource() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    hs::gui::InterventionsDock* dock = w->interventionsDock();
    dock->add(InterventionKind::PatchClean, {{3, 6}, {3, 5}});
    InterventionEntry p = dock->entries()[0];
    p.source = VectorSource::Prompt;
    p.sourcePrompt = 2;
    dock->setParameters(0, p);
    QCOMPARE(dock->entries()[1].source, VectorSource::Prompt);
    QCOMPARE(dock->entries()[1].sourcePrompt, 2);
    dock->add(InterventionKind::PatchClean, {{2, 1}});
    QCOMPARE(dock->entries()[2].source, VectorSource::Prompt);
    QSignalSpy errors(w.get(), &MainWindow::errorShown);
    QSignalSpy evaluated(w.get(), &MainWindow::evaluationShown);
    w->evaluate();
    QVERIFY2(evaluated.wait(120000), qPrintable(w->lastError()));
    QCOMPARE(errors.count(), 0);
    QCOMPARE(w->evaluationDock()->result()->nPatched, 3);
  }

  // Bug 8: stories260K with a toy task selected: the Task dock names the reason (a toy-world task on a
  // model with another vocabulary), not the label words' first tokens; the Dataset list offers the shipped
  // Function Vectors tasks.
  void realModelGetsItsTasks() {
    const std::string model = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(model);
    const std::string antonym = hs::test::sharedData("datasets/function_vectors/abstractive/antonym.json");
    HS_REQUIRE_FILE(antonym);
    MainWindow w;
    w.setInteractive(false);
    w.setStartAnalyses({});
    const QStringList datasets = w.taskDock()->datasets();
    bool listed = false;
    for (const QString& d : datasets)
      listed = listed || QFileInfo(d).canonicalFilePath() ==
                             QFileInfo(QString::fromStdString(antonym)).canonicalFilePath();
    QVERIFY2(listed, qPrintable("the FV antonym task is not offered: " + datasets.join(", ")));
    QCOMPARE(w.taskDock()->spec().dataset, std::string("toy:category_label"));
    QSignalSpy preview(&w, &MainWindow::taskPreviewShown);
    w.openModel(QString::fromStdString(model));
    QVERIFY(preview.wait(60000));
    const QString why = w.taskDock()->preview().error;
    QVERIFY2(why.contains("toy world") && why.contains("another vocabulary"), qPrintable(why));
    QVERIFY2(!why.contains("first token"), qPrintable(why));
  }

  // Bug 11: the study view opens a run on double-click; ranks leave out the loaded model's silent heads as
  // the Heads tab does; "across models" never averages different tasks.
  void studyRowsRanksAndGroups() {
    QTemporaryDir dir;
    hs::Session s;
    s.batch = {{"format_version", 1}, {"jobs", nlohmann::json::object()}};
    int n = 0;
    for (const char* task : {"toy:category_label", "toy:antonym_a"})
      for (uint64_t seed = 1; seed <= 2; ++seed) {
        hs::AnalysisRun r = runWithOptions("tsla-" + std::to_string(++n), "tsla", nlohmann::json::object());
        r.provenance.task = task;
        r.provenance.seed = seed;
        r.grids[0].values =
            Eigen::MatrixXd::Constant(4, 8, std::string(task) == "toy:antonym_a" ? 10.0 : 0.0);
        r.grids[0].values(0, 0) += static_cast<double>(seed);
        s.runs.push_back(r);
      }
    const QString path = dir.filePath("study.hscope");
    hs::saveSession(path.toStdString(), s);
    hs::gui::StudyView v;
    v.openStudy(path);
    v.show();
    QCOMPARE(v.across(), hs::gui::StudyView::Across::Models);  // the default
    QCOMPARE(v.panels().size(), size_t(2));                    // toy · each task, never their mean
    for (hs::HeadGridView* p : v.panels()) {
      const double base = p->grid().values(1, 1);
      QVERIFY2(base == 0.0 || base == 10.0, qPrintable(QString("a mean over tasks: %1").arg(base)));
      QCOMPARE(p->grid().values(0, 0), base + 1.5);  // the mean over the two seeds
    }
    const std::vector<HeadRef> silent = {{0, 1}, {0, 2}, {1, 0}};
    v.setSilentHeads("toy", silent);
    QCOMPARE(v.panels().front()->rankedCount(), 32 - 3);
    QVERIFY2(v.panels().front()->tooltipText({2, 2}).contains("of 29"),
             qPrintable(v.panels().front()->tooltipText({2, 2})));
    // Double-click: the run's own grids.
    QTableWidget* table = v.table();
    settle();
    const QRect cell = table->visualItemRect(table->item(0, hs::gui::StudyView::RunColumn));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());  // a double-click's first press
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    const QString id = table->item(0, hs::gui::StudyView::RunColumn)->text();
    QCOMPARE(v.shownRun(), id);
    QCOMPARE(v.panels().size(), size_t(1));
    for (const hs::AnalysisRun& r : s.runs)
      if (QString::fromStdString(r.id) == id) QCOMPARE(v.panels().front()->grid().values, r.grids[0].values);
  }

  // Bug 5: opening a session paints no hidden or zero-size plot (no QPainter / QCPLayer warnings).
  void openingASessionPaintsNothingHidden() {
    QTemporaryDir dir;
    hs::Session s;
    s.model = {{"path", "toy"}};
    s.runs = {panelRun("geometry-1"), runWithOptions("tsla-1", "tsla", nlohmann::json::object())};
    const QString runsOnly = dir.filePath("runs.hscope");
    hs::saveSession(runsOnly.toStdString(), s);
    // Saved by the GUI with the comparison on (the scatter beside the heatmap) and the Task vectors tab in
    // front, as a user leaves it.
    const QString path = dir.filePath("panels.hscope");
    {
      MainWindow saver;
      saver.setInteractive(false);
      QVERIFY(saver.openSession(runsOnly));
      QVERIFY(saver.headsTab()->setCurrentMetric("tsla-1/tsla.score"));
      saver.headsTab()->setCompare(true, "geometry-1/" + QString::fromStdString(s.runs[0].grids.at(0).id));
      saver.headsView()->setSelection({{1, 1}, {2, 2}});
      saver.tabs()->setCurrentIndex(MainWindow::TaskVectorsTabIndex);
      QVERIFY(saver.saveSessionTo(path));
    }
    gMessages.clear();
    const QtMessageHandler old = qInstallMessageHandler(collect);
    {
      MainWindow w;
      w.setInteractive(false);
      w.resize(1280, 800);
      w.show();  // as `headscope SESSION` does: shown, then the session opened before any event is handled
      const bool opened = w.openSession(path);
      settle();
      for (int tab = 0; tab < w.tabs()->count(); ++tab) {
        w.tabs()->setCurrentIndex(tab);
        settle();
      }
      qInstallMessageHandler(old);
      QVERIFY(opened);
    }
    qInstallMessageHandler(old);
    const QStringList painting = gMessages.filter(QRegularExpression("QPainter::begin|inactive painter"));
    qInfo("%lld painting warnings", static_cast<long long>(painting.size()));
    QVERIFY2(painting.isEmpty(), qPrintable(painting.join("\n")));
  }

  // Bug 3: the Attribution tab's list shows its header and values whole at 1920 and 1280 px; the Attention
  // tab's key-token labels do not overlap with four heads.
  void attributionAndAttentionFit_data() {
    QTest::addColumn<int>("width");
    QTest::newRow("1920") << 1920;
    QTest::newRow("1280") << 1280;
  }
  void attributionAndAttentionFit() {
    QFETCH(int, width);
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(width, width == 1920 ? 1000 : 740);
    QTRY_VERIFY_WITH_TIMEOUT(w->attributionTab()->ranked()->rowCount() > 0, 60000);
    w->tabs()->setCurrentIndex(MainWindow::AttributionTabIndex);
    settle();
    QTableWidget* ranked = w->attributionTab()->ranked();
    QHeaderView* header = ranked->horizontalHeader();
    const int viewport = ranked->viewport()->width();
    for (int c = 0; c < 2; ++c) {
      const int right = header->sectionViewportPosition(c) + header->sectionSize(c);
      qInfo("%d px: column %d %d px (its header needs %d), ends at %d of %d", width, c,
            header->sectionSize(c), header->sectionSizeHint(c), right, viewport);
      QVERIFY2(header->sectionSize(c) >= header->sectionSizeHint(c), "a clipped header");
      QVERIFY2(right <= viewport, "a column outside the list");
      for (int r = 0; r < ranked->rowCount(); ++r)
        QVERIFY2(ranked->sizeHintForIndex(ranked->model()->index(r, c)).width() <= header->sectionSize(c),
                 qPrintable(ranked->item(r, c)->text() + " is cut"));
    }
    // Four heads side by side: the labels of each axis are at least a line of the tick font apart.
    QSignalSpy patterns(w.get(), &MainWindow::patternShown);
    w->headsView()->setSelection({{0, 0}, {1, 1}, {2, 2}, {3, 3}});
    QTRY_VERIFY_WITH_TIMEOUT(w->attentionTab()->shownCount() == 4, 60000);
    w->tabs()->setCurrentIndex(MainWindow::AttentionTabIndex);  // the patterns arrived while it was hidden
    settle();
    const int line = QFontMetrics(hs::plotstyle::tickFont()).height();
    auto labelsFit = [&](const char* when) {
      for (int i = 0; i < 4; ++i) {
        const auto* map = qobject_cast<QCPColorMap*>(w->attentionPlot()->plottable(i));
        if (!map) return QString("no map %1").arg(i);
        for (QCPAxis* axis : {map->keyAxis(), map->valueAxis()}) {
          const QVector<double> ticks = axis->tickVector();
          if (ticks.size() < 2) return QString("panel %1: fewer than two labels").arg(i);
          const double pitch = std::abs(axis->coordToPixel(ticks[1]) - axis->coordToPixel(ticks[0]));
          const double need = axis == map->keyAxis() ? line / 0.866 : line;  // x labels turn by 60°
          qInfo("%d px, %s: panel %d %s labels %.1f px apart (a line: %d px)", width, when, i,
                axis == map->keyAxis() ? "key" : "query", pitch, line);
          if (pitch < need - 0.5) return QString("%1: overlapping token labels in panel %2").arg(when).arg(i);
          // Nor thinned for another size: at most three times the pitch a label needs (or every token
          // labelled).
          if (pitch > 3 * need + 0.5 && ticks[1] - ticks[0] != 1)
            return QString("%1: labels thinned for another size in panel %2").arg(when).arg(i);
        }
      }
      return QString();
    };
    const QString shown = labelsFit("shown");
    QVERIFY2(shown.isEmpty(), qPrintable(shown));
    // A narrower window with the tab in view: the labels follow the panels' new size at once.
    w->resize(width * 2 / 3, width == 1920 ? 1000 : 740);
    settle();
    const QString resized = labelsFit("resized");
    QVERIFY2(resized.isEmpty(), qPrintable(resized));
  }

  // Bug 4: with fresh settings at 1280 × 800 the window, with a title bar, fits the screen's free area (the
  // status bar, progress and Cancel in view); at that size nothing is clipped: the Interventions help text,
  // the metric's name in its box, the Geometry tab's LTV panel.
  void smallScreenFitsWithItsFrame() {
    MainWindow w;                         // fresh settings (init cleared them)
    const QRect avail(0, 27, 1280, 773);  // 1280 × 800 below a 27-px panel
    w.fitToScreen(avail);
    const QMargins f = MainWindow::kAssumedFrame;
    const QRect framed(w.geometry().topLeft() - QPoint(f.left(), f.top()), w.size().grownBy(f));
    qInfo("window %d x %d at %d,%d; with a frame %d x %d", w.width(), w.height(), w.x(), w.y(),
          framed.width(), framed.height());
    QVERIFY2(w.height() + f.top() + f.bottom() <= avail.height(), "no room for the title bar");
    QVERIFY2(w.width() + f.left() + f.right() <= avail.width(), "no room for the borders");
  }

  void layoutAt1280ClipsNothing() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    auto* hint = w->findChild<QLabel*>("InterventionsHint");
    QVERIFY(hint);
    // The full layout (two dock columns) squeezed to its minimum height, as a maximised window whose title
    // bar the layout did not count: the help text keeps all its lines.
    w->resize(std::max(1280, w->minimumSizeHint().width()), w->minimumSizeHint().height());
    settle();
    qInfo("two columns, %d px high: Interventions help %d px high, its text needs %d", w->height(),
          hint->height(), hint->heightForWidth(hint->width()));
    QVERIFY2(hint->height() >= hint->heightForWidth(hint->width()), "the help text is cut");
    w->fitToScreen(QRect(0, 27, 1280, 773));  // maximised on 1280 × 800
    w->resize(1280, 773 - 30);
    settle();
    qInfo("Interventions help %d px high, its text needs %d", hint->height(),
          hint->heightForWidth(hint->width()));
    QVERIFY2(hint->height() >= hint->heightForWidth(hint->width()), "the help text is cut");
    // The metric's own name, not only its run, shows in the box.
    QComboBox* metric = w->headsTab()->metricBox();
    const QString name = QString::fromStdString(w->headsView()->grid().name);
    QStyleOptionComboBox opt;
    opt.initFrom(metric);
    opt.editable = false;
    opt.currentText = metric->currentText();
    const QRect field =
        metric->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, metric);
    const QString shown =
        metric->fontMetrics().elidedText(metric->currentText(), Qt::ElideRight, field.width());
    qInfo("metric box shows \"%s\"", qPrintable(shown));
    QVERIFY2(shown.startsWith(name), qPrintable(shown));
    // Every panel of the Geometry tab has room for its plot once a run fills it.
    w->geometryTab()->setRuns({panelRun("geometry-1")});
    w->tabs()->setCurrentIndex(MainWindow::GeometryTabIndex);
    settle();
    for (int i = 0; i < w->geometryTab()->panelCount(); ++i)
      if (QCustomPlot* p = w->geometryTab()->plotOf(i)) {
        p->replot();
        qInfo("geometry panel %d: axis rect %d px high of %d", i, p->axisRect()->height(), p->height());
        // A third of the panel at least for the data (LTV's long title took all but 60 px of 245).
        QVERIFY2(p->axisRect()->height() >= p->height() / 3,
                 qPrintable(QString("panel %1's plot is squashed").arg(i)));
      }
  }

  // Bug 6: the intervention form shows its title, its placeholders and a prompt preview whole.
  void interventionFormShowsItsText() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!w->taskDock()->preview().prompts.isEmpty(), 60000);
    InterventionEntry e;
    e.kind = InterventionKind::Steer;
    e.head = {3, 6};
    e.source = VectorSource::Prompt;
    e.sourcePrompt = 0;
    hs::gui::InterventionForm form(e, 4, w->taskDock()->preview().prompts, w.get());
    form.show();
    settle();
    const QFontMetrics fm(form.font());
    qInfo("form %d px wide; title needs %d", form.width(), fm.horizontalAdvance(form.windowTitle()));
    QVERIFY2(form.width() >= fm.horizontalAdvance(form.windowTitle()) + 100, "the title is cut");
    for (QLineEdit* edit : {form.textEdit(), form.positionsEdit()}) {
      const int need = edit->fontMetrics().horizontalAdvance(edit->placeholderText());
      QVERIFY2(edit->width() >= need + 8, qPrintable("cut: " + edit->placeholderText()));
    }
    for (QLabel* l : form.findChildren<QLabel*>())
      if (l->isVisible() && l->wordWrap())
        QVERIFY2(l->height() >= l->heightForWidth(l->width()), qPrintable("cut: " + l->text()));
  }

  // Bug 10: the scatter's legend covers no point; a class named after a colour is drawn in it.
  void scatterLegendAndColourNames() {
    hs::HeadGrid a, b;
    a.id = "a";
    b.id = "b";
    a.values = Eigen::MatrixXd(4, 8);
    b.values = Eigen::MatrixXd(4, 8);
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 8; ++h) {  // points in every corner, the top ones included
        a.values(l, h) = h;
        b.values(l, h) = l * 8 + h % 3;
      }
    hs::ScatterCompare scatter;
    scatter.resize(480, 440);
    scatter.show();
    scatter.setGrids(a, b, 3);
    settle();
    scatter.plot()->replot();
    const QRect legend = scatter.plot()->legend->outerRect();
    for (int g = 0; g < scatter.plot()->graphCount(); ++g)
      for (auto it = scatter.plot()->graph(g)->data()->constBegin();
           it != scatter.plot()->graph(g)->data()->constEnd(); ++it) {
        const QPoint p(static_cast<int>(scatter.plot()->xAxis->coordToPixel(it->key)),
                       static_cast<int>(scatter.plot()->yAxis->coordToPixel(it->value)));
        QVERIFY2(!legend.contains(p),
                 qPrintable(QString("the legend covers (%1, %2)").arg(it->key).arg(it->value)));
      }
    // A little narrower than the Heads tab's scatter at 1280 × 800 (about 250 px), with long grid names:
    // every legend entry and both axis labels stay whole inside the plot (one legend column; labels elided,
    // not cut).
    a.name = "Task recognition ‖P a‖² (paper)";
    a.unit = "norm²";
    b.name = "Induction (prefix matching)";
    b.unit = "attention";
    scatter.resize(220, 440);
    scatter.setGrids(a, b, 2);
    settle();
    scatter.plot()->replot();
    const QRect area = scatter.plot()->rect();
    for (int i = 0; i < scatter.plot()->legend->elementCount(); ++i)
      if (const QCPAbstractLegendItem* item = scatter.plot()->legend->item(i))
        QVERIFY2(area.contains(item->outerRect()),
                 qPrintable(QString("legend entry %1 reaches x = %2 of %3 px")
                                .arg(i)
                                .arg(item->outerRect().right())
                                .arg(area.width())));
    const QFontMetrics labels(scatter.plot()->xAxis->labelFont());
    QVERIFY2(labels.horizontalAdvance(scatter.plot()->xAxis->label()) <=
                 scatter.plot()->xAxis->axisRect()->width(),
             qPrintable(scatter.plot()->xAxis->label()));
    QVERIFY2(labels.horizontalAdvance(scatter.plot()->yAxis->label()) <=
                 scatter.plot()->yAxis->axisRect()->height(),
             qPrintable(scatter.plot()->yAxis->label()));
    hs::gui::ProjectionView projection;
    hs::Table t;
    t.columns = {"x", "y", "label"};
    for (const char* c : {"green", "gray", "red", "apple", "blue", "gold", "navy", "pink", "teal"})
      t.rows.push_back({1.0, 2.0, c});
    projection.resize(420, 150);  // a Geometry panel at 1280 × 800
    projection.show();
    QVERIFY(projection.setTable(t));
    settle();
    projection.plot()->replot();
    // Every legend entry as high as its text (none squeezed, "gray" read as "grav").
    int entries = 0;
    for (int i = 0; i < projection.plot()->legend->elementCount(); ++i) {
      const QCPAbstractLegendItem* item = projection.plot()->legend->item(i);
      if (!item) continue;  // an empty cell of the wrapped grid
      ++entries;
      QVERIFY2(item->outerRect().height() >= item->minimumOuterSizeHint().height(),
               qPrintable(QString("legend entry %1: %2 px of %3")
                              .arg(i)
                              .arg(item->outerRect().height())
                              .arg(item->minimumOuterSizeHint().height())));
    }
    QCOMPARE(entries, 9);
    for (int g = 0; g < projection.plot()->graphCount(); ++g) {
      const QString name = projection.plot()->graph(g)->name();
      const QColor drawn = projection.plot()->graph(g)->scatterStyle().brush().color();
      if (QColor::isValidColorName(name))
        QVERIFY2(drawn == QColor::fromString(name), qPrintable(name + " drawn as " + drawn.name()));
    }
  }
};

QTEST_MAIN(TestWorkspace)
#include "test_workspace.moc"
