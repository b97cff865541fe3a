#pragma once
// The main window (docs/architecture.md, "The GUI"): left docks Model and Task, centre tabs Heads, Geometry,
// Task vectors, Attention, Prompt; right docks Interventions and Evaluation; bottom log with progress and
// Cancel. All model work goes to the EngineWorker on its own thread; the window holds the session: the
// analysis runs, the head selection, the interventions and the view state, saved to and opened from .hscope
// files.
#include <QMainWindow>
#include <QMargins>
#include <QThread>

#include <nlohmann/json.hpp>

#include <vector>

#include "gui_types.h"
#include "plot_export.h"
#include "tasks/icl_task.h"

class QCustomPlot;
class QCPColorMap;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;
class QUndoStack;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class AttentionTab;
class AttributionTab;
class DynamicsTab;
class EngineWorker;
class EvaluationDock;
class PromptTab;
class HeadsTab;
class InterventionsDock;
class LoadedFilesWatch;
class MethodDialog;
class RunsDock;
class OutputsTab;
class ResultsTab;
class TaskDock;
class WorkspaceViews;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Tab {
    HeadsTabIndex = 0,
    GeometryTabIndex,
    TaskVectorsTabIndex,
    AttentionTabIndex,
    PromptTabIndex,
    AttributionTabIndex,
    DynamicsTabIndex,
    ResultsTabIndex
  };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model on the worker; when done, previews the task, runs the prompt and — with `analyze` —
  // the start analyses (induction, and TSLA when built in) so the first screen shows real heatmaps.
  void openModel(const QString& path, const QString& tokenizer = {}, bool analyze = true);
  // `headscope` with no arguments: the toy model, the remembered (default: toy:category_label, 8 shots)
  // task, and the start analyses.
  void openDefault();
  // The analyses a model load runs (default: induction and TSLA; those not built in are skipped).
  // The methods run when a model opens: those whose record says so (MethodInfo::gui.at_start), in the
  // registry's order, unless set here (tests, screenshots).
  void setStartAnalyses(const QStringList& methods) {
    startAnalyses_ = methods;
    startAnalysesSet_ = true;
  }
  QStringList startAnalyses() const;
  // Queues the registry method `method` with `options` on the Task dock's task, or on `task` (a TaskSpec as
  // JSON) when that is not null; its run id is "<method>-<n>", unique in the session. A method that cannot
  // run on the task is refused with one error (false) before anything is queued.
  bool runAnalysis(const QString& method, const nlohmann::json& options = nlohmann::json::object(),
                   const nlohmann::json& task = nullptr);
  // The options form of `method` for the Task dock's task (the Run menu shows it); nullptr after an error.
  MethodDialog* createMethodDialog(const QString& method);
  // Removes runs (and their tensors) from the session.
  void deleteRuns(const QStringList& runIds);
  // "Evaluate with interventions" on the current task.
  void evaluate();

  // Sessions. Both return false on failure, after one error message (dialog when interactive); a failed
  // open leaves the current session exactly as it was.
  bool saveSessionTo(const QString& path);
  bool openSession(const QString& path);
  // Adds runs to the session without closing any (main_window_import.cpp): the runs of .hscope sessions
  // (the shipped published ones, `headscope-cli import-published` output, any session) and published
  // result files or folders (core/analysis/methods/published.h). A run whose id is taken gets the next free
  // one. False after one error message when a path cannot be read (then nothing is added).
  bool importRuns(const QStringList& paths);
  // The converted published sessions that ship with HeadScope (resources/published/*.hscope).
  static QStringList shippedPublishedSessions();
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
  OutputsTab* resultsTab() const { return outputsTab_; }
  TaskDock* taskDock() const { return taskDock_; }
  InterventionsDock* interventionsDock() const { return interventionsDock_; }
  EvaluationDock* evaluationDock() const { return evaluationDock_; }
  RunsDock* runsDock() const { return runsDock_; }
  QTabWidget* tabs() const { return tabs_; }
  QCustomPlot* attentionPlot() const;
  AttentionTab* attentionTab() const { return attentionTab_; }
  PromptTab* promptTab() const { return promptTab_; }
  AttributionTab* attributionTab() const { return attributionTab_; }
  DynamicsTab* dynamicsTab() const { return dynamicsTab_; }
  // The Head card, Agreement and Prompts tabs and the run diff windows (workspace_views.h).
  WorkspaceViews* workspaceViews() const { return workspace_; }
  QUndoStack* undoStack() const { return undo_; }
  // Runs of another model than the loaded one are closed (removed from the session).
  void closeOtherModelsRuns();
  // Fits the window into the available area of its screen (a restored geometry may lie off-screen), or
  // into `avail`. Where the full layout (two dock columns) does not fit, the docks become tabs of one
  // column (compactDocks), so the window fits 1024 × 700.
  // Until the window manager has framed the window (before it is first shown) its frame is unknown: room
  // for kAssumedFrame (a title bar and borders) is kept, and the window is fitted again once shown.
  void fitToScreen();
  void fitToScreen(const QRect& avail);
  static constexpr QMargins kAssumedFrame{6, 40, 6, 6};
  void compactDocks();
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
  // buildUi's parts: the centre tabs, then each dock (added to its area; returned where buildUi sizes it).
  void buildTabs();
  QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* content,
                       Qt::DockWidgetArea area);
  QDockWidget* buildModelDock();
  QDockWidget* buildTaskDock();
  QDockWidget* buildInterventionsDock();
  void buildEvaluationDock();
  void buildRunsDock();
  QDockWidget* buildLogDock();
  void buildMenus();
  // buildMenus' parts, one a menu in menu-bar order; the File menu's groups between its separators.
  void buildFileMenu();
  void addSessionActions(QMenu* file);
  void addImportMenu(QMenu* file);
  void addOpenModelActions(QMenu* file);
  void addExportActions(QMenu* file);
  void buildRunMenu();
  void buildEditMenu();
  void buildViewMenu();
  void buildHelpMenu();
  void onModelLoaded(const ModelInfo& info);
  void onAnalysis(const AnalysisOutputPtr& output);
  void onPrompt(const PromptView& view);
  void onPattern(const PatternView& view);
  void onTaskPreview(const TaskPreview& preview);
  void onFailed(const QString& job, const QString& message);
  void onProgress(double fraction, const QString& message);
  void requestPattern(HeadRef head);
  void requestPatterns();  // every head the Attention tab shows
  void requestPreview();
  void refreshResults();
  void runStartAnalyses();
  void updateTitle();
  // openSession's part for the view state's version-2 fields: the Prompt tab's text and toggles, the
  // Attention tab's prompt, the Evaluation dock's result (rebuilt from its evaluate run).
  void restorePromptAndEvaluation(const nlohmann::json& view);
  static constexpr int kViewStateVersion = 3;
  void interventionsChanged();
  // Undo / redo of the interventions (not of head selections): a snapshot is pushed after each change.
  void pushSnapshot();
  void restoreSnapshot(const nlohmann::json& state);
  nlohmann::json snapshot() const;
  std::vector<InterventionEntry> appliedEntries() const;  // what the Prompt / Attention tabs apply
  QString nextRunId(const QString& method) const;
  // Why `method` cannot run on `spec` ("" when it can).
  QString taskProblem(const QString& method, const TaskSpec& spec) const;
  void showError(const QString& title, const QString& message);
  void setDirty(bool on);
  void addRecent(const QString& path);
  void log(const QString& line);
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;
  bool fittedOnShow_ = false;
  void watchModelFiles(const ModelInfo& info);  // main_window_watch.cpp
  void onModelFilesChanged(const QStringList& paths);

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  bool interactive_ = true;
  bool busy_ = false;
  bool dirty_ = false;
  bool analyzeOnLoad_ = true;
  bool promptFromTask_ = false;  // the next task preview sets the prompt (toy model)
  bool startPending_ = false;    // the start analyses wait for the task preview (it checks the task)
  bool restoring_ = false;       // undo / redo or a session is being applied: no new snapshot
  bool refreshing_ = false;      // views are being refilled: their signals are not user edits
  QString taskPrompt_;           // the prompt text last taken from the task (replaced when the task changes)
  std::vector<std::string> startIds_;  // runs the start queued: their arrival does not dirty the session
  nlohmann::json lastSnapshot_;
  QString lastError_;
  QString sessionPath_;
  QString tokenizerPath_;
  LoadedFilesWatch* filesWatch_ = nullptr;
  // Run after a model loads: the head views on the Task dock's task; the task-vector methods (fv, site, ltv)
  // need a function task, so on the toy model they run on toy:antonym_a (kTaskVectorStartTask).
  QStringList startAnalyses_;
  bool startAnalysesSet_ = false;

  ModelInfo info_;
  PromptView prompt_;
  PatternView pattern_;
  std::vector<AnalysisOutputPtr> outputs_;
  std::vector<std::string> pendingIds_;  // ids of runs queued on the worker, not yet arrived

  QTabWidget* tabs_ = nullptr;
  HeadsTab* headsTab_ = nullptr;
  ResultsTab* geometryTab_ = nullptr;
  ResultsTab* taskVectorsTab_ = nullptr;
  AttentionTab* attentionTab_ = nullptr;
  PromptTab* promptTab_ = nullptr;
  AttributionTab* attributionTab_ = nullptr;
  DynamicsTab* dynamicsTab_ = nullptr;
  OutputsTab* outputsTab_ = nullptr;  // every curve and table of every run
  QLineEdit* promptEdit_ = nullptr;
  QUndoStack* undo_ = nullptr;
  QLabel* modelLabel_ = nullptr;
  TaskDock* taskDock_ = nullptr;
  InterventionsDock* interventionsDock_ = nullptr;
  EvaluationDock* evaluationDock_ = nullptr;
  RunsDock* runsDock_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  friend class WorkspaceViews;  // wires its views into the window's tabs, docks and worker
  WorkspaceViews* workspace_ = nullptr;
};

}  // namespace hs::gui
