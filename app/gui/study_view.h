#pragma once
// The study view (docs/batch.md): the runs of a batch as a table, filtered by model, task, method and seed,
// above small multiples of one grid across models or tasks (one heatmap per model or task: the mean over the
// filtered runs of that model and task, e.g. over seeds — runs of different tasks or models are never
// averaged: with several tasks among the filtered runs, "across models" shows one panel per model and task),
// and the failed jobs. Double-clicking a run shows that run's own grids, one panel each. It shows a merged
// study session (headscope-cli merge) or a batch folder; a folder is watched, so runs appear as their files
// land in DIR/runs and failures as they land in DIR/failed, while the batch is still running.
#include <QStringList>
#include <QWidget>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/results.h"

class QComboBox;
class QFileSystemWatcher;
class QGridLayout;
class QLabel;
class QListWidget;
class QPushButton;
class QTableWidget;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class StudyView : public QWidget {
  Q_OBJECT
 public:
  // The table's columns; the first four are also the filters.
  enum Column {
    ModelColumn = 0,
    TaskColumn,
    MethodColumn,
    SeedColumn,
    RunColumn,
    PromptsColumn,
    SummaryColumn
  };
  enum class Across { Models, Tasks };

  explicit StudyView(QWidget* parent = nullptr);

  // A merged study session. Throws naming the file (the view is unchanged then).
  void openStudy(const QString& path);
  // A batch folder (DIR with runs/, failed/, jobs.json); with `watch`, new runs and failures appear as their
  // files are written. Throws when `dir` is not a folder.
  void openFolder(const QString& dir, bool watch = true);
  QString source() const { return source_; }
  bool watching() const;

  int runCount() const { return static_cast<int>(runs_.size()); }
  int shownRunCount() const;       // rows passing the filters
  QStringList failedJobs() const;  // ids, sorted
  QTableWidget* table() const { return table_; }
  QListWidget* failureList() const { return failures_; }
  QLabel* statusLabel() const { return status_; }

  // Filter values offered for a column ("" = all); setFilter selects one (false when it is not offered).
  QStringList filterValues(Column c) const;
  bool setFilter(Column c, const QString& value);
  // The grid ids of the filtered runs; the shown one.
  QStringList gridIds() const;
  bool setGrid(const QString& id);
  QString grid() const;
  void setAcross(Across a);
  Across across() const;
  // The small multiples shown: one per model (or task) among the filtered runs having the grid; while a
  // run is shown (showRun), one per grid of that run.
  const std::vector<HeadGridView*>& panels() const { return panels_; }
  // Shows the grids of one run (what double-clicking its row does); "" goes back to the filtered runs.
  bool showRun(const QString& runId);
  QString shownRun() const { return shownRun_; }
  // Silent heads (all-zero W_O) of a model, by the model as runs record it ("toy" or its path): its panels
  // hatch them and leave them out of their ranks, as the main window's Heads tab does. The main window
  // gives the loaded model's.
  void setSilentHeads(const QString& model, const std::vector<HeadRef>& heads);

 Q_SIGNALS:
  void runsChanged();  // runs or failures were added (a scan of a watched folder, or an open)

 private:
  struct Row {
    AnalysisRun run;
    QString model, task, method, seed;
    QString fullModel;  // as the run records it (silent heads are known by it)
  };
  void clear();
  void addRun(AnalysisRun run);
  void rescanFolder();
  void refresh();  // filters' choices, table, panels, status
  void refreshPanels();
  bool passes(const Row& r) const;

  QString source_;
  bool folder_ = false;
  std::vector<Row> runs_;
  std::set<std::string> runFiles_;             // folder: run files already loaded
  std::map<std::string, std::string> failed_;  // id → "label: error"
  int jobs_ = 0;                               // jobs of the plan, when known
  QFileSystemWatcher* watcher_ = nullptr;

  QComboBox* filters_[4] = {};
  QComboBox* grid_ = nullptr;
  QComboBox* across_ = nullptr;
  QTableWidget* table_ = nullptr;
  QGridLayout* panelGrid_ = nullptr;
  std::vector<HeadGridView*> panels_;
  std::vector<QWidget*> panelCells_;
  QListWidget* failures_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* allRuns_ = nullptr;  // back from a shown run to the filtered runs
  QString shownRun_;
  std::map<QString, std::vector<HeadRef>> silent_;  // model → silent heads
};

// A study window (a top-level StudyView owned by `parent`) on a study session or a batch folder; nullptr
// with `*error` set when it cannot be opened.
StudyView* openStudyWindow(QWidget* parent, const QString& path, QString* error);

}  // namespace hs::gui
