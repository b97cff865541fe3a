// Sessions in the GUI: save → open restores identical grids, selection, interventions and view state
// without recomputing; a corrupt or newer-version file is refused with a message and changes nothing; a
// session holding only runs (as headscope-cli writes them) opens and shows its grids.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui_test_util.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "model/io/safetensors.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "session/session.h"

using hs::HeadRef;
using hs::gui::InterventionEntry;
using hs::gui::MainWindow;

namespace {
bool sameGrid(const hs::HeadGrid& a, const hs::HeadGrid& b) {
  return a.id == b.id && a.name == b.name && a.unit == b.unit && a.values.rows() == b.values.rows() &&
         a.values.cols() == b.values.cols() && a.values == b.values &&
         a.provenance.options == b.provenance.options && a.provenance.model == b.provenance.model;
}
}  // namespace

class TestGuiSession : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_gui_session"); }

  void saveThenOpenRestoresTheView() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    // A state worth restoring: second metric, compare on, a colour range, two selected heads, three
    // interventions (one disabled), the Task-vectors tab.
    QVERIFY(w->headsTab()->setCurrentMetric("induction-1/induction.prev_token"));
    w->headsTab()->setCompare(true, "induction-1/induction.prefix_matching");
    w->headsView()->colorMap()->setDataRange(QCPRange(0.1, 0.7));
    w->headsView()->setSelection({{1, 2}, {3, 0}});
    w->interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, {{1, 2}, {3, 0}});
    w->interventionsDock()->add(hs::gui::InterventionKind::Steer, {{0, 7}});
    w->interventionsDock()->setEnabled(1, false);
    w->tabs()->setCurrentIndex(MainWindow::TaskVectorsTabIndex);
    QVERIFY(w->isDirty());

    QTemporaryDir dir;
    const QString path = dir.filePath("s.hscope");
    QVERIFY2(w->saveSessionTo(path), qPrintable(w->lastError()));
    QVERIFY(!w->isDirty());
    QCOMPARE(w->sessionPath(), path);

    MainWindow w2;  // no model: reopening needs no recomputation
    w2.setInteractive(false);
    QVERIFY2(w2.openSession(path), qPrintable(w2.lastError()));
    QCOMPARE(w2.outputs().size(), w->outputs().size());
    const auto r1 = w->runs(), r2 = w2.runs();
    QCOMPARE(r2.front().id, r1.front().id);
    QCOMPARE(r2.front().grids.size(), r1.front().grids.size());
    for (size_t i = 0; i < r1.front().grids.size(); ++i)
      QVERIFY(sameGrid(r1.front().grids[i], r2.front().grids[i]));
    QCOMPARE(r2.front().summary, r1.front().summary);
    QCOMPARE(w2.headsTab()->currentMetric(), QString("induction-1/induction.prev_token"));
    QVERIFY(sameGrid(w2.headsView()->grid(), w->headsView()->grid()));
    QVERIFY(w2.headsTab()->comparing());
    QCOMPARE(w2.headsTab()->compareMetric(), QString("induction-1/induction.prefix_matching"));
    QCOMPARE(w2.headsView()->colorMap()->dataRange().lower, 0.1);
    QCOMPARE(w2.headsView()->colorMap()->dataRange().upper, 0.7);
    QCOMPARE(w2.headsView()->selection(), (std::vector<HeadRef>{{1, 2}, {3, 0}}));
    QCOMPARE(w2.interventionsDock()->entries(), w->interventionsDock()->entries());
    QVERIFY(!w2.interventionsDock()->entries()[1].enabled);
    QCOMPARE(w2.tabs()->currentIndex(), int(MainWindow::TaskVectorsTabIndex));
    QCOMPARE(w2.taskDock()->spec().n_prompts, 16);
    QVERIFY(!w2.isDirty());
    // The file went through the atomic writer: no temp file is left beside it.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"s.hscope"});
  }

  void brokenFilesAreRefusedAndChangeNothing() {
    QString error;
    auto w = hs::test::toyWindow(16, &error);
    QVERIFY2(w, qPrintable(error));
    w->headsView()->setSelection({{2, 2}});
    w->interventionsDock()->add(hs::gui::InterventionKind::MeanAblate, {{2, 2}});
    QTemporaryDir dir;
    const QString good = dir.filePath("good.hscope");
    QVERIFY(w->saveSessionTo(good));
    const auto entries = w->interventionsDock()->entries();
    const QString metric = w->headsTab()->currentMetric();

    auto refused = [&](const QString& path, const char* what) {
      QSignalSpy errors(w.get(), &MainWindow::errorShown);
      const bool opened = w->openSession(path);
      QVERIFY2(!opened, what);
      QCOMPARE(errors.count(), 1);
      QVERIFY2(w->lastError().contains(path), qPrintable(w->lastError()));
      QCOMPARE(w->outputs().size(), size_t(1));
      QCOMPARE(w->headsView()->selection(), (std::vector<HeadRef>{{2, 2}}));
      QCOMPARE(w->interventionsDock()->entries(), entries);
      QCOMPARE(w->headsTab()->currentMetric(), metric);
      QCOMPARE(w->sessionPath(), good);
    };
    // Garbage bytes.
    const QString junk = dir.filePath("junk.hscope");
    {
      QFile f(junk);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("this is not a session file at all, just some text that is long enough");
    }
    refused(junk, "garbage");
    // A truncated copy of a good file.
    const QString cut = dir.filePath("cut.hscope");
    {
      QFile in(good);
      QVERIFY(in.open(QIODevice::ReadOnly));
      const QByteArray all = in.readAll();
      QFile out(cut);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(all.left(all.size() / 2));
    }
    refused(cut, "truncated");
    // A file from a newer HeadScope: format_version above this build's (written without a checksum, as
    // the reader of an older build cannot know how a newer one computes it).
    const QString future = dir.filePath("future.hscope");
    {
      nlohmann::json j = hs::sessionToJson(hs::loadSession(good.toStdString()));
      j["format_version"] = hs::kSessionFormatVersion + 1;
      hs::writeSafetensors(future.toStdString(), {}, {{hs::kSessionMetadataKey, j.dump()}});
    }
    refused(future, "newer version");
    QVERIFY(w->lastError().contains("version") || w->lastError().contains("newer"));
    // The crafted session: view_state nested 90,000 deep (crashed the GUI's session reader).
    const QString deep = dir.filePath("deep.hscope");
    QVERIFY(QFile::copy(
        QString(HEADSCOPE_TEST_DATA_DIR) + "/regression/session/session_deep_view_state.hscope", deep));
    refused(deep, "nested 90,000 deep");
    QVERIFY2(w->lastError().contains("nested deeper than 256"), qPrintable(w->lastError()));
    // One changed byte of a good session's JSON: the checksum names the damage.
    const QString damaged = dir.filePath("damaged.hscope");
    {
      QFile in(good);
      QVERIFY(in.open(QIODevice::ReadOnly));
      QByteArray all = in.readAll();
      const QByteArray from = "\\\"tab\\\":";
      const int at = all.indexOf(from);
      QVERIFY2(at >= 0, "the session metadata holds the view state's tab");
      char& digit = all[at + from.size()];
      digit = digit == '1' ? '2' : '1';
      QFile out(damaged);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(all);
    }
    refused(damaged, "checksum");
    QVERIFY2(w->lastError().contains("damaged"), qPrintable(w->lastError()));
  }

  // A loaded model's file rewritten on disk: the window hears of it (and, interactive, offers to reload).
  void modelFileChangeIsReported() {
    QTemporaryDir dir;
    const QString toy = QString(HEADSCOPE_SOURCE_DIR) + "/resources/models/toy-icl";
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
      QVERIFY(QFile::copy(toy + "/" + f, dir.filePath(f)));
    MainWindow w;
    w.setInteractive(false);
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.openModel(dir.path(), {}, false);
    QVERIFY2(ready.wait(60000), qPrintable(w.lastError()));
    QSignalSpy changed(&w, &MainWindow::modelFilesChanged);
    {
      QFile f(dir.filePath("model.safetensors"));
      QVERIFY(f.open(QIODevice::ReadWrite));
      f.seek(f.size() - 4);
      f.write("\0\0\0\0", 4);  // rewritten in place, as a training run overwriting its checkpoint
    }
    QVERIFY(changed.wait(10000));
    QCOMPARE(changed.first().first().toStringList(),
             QStringList{QFileInfo(dir.filePath("model.safetensors")).absoluteFilePath()});
  }

  // headscope-cli writes sessions with runs only (no selection, interventions or view state).
  void opensARunsOnlySession() {
    hs::Session s;
    hs::AnalysisRun run;
    run.id = "tsla-1";
    run.method = "tsla";
    hs::HeadGrid g;
    g.id = "tsla.tr";
    g.name = "Task recognition";
    g.unit = "score";
    g.values = Eigen::MatrixXd::Zero(4, 8);
    g.values(2, 3) = 1.5;
    g.values(0, 0) = -0.25;
    run.grids.push_back(g);
    hs::Curve c;
    c.id = "tsla.alignment";
    c.name = "Alignment";
    c.x_label = "layer";
    c.y_label = "alignment";
    c.x = {0, 1, 2, 3};
    c.series = {{"baseline", {0.1, 0.3, 0.6, 0.8}}, {"-TR heads", {0.1, 0.2, 0.3, 0.3}}};
    run.curves.push_back(c);
    s.runs.push_back(run);
    QTemporaryDir dir;
    const std::string path = dir.filePath("cli.hscope").toStdString();
    hs::saveSession(path, s);

    MainWindow w;
    w.setInteractive(false);
    QVERIFY2(w.openSession(QString::fromStdString(path)), qPrintable(w.lastError()));
    QCOMPARE(w.headsTab()->currentMetric(), QString("tsla-1/tsla.tr"));
    QCOMPARE(w.headsView()->grid().values(2, 3), 1.5);
    QVERIFY(w.headsView()->selection().empty());
    QVERIFY(w.interventionsDock()->entries().empty());
    // The Geometry tab fills its alignment panel from the run; the others keep their placeholders.
    hs::gui::ResultsTab* geometry = w.geometryTab();
    QVERIFY(geometry->isFilled(geometry->panelIndex("tsla.alignment")));
    QVERIFY(!geometry->isFilled(geometry->panelIndex("tsla.logit_diff")));
    QVERIFY(geometry->plotOf(geometry->panelIndex("tsla.alignment")) != nullptr);
  }
};

QTEST_MAIN(TestGuiSession)
#include "test_gui_session.moc"
