// The GUI is generated from the method registry: every method has a Run-menu entry and an options form with
// a field per option (defaults, ranges and help in the tooltips), values are remembered per method, a
// method registered at run time runs like the built-in ones, its run is labelled method · model · task ·
// seed, can be deleted, and a saved session carries the method's record.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "method_dialog.h"
#include "outputs_tab.h"
#include "results_tab.h"
#include "runs_dock.h"
#include "session/session.h"
#include "test_method.h"

using hs::gui::MainWindow;
using hs::gui::MethodDialog;

class TestMethodForms : public QObject {
  Q_OBJECT

  QMenu* runMenu(MainWindow& w) {
    for (QAction* a : w.menuBar()->actions())
      if (a->menu() && a->menu()->objectName() == "RunMenu") return a->menu();
    return nullptr;
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    hs::test::isolateSettings("test_method_forms");
    hs::test::registerEchoMethod();
  }

  void everyMethodHasAMenuEntryAndAFullForm() {
    MainWindow w;
    w.setInteractive(false);
    QMenu* menu = runMenu(w);
    QVERIFY(menu);
    for (const hs::MethodInfo& m : hs::methods()) {
      if (!m.gui.run_menu) continue;  // another control runs it ("Evaluate with interventions")
      if (m.imported) {               // imported runs (published) have no entry and no form
        QVERIFY(!menu->findChild<QAction*>("run:" + QString::fromStdString(m.name)));
        continue;
      }
      const QString name = QString::fromStdString(m.name);
      QAction* entry = menu->findChild<QAction*>("run:" + name);
      QVERIFY2(entry && entry->text().startsWith(QString::fromStdString(m.title)), qPrintable(name));
      std::unique_ptr<MethodDialog> d(w.createMethodDialog(name));
      QVERIFY(d);
      for (const hs::OptionSpec& o : m.options) {
        QWidget* f = d->field(o.key);
        QVERIFY2(f, qPrintable(name + " has no field " + QString::fromStdString(o.key)));
        QVERIFY2(f->toolTip().contains(QString::fromStdString(o.help).toHtmlEscaped()) &&
                     f->toolTip().contains("default"),
                 qPrintable(f->toolTip()));
      }
      // The untouched form holds exactly the defaults.
      QCOMPARE(d->options(), hs::resolveOptions(m.options, nlohmann::json::object(), m.name));
    }
  }

  void formsRememberValuesPerMethod() {
    MainWindow w;
    w.setInteractive(false);
    {
      std::unique_ptr<MethodDialog> d(w.createMethodDialog("echo"));
      QCOMPARE(qobject_cast<QSpinBox*>(d->field("k"))->value(), 3);
      QCOMPARE(qobject_cast<QSpinBox*>(d->field("k"))->maximum(), 10);
      QCOMPARE(qobject_cast<QComboBox*>(d->field("mode"))->currentText(), QString("plain"));
      QVERIFY(qobject_cast<QCheckBox*>(d->field("absolute"))->isChecked());
      qobject_cast<QSpinBox*>(d->field("k"))->setValue(5);
      qobject_cast<QComboBox*>(d->field("mode"))->setCurrentText("doubled");
      qobject_cast<QLineEdit*>(d->field("heads"))->setText("1.2,0.3");
      d->accept();
      QCOMPARE(d->result(), int(QDialog::Accepted));
    }
    std::unique_ptr<MethodDialog> again(w.createMethodDialog("echo"));
    QCOMPARE(again->options().at("k").get<int>(), 5);
    QCOMPARE(again->options().at("heads"), (nlohmann::json{{1, 2}, {0, 3}}));
    std::unique_ptr<MethodDialog> other(w.createMethodDialog("induction"));
    // Another method keeps its own values (induction's n_eval default 0: 1024 on real models, 64 on the toy).
    QCOMPARE(other->options().at("n_eval").get<int>(), 0);
    again->restoreDefaults();
    QCOMPARE(again->options().at("k").get<int>(), 3);
    // A bad value stays in the dialog with its message; nothing is remembered.
    qobject_cast<QLineEdit*>(again->field("heads"))->setText("one.two");
    again->accept();
    QVERIFY(again->result() != int(QDialog::Accepted));
    QCOMPARE(MethodDialog::remembered("echo").at("k").get<int>(), 5);
  }

