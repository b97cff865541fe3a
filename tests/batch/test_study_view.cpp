// The study view: a merged study opens (also through MainWindow::openSession) as a table of runs filtered by
// model, task, method and seed, with one heatmap per model or task — the mean over the filtered runs of
// that model and task (never over different tasks or models) — and the failed jobs listed; a batch folder is
// watched, so runs and failures appear as their files land. The runs here are made by hand with known grids,
// so every mean is checked exactly.
#include <QCoreApplication>
#include <QLabel>
#include <QListWidget>
#include <QSettings>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "batch/merge.h"
#include "head_grid_view.h"
#include "main_window.h"
#include "session/session.h"
#include "study_view.h"

namespace {

using namespace hs;
using gui::StudyView;

// A run of `method` on `model`/`task` with seed `seed` whose grid "x.score" is 2 × 3, every cell `value`.
AnalysisRun makeRun(const std::string& id, const std::string& method, const std::string& model,
                    const std::string& task, uint64_t seed, double value) {
  AnalysisRun r;
  r.id = id;
  r.method = method;
  r.provenance = {method, model, task, seed, 8, nlohmann::json::object(), "2026-12-05T00:00:00Z"};
  HeadGrid g;
  g.id = "x.score";
  g.name = "Score";
  g.values = Eigen::MatrixXd::Constant(2, 3, value);
  g.provenance = r.provenance;
  r.grids.push_back(g);
  r.summary = {{"accuracy", value / 10}};
  return r;
}

// Writes run `r` as a batch run file of `dir` (atomically, as the batch does).
void writeRun(const QString& dir, const AnalysisRun& r) {
  QDir().mkpath(dir + "/runs");
  Session s;
  s.model = {{"path", r.provenance.model}};
  s.runs.push_back(r);
  s.batch = {{"format_version", 1}, {"job", {{"method", r.method}}}};
  saveSession((dir + "/runs/" + QString::fromStdString(r.id) + ".hscope").toStdString(), s);
}

void writeFailure(const QString& dir, const std::string& id, const std::string& error) {
  QDir().mkpath(dir + "/failed");
  std::ofstream(dir.toStdString() + "/failed/" + id + ".log") << "error: " << error << "\nlabel: fv · toy\n";
}

// 2 models × 2 tasks × 2 seeds of "fv"; the grid's value is 100·model + 10·task + seed.
void writeStudyRuns(const QString& dir) {
  const char* models[] = {"toy", "/models/llama-mini"};
  const char* tasks[] = {"toy:category_label", "/data/antonym.json"};
  for (int m = 0; m < 2; ++m)
    for (int t = 0; t < 2; ++t)
      for (uint64_t seed = 1; seed <= 2; ++seed)
        writeRun(dir, makeRun("fv-" + std::to_string(m) + std::to_string(t) + std::to_string(seed), "fv",
                              models[m], tasks[t], seed, 100.0 * m + 10.0 * t + seed));
}

int rows(const StudyView& v) {
  return v.table()->rowCount();
}

}  // namespace

