#pragma once
// The main window (DESIGN section 7): left docks Model and Task, centre tabs Heads, Geometry, Task vectors,
// Attention, Prompt; right docks Interventions and Evaluation; bottom log with progress and Cancel. All
// model work goes to the EngineWorker on its own thread; the window holds the session: the analysis runs,
// the head selection, the interventions and the view state, saved to and opened from .hscope files.
#include <QMainWindow>
#include <QThread>

#include <nlohmann/json.hpp>

#include <vector>

#include "gui_types.h"
#include "plot_export.h"

class QCustomPlot;
class QCPColorMap;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class EngineWorker;
class EvaluationDock;
class HeadsTab;
class InterventionsDock;
class LoadedFilesWatch;
class ResultsTab;
class TaskDock;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Tab { HeadsTabIndex = 0, GeometryTabIndex, TaskVectorsTabIndex, AttentionTabIndex, PromptTabIndex };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model on the worker; when done, previews the task, runs the prompt and — with `analyze` —
  // the start analyses (induction, and TSLA when built in) so the first screen shows real heatmaps.
  void openModel(const QString& path, const QString& tokenizer = {}, bool analyze = true);
  // `headscope` with no arguments: the toy model, the remembered (default: toy:category_label, 8 shots)
  // task, and the start analyses.
  void openDefault();
  // The analyses a model load runs (default: induction and TSLA; those not built in are skipped).
  void setStartAnalyses(const QStringList& methods) { startAnalyses_ = methods; }
  // Queues the analysis registered under `method` on the current task; its run id is "<method>-<n>".
  // Runs `method` on the Task dock's task, or on `task` (a TaskSpec as JSON) when that is not null.
  void runAnalysis(const QString& method, const nlohmann::json& options = nlohmann::json::object(),
                   const nlohmann::json& task = nullptr);
  // "Evaluate with interventions" on the current task.
  void evaluate();

  // Sessions. Both return false on failure, after one error message (dialog when interactive); a failed
  // open leaves the current session exactly as it was.
  bool saveSessionTo(const QString& path);
  bool openSession(const QString& path);
  QString sessionPath() const { return sessionPath_; }
  bool isDirty() const { return dirty_; }
  // The unsaved-changes prompt: true when it is fine to go on (saved or discarded). Non-interactive: the
  // default answer, Discard.
  bool maybeSave();

  // The plot of the current tab (the heatmap, the focused or first filled panel, the attention map).
  QCustomPlot* currentPlot() const;
  bool exportCurrentPlot(const QString& path, const ExportOptions& options);
  // The shown grid as CSV (wide) or JSON, by extension.
  bool exportCurrentData(const QString& path);

  // Errors go to a dialog when interactive (default); tests turn that off and read lastError().
  void setInteractive(bool on) { interactive_ = on; }
  QString lastError() const { return lastError_; }
  bool isBusy() const { return busy_; }
  // Grabs every tab into `dir` as main_<tab>.png (for the docs).
  QStringList saveScreenshots(const QString& dir);

  HeadGridView* headsView() const;
  HeadsTab* headsTab() const { return headsTab_; }
  ResultsTab* geometryTab() const { return geometryTab_; }
  ResultsTab* taskVectorsTab() const { return taskVectorsTab_; }
  TaskDock* taskDock() const { return taskDock_; }
  InterventionsDock* interventionsDock() const { return interventionsDock_; }
  EvaluationDock* evaluationDock() const { return evaluationDock_; }
  QTabWidget* tabs() const { return tabs_; }
  QCustomPlot* attentionPlot() const { return attention_; }
  const PatternView& pattern() const { return pattern_; }
  const PromptView& promptView() const { return prompt_; }
  const ModelInfo& modelInfo() const { return info_; }
  const std::vector<AnalysisOutputPtr>& outputs() const { return outputs_; }
  std::vector<AnalysisRun> runs() const;
  QString promptText() const;
  void setPromptText(const QString& text);

 Q_SIGNALS:
  void modelReady();
  void gridsShown();  // an analysis run arrived and is shown
  void patternShown();
  void promptShown();
  void taskPreviewShown();
  void evaluationShown();
  void sessionOpened();
  void jobCancelled(const QString& job);
  void errorShown(const QString& message);
  void modelFilesChanged(const QStringList& paths);  // the loaded model's files changed on disk

 public Q_SLOTS:
  void runPrompt();
  void computeHeadScores();  // runs "induction"
  void cancelJob();

 private:
  void buildUi();
  void buildMenus();
  void onModelLoaded(const ModelInfo& info);
  void onAnalysis(const AnalysisOutputPtr& output);
  void onPrompt(const PromptView& view);
  void onPattern(const PatternView& view);
  void onTaskPreview(const TaskPreview& preview);
  void onFailed(const QString& job, const QString& message);
  void onProgress(double fraction, const QString& message);
  void requestPattern(HeadRef head);
  void requestPreview();
  void refreshResults();
  void showError(const QString& title, const QString& message);
  void setDirty(bool on);
  void addRecent(const QString& path);
  void log(const QString& line);
  void closeEvent(QCloseEvent* event) override;
  void watchModelFiles(const ModelInfo& info);  // main_window_watch.cpp
  void onModelFilesChanged(const QStringList& paths);

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  bool interactive_ = true;
  bool busy_ = false;
  bool dirty_ = false;
  bool analyzeOnLoad_ = true;
  bool promptFromTask_ = false;  // the next task preview sets the prompt (toy model)
  QString lastError_;
  QString sessionPath_;
  QString tokenizerPath_;
  LoadedFilesWatch* filesWatch_ = nullptr;
  // Run after a model loads: the head views on the Task dock's task; the task-vector methods (fv, site, ltv)
  // need a function task, so on the toy model they run on toy:antonym_a (kTaskVectorStartTask).
  QStringList startAnalyses_ = {"induction", "tsla", "geometry", "fv", "site", "ltv"};

  ModelInfo info_;
  PromptView prompt_;
  PatternView pattern_;
  std::vector<AnalysisOutputPtr> outputs_;

  QTabWidget* tabs_ = nullptr;
  HeadsTab* headsTab_ = nullptr;
  ResultsTab* geometryTab_ = nullptr;
  ResultsTab* taskVectorsTab_ = nullptr;
  QCustomPlot* attention_ = nullptr;
  QCPColorMap* attentionMap_ = nullptr;
  QLineEdit* promptEdit_ = nullptr;
  QLabel* tokensLabel_ = nullptr;
  QTableWidget* topTable_ = nullptr;
  QTableWidget* lensTable_ = nullptr;
  QLabel* modelLabel_ = nullptr;
  TaskDock* taskDock_ = nullptr;
  InterventionsDock* interventionsDock_ = nullptr;
  EvaluationDock* evaluationDock_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QMenu* recentMenu_ = nullptr;
};

}  // namespace hs::gui