  void aMethodThatCannotRunOnTheTaskSaysWhy() {
    MainWindow w;
    w.setInteractive(false);
    hs::TaskSpec antonym;
    antonym.dataset = "toy:antonym_a";
    w.taskDock()->setSpec(antonym);
    std::unique_ptr<MethodDialog> d(w.createMethodDialog("geometry"));
    QVERIFY(!d->runButton()->isEnabled());
    QVERIFY(!w.runAnalysis("geometry"));
    QVERIFY2(w.lastError().contains("geometry needs a classification task"), qPrintable(w.lastError()));
  }

  void registeredMethodRunsIsLabelledDeletedAndSaved() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    QSignalSpy grids(w.get(), &MainWindow::gridsShown);
    QVERIFY(w->runAnalysis("echo", {{"k", 2}}));
    QVERIFY(grids.wait(60000));
    QVERIFY2(w->lastError().isEmpty(), qPrintable(w->lastError()));
    // Its grid, curve and table are in the views with no GUI code of its own: the grid a Heads-tab metric,
    // the curve and the table on the Results tab, and the curve in the panel its record places on the Task
    // vectors tab.
    QVERIFY(w->headsTab()->metricKeys().contains("echo-1/echo.mean_z"));
    hs::gui::OutputsTab* results = w->resultsTab();
    QVERIFY2(results->resultKeys().contains("echo-1/echo.per_layer") &&
                 results->resultKeys().contains("echo-1/echo.top_heads"),
             qPrintable(results->resultKeys().join(", ")));
    QVERIFY(results->select("echo-1/echo.top_heads"));
    QCOMPARE(results->table()->rowCount(), 4);  // one row per toy layer
    QCOMPARE(results->table()->horizontalHeaderItem(1)->text(), QString("head"));
    QVERIFY(results->select("echo-1/echo.per_layer"));
    QVERIFY(results->currentPlot() != nullptr);
    hs::gui::ResultsTab* tv = w->taskVectorsTab();
    QVERIFY(tv->panelIndex("echo.per_layer") >= 0);
    QVERIFY(tv->isFilled(tv->panelIndex("echo.per_layer")));
    const QStringList labels = w->runsDock()->labels();
    // k = 2 is not its default: the label says so (run_label.h).
    QVERIFY2(labels.contains("echo · toy · seed 7 · k=2"), qPrintable(labels.join(" | ")));
    QVERIFY2(labels.contains("induction · toy · seed 1"), qPrintable(labels.join(" | ")));

    QTemporaryDir dir;
    const QString path = dir.filePath("forms.hscope");
    QVERIFY(w->saveSessionTo(path));
    const hs::Session s = hs::loadSession(path.toStdString());
    QVERIFY(s.methods.contains("echo") && s.methods.contains("induction"));
    QCOMPARE(s.runs.size(), size_t(2));
    const hs::AnalysisRun* echo = s.findRun("echo-1");
    QVERIFY(echo && echo->grids.size() == 1 && echo->curves.size() == 1 && echo->tables.size() == 1);

    w->deleteRuns({"echo-1"});
    QCOMPARE(w->outputs().size(), size_t(1));
    QVERIFY(!w->headsTab()->metricKeys().contains("echo-1/echo.mean_z"));
    QCOMPARE(w->runsDock()->labels().size(), 1);
    QVERIFY(w->isDirty());
    // A deleted run's id is free again: the next echo run is echo-1 once more.
    QVERIFY(w->runAnalysis("echo"));
    QVERIFY(grids.wait(60000));
    QVERIFY(w->headsTab()->metricKeys().contains("echo-1/echo.mean_z"));
  }
};

QTEST_MAIN(TestMethodForms)
#include "test_method_forms.moc"