class TestStudyView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString study_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QStandardPaths::setTestModeEnabled(true);  // settings (the recent list) never the user's
    QCoreApplication::setOrganizationName("HeadScopeTests");
    QCoreApplication::setApplicationName("test_study_view");
    QSettings().clear();
    const QString batch = dir_.filePath("batch");
    writeStudyRuns(batch);
    writeFailure(batch, "evaluate-0000000000000001", "loading /models/broken: not a checkpoint");
    study_ = dir_.filePath("study.hscope");
    saveSession(study_.toStdString(), batch::mergeBatch(batch.toStdString()));
  }

  void studyFiltersAndSmallMultiples() {
    StudyView v;
    v.openStudy(study_);
    QCOMPARE(v.runCount(), 8);
    QCOMPARE(rows(v), 8);
    QCOMPARE(v.filterValues(StudyView::ModelColumn), (QStringList{"", "llama-mini", "toy"}));
    QCOMPARE(v.filterValues(StudyView::TaskColumn), (QStringList{"", "antonym.json", "toy:category_label"}));
    QCOMPARE(v.filterValues(StudyView::SeedColumn), (QStringList{"", "1", "2"}));
    QCOMPARE(v.failedJobs(), QStringList{"evaluate-0000000000000001"});
    QVERIFY(v.failureList()->item(0)->text().contains("not a checkpoint"));
    QVERIFY(v.statusLabel()->text().startsWith("8 runs (8 shown) of 9 jobs, 1 failed"));

    // Across models: with two tasks among the runs, one panel per model and task, the mean over its seeds
    // (a mean over different tasks would mean nothing).
    QCOMPARE(v.grid(), QString("x.score"));
    QCOMPARE(v.panels().size(), size_t(4));
    QCOMPARE(v.panels()[0]->grid().values(1, 2), 100.0 + 10.0 + 1.5);  // llama-mini · antonym.json
    QCOMPARE(v.panels()[1]->grid().values(1, 2), 100.0 + 1.5);         // llama-mini · toy:category_label
    QCOMPARE(v.panels()[3]->grid().values(0, 0), 1.5);                 // toy · toy:category_label
    QVERIFY(v.panels()[3]->grid().name.find("toy · toy:category_label · Score (mean of 2 runs)") == 0);

    // Filters narrow the table and the panels.
    QVERIFY(v.setFilter(StudyView::ModelColumn, "toy"));
    QCOMPARE(rows(v), 4);
    QVERIFY(v.setFilter(StudyView::TaskColumn, "antonym.json"));
    QCOMPARE(v.panels().size(), size_t(1));  // one task left: one panel per model
    QCOMPARE(v.panels()[0]->grid().values(0, 1), 10.0 + 1.5);
    QVERIFY(v.setFilter(StudyView::TaskColumn, ""));
    QVERIFY(v.setFilter(StudyView::SeedColumn, "2"));
    QCOMPARE(rows(v), 2);
    QCOMPARE(v.panels().size(), size_t(2));
    QCOMPARE(v.panels()[0]->grid().values(0, 1), 10.0 + 2.0);
    for (int r = 0; r < rows(v); ++r) {
      QCOMPARE(v.table()->item(r, StudyView::ModelColumn)->text(), QString("toy"));
      QCOMPARE(v.table()->item(r, StudyView::SeedColumn)->text(), QString("2"));
    }
    QVERIFY(!v.setFilter(StudyView::MethodColumn, "tsla"));  // no such runs: not offered

    // Across tasks, one model: one panel per task; every model: one per model and task.
    QVERIFY(v.setFilter(StudyView::SeedColumn, ""));
    v.setAcross(StudyView::Across::Tasks);
    QCOMPARE(v.panels().size(), size_t(2));
    QCOMPARE(v.panels()[0]->grid().values(0, 0), 10.0 + 1.5);  // antonym.json
    QCOMPARE(v.panels()[1]->grid().values(0, 0), 1.5);         // toy:category_label
    QVERIFY(v.setFilter(StudyView::ModelColumn, ""));
    QCOMPARE(v.panels().size(), size_t(4));
    QCOMPARE(v.panels()[0]->grid().values(0, 0), 100.0 + 10.0 + 1.5);  // llama-mini · antonym.json
  }

  // A running batch: runs and failures appear as their files land, also when runs/ does not exist yet.
  void watchedFolderFollowsTheBatch() {
    const QString dir = dir_.filePath("running");
    QDir().mkpath(dir);
    StudyView v;
    v.openFolder(dir, true);
    QVERIFY(v.watching());
    QCOMPARE(v.runCount(), 0);
    writeRun(dir, makeRun("fv-a", "fv", "toy", "toy:antonym_a", 1, 1.0));
    QTRY_COMPARE_WITH_TIMEOUT(v.runCount(), 1, 60000);
    writeRun(dir, makeRun("fv-b", "fv", "toy", "toy:antonym_a", 2, 3.0));
    QTRY_COMPARE_WITH_TIMEOUT(v.runCount(), 2, 60000);
    QCOMPARE(v.panels().size(), size_t(1));
    QCOMPARE(v.panels()[0]->grid().values(0, 0), 2.0);
    writeFailure(dir, "fv-c", "out of memory");
    QTRY_COMPARE_WITH_TIMEOUT(v.failedJobs(), QStringList{"fv-c"}, 60000);
    // The failed job succeeds on a rerun: it leaves the failure list.
    writeRun(dir, makeRun("fv-c", "fv", "toy", "toy:antonym_a", 3, 5.0));
    QTRY_COMPARE_WITH_TIMEOUT(v.runCount(), 3, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(v.failedJobs().isEmpty(), 60000);
  }

  // MainWindow::openSession hands a study to the study view and leaves the workbench's session alone.
  void mainWindowOpensStudiesInTheStudyView() {
    gui::MainWindow w;
    w.setInteractive(false);
    QVERIFY2(w.openSession(study_), qPrintable(w.lastError()));
    const auto views = w.findChildren<StudyView*>();
    QCOMPARE(views.size(), qsizetype(1));
    QCOMPARE(views[0]->runCount(), 8);
    QVERIFY(views[0]->isWindow());
    QVERIFY(w.outputs().empty());
    // A batch run's own file is an ordinary session.
    QVERIFY(!batch::isStudySession((dir_.filePath("batch/runs/fv-001.hscope")).toStdString()));
  }

  void badStudyIsOneClearError() {
    const QString junk = dir_.filePath("junk.hscope");
    std::ofstream(junk.toStdString()) << "not a session";
    QString error;
    QVERIFY(!gui::openStudyWindow(nullptr, junk, &error));
    QVERIFY2(error.contains(junk), qPrintable(error));
    QVERIFY(!gui::openStudyWindow(nullptr, dir_.filePath("no-such-folder"), &error));
    QVERIFY2(error.contains("no-such-folder"), qPrintable(error));
  }
};

QTEST_MAIN(TestStudyView)
#include "test_study_view.moc"
