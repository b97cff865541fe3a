#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTime>
#include <QTimer>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>

#include <QDir>

#include <functional>
#include <set>

#include "analysis/framework/registry.h"
#include "attention_tab.h"
#include "dynamics_view.h"
#include "engine_worker.h"
#include "evaluation_dock.h"
#include "glossary.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "method_dialog.h"
#include "model_dialog.h"
#include "outputs_tab.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "runs_dock.h"
#include "session_io.h"
#include "study_view.h"
#include "task_dock.h"
#include "workspace_views.h"

namespace hs::gui {

namespace {
const char* kDefaultPrompt = "Lily and Ben went to the park. Lily and Ben";

// Queues `f` on the worker's thread.
template <typename F>
void post(EngineWorker* w, F&& f) {
  QMetaObject::invokeMethod(w, std::forward<F>(f), Qt::QueuedConnection);
}

// One step of the undo stack: the interventions before and after a change. Head selections are not undo
// steps: Ctrl+Z always undoes the last change of the interventions, however many clicks came after it.
class SnapshotCommand : public QUndoCommand {
 public:
  SnapshotCommand(std::function<void(const nlohmann::json&)> apply, nlohmann::json before,
                  nlohmann::json after, const QString& text)
      : QUndoCommand(text), apply_(std::move(apply)), before_(std::move(before)), after_(std::move(after)) {}
  void undo() override { apply_(before_); }
  void redo() override {
    if (first_)  // the change has already happened when it is pushed
      first_ = false;
    else
      apply_(after_);
  }

 private:
  std::function<void(const nlohmann::json&)> apply_;
  nlohmann::json before_, after_;
  bool first_ = true;
};

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  registerMetaTypes();
  setWindowTitle("HeadScope — untitled[*]");  // the placeholder before any setWindowModified
  undo_ = new QUndoStack(this);
  buildUi();
  buildMenus();

  worker_ = new EngineWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &EngineWorker::modelLoaded, this, &MainWindow::onModelLoaded);
  connect(worker_, &EngineWorker::analysisReady, this, &MainWindow::onAnalysis);
  connect(worker_, &EngineWorker::promptReady, this, &MainWindow::onPrompt);
  connect(worker_, &EngineWorker::patternReady, this, &MainWindow::onPattern);
  connect(worker_, &EngineWorker::taskPreviewReady, this, &MainWindow::onTaskPreview);
  connect(worker_, &EngineWorker::evaluationReady, this, [this](const EvalResult& r) {
    evaluationDock_->setResult(r);
    evaluationDock_->setCurrent(QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()),
                                interventionsDock_->entries());
    log(QString("evaluated %1: ICL accuracy %2 → %3 with %4 heads ablated")
            .arg(r.task)
            .arg(r.icl.accuracy, 0, 'f', 3)
            .arg(r.iclIntervened.accuracy, 0, 'f', 3)
            .arg(r.nAblated));
    Q_EMIT evaluationShown();
  });
  connect(worker_, &EngineWorker::failed, this, &MainWindow::onFailed);
  connect(worker_, &EngineWorker::cancelled, this, [this](const QString& job) {
    log(job + ": cancelled");
    progress_->reset();  // a cancelled job is not complete: no 100 %
    Q_EMIT jobCancelled(job);
  });
  connect(worker_, &EngineWorker::progress, this, &MainWindow::onProgress);
  connect(worker_, &EngineWorker::trainingPoint, this, [this](const QString& curve, int step, double value) {
    taskVectorsTab_->addLivePoint("site.loss", curve, step, value);
  });
  connect(worker_, &EngineWorker::busy, this, [this](bool b) {
    busy_ = b;
    cancel_->setEnabled(b);
    if (b) progress_->setValue(0);
  });
  thread_.start();
  workspace_ = new WorkspaceViews(this);

  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  fitToScreen();
  const QString task = settings.value("task/spec").toString();
  if (!task.isEmpty()) {
    try {
      taskDock_->setSpec(taskSpecFromJson(nlohmann::json::parse(task.toStdString())));
    } catch (const std::exception& e) {
      log("ignored the remembered task settings: " + QString::fromStdString(e.what()));
    }
  }
  lastSnapshot_ = snapshot();
  setDirty(false);
}

void MainWindow::fitToScreen() {
  const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
  if (screen) fitToScreen(screen->availableGeometry());
}

void MainWindow::compactDocks() {
  auto* first = findChild<QDockWidget*>("ModelDock");
  if (dockWidgetArea(first) != Qt::RightDockWidgetArea) addDockWidget(Qt::RightDockWidgetArea, first);
  for (const char* name : {"TaskDock", "InterventionsDock", "EvaluationDock", "RunsDock"}) {
    auto* dock = findChild<QDockWidget*>(name);
    if (dock->isFloating() || dock->isHidden()) continue;  // the user's choice stays
    tabifyDockWidget(first, dock);
  }
  first->raise();
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (fittedOnShow_) return;
  fittedOnShow_ = true;
  // The window manager frames the window after it is shown: fit again with the real frame.
  QTimer::singleShot(0, this, [this] { fitToScreen(); });
}

void MainWindow::fitToScreen(const QRect& avail) {
  QRect g = frameGeometry();
  QSize frame = frameGeometry().size() - geometry().size();
  QPoint inset(geometry().topLeft() - frameGeometry().topLeft());
  if (!isVisible() && frame.isEmpty()) {  // not framed yet: keep room for a title bar and borders
    frame = QSize(kAssumedFrame.left() + kAssumedFrame.right(), kAssumedFrame.top() + kAssumedFrame.bottom());
    inset = QPoint(kAssumedFrame.left(), kAssumedFrame.top());
    g = QRect(geometry().topLeft() - inset, geometry().size() + frame);
  }
  const QSize room = avail.size() - frame;
  if (minimumSizeHint().width() > room.width() || minimumSizeHint().height() > room.height()) {
    compactDocks();
    layout()->activate();  // the minimum size of the tabbed layout, before the window is resized to it
    log(QString("the screen (%1 × %2) is smaller than the full layout: the docks are tabs of one column "
                "(drag a tab out to place it elsewhere)")
            .arg(avail.width())
            .arg(avail.height()));
  }
  const QSize inner(std::min(width(), avail.width() - frame.width()),
                    std::min(height(), avail.height() - frame.height()));
  if (inner != size()) resize(inner);
  g = QRect(geometry().topLeft() - inset, geometry().size() + frame);
  QPoint to = g.topLeft();
  if (g.right() > avail.right()) to.setX(avail.right() - g.width() + 1);
  if (g.bottom() > avail.bottom()) to.setY(avail.bottom() - g.height() + 1);
  to.setX(std::max(to.x(), avail.left()));
  to.setY(std::max(to.y(), avail.top()));
  if (to != g.topLeft()) move(to);  // a window's position is its frame's
}

QCustomPlot* MainWindow::attentionPlot() const {
  return attentionTab_->plot();
}

nlohmann::json MainWindow::snapshot() const {
  // The session's form of the entries, so that undo covers every parameter the session keeps.
  return {{"interventions", interventionsToJson(interventionsDock_->entries())}};
}

void MainWindow::restoreSnapshot(const nlohmann::json& state) {
  restoring_ = true;
  const std::vector<InterventionEntry> entries = interventionsFromJson(state.at("interventions"), "undo");
  interventionsDock_->setEntries(entries);
  lastSnapshot_ = snapshot();
  restoring_ = false;
  setDirty(true);
}

void MainWindow::pushSnapshot() {
  if (restoring_) return;
  const nlohmann::json now = snapshot();
  if (now == lastSnapshot_) return;
  undo_->push(new SnapshotCommand([this](const nlohmann::json& st) { restoreSnapshot(st); }, lastSnapshot_,
                                  now, "interventions"));
  lastSnapshot_ = now;
}

std::vector<InterventionEntry> MainWindow::appliedEntries() const {
  if (!promptTab_->applyInterventions()) return {};
  std::vector<InterventionEntry> out;
  for (const InterventionEntry& e : interventionsDock_->entries())
    if (e.enabled) out.push_back(e);
  return out;
}

void MainWindow::interventionsChanged() {
  if (!refreshing_) setDirty(true);
  pushSnapshot();
  evaluationDock_->setCurrent(QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()),
                              interventionsDock_->entries());
  // The Prompt and Attention tabs follow the ticked interventions.
  if (!info_.path.isEmpty() && !restoring_) {
    runPrompt();
    requestPatterns();
  }
}

MainWindow::~MainWindow() {
  worker_->requestCancel();
  thread_.quit();
  thread_.wait();
}

void MainWindow::buildUi() {
  buildTabs();
  // Left: Model and Task docks.
  QDockWidget* modelDock = buildModelDock();
  QDockWidget* taskDockWidget = buildTaskDock();
  // Right: Interventions, Evaluation and Runs.
  QDockWidget* ivDock = buildInterventionsDock();
  buildEvaluationDock();
  buildRunsDock();
  // Bottom: log, progress, Cancel.
  QDockWidget* logDock = buildLogDock();
  resize(1560, 960);  // fitToScreen() shrinks it on smaller screens
  resizeDocks({logDock}, {130}, Qt::Vertical);
  resizeDocks({modelDock, taskDockWidget}, {170, 420}, Qt::Vertical);
  resizeDocks({modelDock, ivDock}, {300, 300}, Qt::Horizontal);
}

// The centre: Heads, Geometry, Task vectors, Attention, Prompt, Attribution, Dynamics, Results (the Tab
// indices).
void MainWindow::buildTabs() {
  tabs_ = new QTabWidget;
  tabs_->setUsesScrollButtons(true);   // tabs scroll instead of widening the window
  tabs_->setElideMode(Qt::ElideNone);  // whole titles; the scroll buttons reach the rest
  setCentralWidget(tabs_);

  headsTab_ = new HeadsTab;
  tabs_->addTab(headsTab_, "Heads");
  HeadGridView* heads = headsTab_->view();
  connect(heads, &HeadGridView::selectionChanged, this, [this](const std::vector<HeadRef>& sel) {
    if (!refreshing_) setDirty(true);
    if (!sel.empty() && headsTab_->showsLoadedModel()) {
      attentionTab_->setHeads(sel);
      requestPatterns();
    }
  });
  connect(heads, &HeadGridView::showPattern, this, [this](HeadRef h) {
    requestPattern(h);
    tabs_->setCurrentIndex(AttentionTabIndex);
  });

  geometryTab_ = makeGeometryTab();
  tabs_->addTab(geometryTab_, "Geometry");
  taskVectorsTab_ = makeTaskVectorsTab();
  tabs_->addTab(taskVectorsTab_, "Task vectors");

  // Attention: the selected heads' patterns on the chosen prompt.
  attentionTab_ = new AttentionTab;
  tabs_->addTab(attentionTab_, "Attention");
  connect(attentionTab_, &AttentionTab::promptChanged, this, &MainWindow::requestPatterns);

  // Prompt: text, tokens with ids, top-k next tokens (clean and intervened), logit lens at every position.
  promptTab_ = new PromptTab(kDefaultPrompt);
  promptEdit_ = promptTab_->edit();
  tabs_->addTab(promptTab_, "Prompt");
  connect(promptTab_, &PromptTab::runRequested, this, [this] {
    runPrompt();
    requestPatterns();
  });
  attributionTab_ = new AttributionTab;
  tabs_->addTab(attributionTab_, "Attribution");
  // Dynamics: a grid across a model's training checkpoints (published OLMo-2 / Pythia series).
  dynamicsTab_ = new DynamicsTab;
  tabs_->addTab(dynamicsTab_, "Dynamics");
  connect(dynamicsTab_, &DynamicsTab::changed, this, [this] {
    if (!refreshing_ && !restoring_) setDirty(true);
  });
  // Results: every curve and table of every run, whatever method made it (the registry's outputs).
  outputsTab_ = new OutputsTab;
  tabs_->addTab(outputsTab_, "Results");
}

// A dock holding `content`, added to `area`; saved window states find it by `objectName`.
QDockWidget* MainWindow::addDock(const QString& title, const QString& objectName, QWidget* content,
                                 Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(objectName);
  dock->setWidget(content);
  addDockWidget(area, dock);
  return dock;
}

QDockWidget* MainWindow::buildModelDock() {
  modelLabel_ = new QLabel("No model loaded.\nFile → Open model…");
  modelLabel_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  modelLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  modelLabel_->setMinimumWidth(220);
  modelLabel_->setWordWrap(true);
  // Scrolls when a model's notes are longer than the dock is tall, instead of clipping them.
  auto* modelScroll = new QScrollArea;
  modelScroll->setWidget(modelLabel_);
  modelScroll->setWidgetResizable(true);
  modelScroll->setFrameShape(QFrame::NoFrame);
  modelScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  return addDock("Model", "ModelDock", modelScroll, Qt::LeftDockWidgetArea);
}

QDockWidget* MainWindow::buildTaskDock() {
  taskDock_ = new TaskDock;
  QDockWidget* dock = addDock("Task", "TaskDock", taskDock_, Qt::LeftDockWidgetArea);
  connect(taskDock_, &TaskDock::changed, this, [this](bool byUser) {
    QSettings().setValue("task/spec", QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()));
    if (byUser) setDirty(true);
    requestPreview();
  });
  return dock;
}

// The Interventions dock, and the head views' menu entries that add to it.
QDockWidget* MainWindow::buildInterventionsDock() {
  interventionsDock_ = new InterventionsDock;
  QDockWidget* dock =
      addDock("Interventions", "InterventionsDock", interventionsDock_, Qt::RightDockWidgetArea);
  connect(interventionsDock_, &InterventionsDock::changed, this, &MainWindow::interventionsChanged);
  connect(interventionsDock_, &InterventionsDock::notice, this, [this](const QString& m) {
    log(m);
    statusBar()->showMessage(m, 8000);
  });
  HeadGridView* heads = headsTab_->view();
  connect(heads, &HeadGridView::zeroAblate, this, [this](const std::vector<HeadRef>& h) {
    interventionsDock_->add(InterventionKind::ZeroAblate, h);
  });
  connect(heads, &HeadGridView::meanAblate, this, [this](const std::vector<HeadRef>& h) {
    interventionsDock_->add(InterventionKind::MeanAblate, h);
  });
  connect(heads, &HeadGridView::patchFromClean, this, [this](const std::vector<HeadRef>& h) {
    interventionsDock_->add(InterventionKind::PatchClean, h);
  });
  connect(heads, &HeadGridView::addToSteering, this,
          [this](const std::vector<HeadRef>& h) { interventionsDock_->add(InterventionKind::Steer, h); });
  return dock;
}

void MainWindow::buildEvaluationDock() {
  evaluationDock_ = new EvaluationDock;
  addDock("Evaluation", "EvaluationDock", evaluationDock_, Qt::RightDockWidgetArea);
  connect(evaluationDock_, &EvaluationDock::evaluateRequested, this, &MainWindow::evaluate);
}

void MainWindow::buildRunsDock() {
  runsDock_ = new RunsDock;
  addDock("Runs", "RunsDock", runsDock_, Qt::RightDockWidgetArea);
  connect(runsDock_, &RunsDock::deleteRequested, this, &MainWindow::deleteRuns);
  connect(runsDock_, &RunsDock::closeOtherModelsRequested, this, &MainWindow::closeOtherModelsRuns);
}

QDockWidget* MainWindow::buildLogDock() {
  auto* logPage = new QWidget;
  auto* ll = new QVBoxLayout(logPage);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  ll->setContentsMargins(2, 2, 2, 2);
  ll->addWidget(log_, 1);
  QDockWidget* dock = addDock("Log", "LogDock", logPage, Qt::BottomDockWidgetArea);
  // Progress and Cancel live in the status bar, visible whatever docks are closed.
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(260);
  cancel_ = new QPushButton("Cancel");
  cancel_->setEnabled(false);
  cancel_->setToolTip("Stop the running job (Esc)");
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelJob);
  return dock;
}

void MainWindow::buildMenus() {
  buildFileMenu();
  buildRunMenu();
  buildEditMenu();
  buildViewMenu();
  buildHelpMenu();
}

void MainWindow::buildFileMenu() {
  auto* file = menuBar()->addMenu("&File");
  addSessionActions(file);
  file->addSeparator();
  addOpenModelActions(file);
  file->addSeparator();
  addExportActions(file);
  file->addSeparator();
  auto* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
}

// Open, import into, save the session; open a batch folder.
void MainWindow::addSessionActions(QMenu* file) {
  auto* openSessionAction = file->addAction("&Open session…");
  openSessionAction->setShortcut(QKeySequence::Open);
  connect(openSessionAction, &QAction::triggered, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Open a HeadScope session", {},
                                                   "HeadScope sessions (*.hscope);;All files (*)");
    if (!f.isEmpty()) openSession(f);
  });
  addImportMenu(file);
  auto* openBatch = file->addAction("Open &batch folder…");  // watched as it runs (study_view.h)
  openBatch->setObjectName("openBatchFolder");
  connect(openBatch, &QAction::triggered, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, "Open a batch folder (headscope-cli batch --out DIR)");
    if (dir.isEmpty()) return;
    QString error;
    StudyView* study = openStudyWindow(this, dir, &error);
    if (!study)
      showError("open batch folder", error);
    else if (!info_.label.isEmpty())
      study->setSilentHeads(info_.label, info_.silent);  // as the Heads tab
  });
  recentMenu_ = file->addMenu("Open &recent");
  connect(recentMenu_, &QMenu::aboutToShow, this, [this] {
    recentMenu_->clear();
    for (const QString& f : QSettings().value("session/recent").toStringList())
      connect(recentMenu_->addAction(f), &QAction::triggered, this, [this, f] { openSession(f); });
    if (recentMenu_->isEmpty()) recentMenu_->addAction("(none)")->setEnabled(false);
  });
  auto* save = file->addAction("&Save session");
  save->setShortcut(QKeySequence::Save);
  auto* saveAs = file->addAction("Save session &as…");
  saveAs->setShortcut(QKeySequence::SaveAs);
  auto saveAsFn = [this] {
    QString f =
        QFileDialog::getSaveFileName(this, "Save the session", sessionPath_, "HeadScope sessions (*.hscope)");
    if (f.isEmpty()) return false;
    if (!f.endsWith(".hscope")) f += ".hscope";
    return saveSessionTo(f);
  };
  connect(saveAs, &QAction::triggered, this, saveAsFn);
  connect(save, &QAction::triggered, this, [this, saveAsFn] {
    if (sessionPath_.isEmpty())
      saveAsFn();
    else
      saveSessionTo(sessionPath_);
  });
}

void MainWindow::addImportMenu(QMenu* file) {
  // Published results (and other sessions' runs) join the open session; nothing of it is closed.
  auto* importMenu = file->addMenu("&Import published results");
  importMenu->setObjectName("ImportPublishedMenu");
  connect(importMenu, &QMenu::aboutToShow, this, [this, importMenu] {
    importMenu->clear();
    for (const QString& f : shippedPublishedSessions()) {
      QAction* a = importMenu->addAction(QFileInfo(f).completeBaseName().replace('_', ' ') + " (shipped)");
      a->setToolTip(f);
      connect(a, &QAction::triggered, this, [this, f] { importRuns({f}); });
    }
    if (!importMenu->isEmpty()) importMenu->addSeparator();
    connect(importMenu->addAction("&Files or sessions…"), &QAction::triggered, this, [this] {
      const QStringList f =
          QFileDialog::getOpenFileNames(this, "Import published results or a session's runs", {},
                                        "Sessions and published results (*.hscope *.json);;All files (*)");
      if (!f.isEmpty()) importRuns(f);
    });
    connect(importMenu->addAction("F&older…"), &QAction::triggered, this, [this] {
      const QString dir = QFileDialog::getExistingDirectory(
          this,
          "Import a folder of published results (e.g. causal_scores/OLMo-2-1124-7B: one run per checkpoint)");
      if (!dir.isEmpty()) importRuns({dir});
    });
  });
}

void MainWindow::addOpenModelActions(QMenu* file) {
  auto* openDialog = file->addAction("Open mo&del…");  // path or hub id, dtype, device (model_dialog.h)
  openDialog->setShortcut(QKeySequence("Ctrl+Shift+M"));
  connect(openDialog, &QAction::triggered, this, [this] {
    ModelDialog d(this);
    if (d.exec() == QDialog::Accepted) openModel(d.path(), d.tokenizer());
  });
  auto* openFolder = file->addAction("Open model &folder…");
  openFolder->setShortcut(QKeySequence("Ctrl+Shift+O"));
  connect(openFolder, &QAction::triggered, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a Hugging Face model folder");
    if (!dir.isEmpty()) openModel(dir);
  });
  auto* openFile = file->addAction("Open &model file…");
  openFile->setShortcut(QKeySequence("Ctrl+M"));
  connect(openFile, &QAction::triggered, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Open a model file", {},
                                                   "Models (*.gguf *.bin *.safetensors);;All files (*)");
    if (f.isEmpty()) return;
    QString tok;
    if (f.endsWith(".bin"))
      tok = QFileDialog::getOpenFileName(this, "Tokenizer for the llama2.c model (optional)",
                                         QFileInfo(f).path());
    openModel(f, tok);
  });
  connect(file->addAction("Open the &toy model"), &QAction::triggered, this, [this] { openModel("toy"); });
}

void MainWindow::addExportActions(QMenu* file) {
  auto* exportPlot = file->addAction("&Export plot…");
  exportPlot->setShortcut(QKeySequence("Ctrl+Shift+E"));
  connect(exportPlot, &QAction::triggered, this, [this] {
    if (QCustomPlot* p = currentPlot())
      ExportDialog::run(*p, this);
    else
      showError("Export", "This tab has no plot to export yet.");
  });
  auto* exportData = file->addAction("Export &data (CSV/JSON)…");
  connect(exportData, &QAction::triggered, this, [this] {
    const QString f =
        QFileDialog::getSaveFileName(this, "Export the shown grid", {}, "CSV (*.csv);;JSON (*.json)");
    if (!f.isEmpty()) exportCurrentData(f);
  });
}

void MainWindow::buildRunMenu() {
  auto* run = menuBar()->addMenu("&Run");
  run->setObjectName("RunMenu");
  for (const MethodInfo& method : methods()) {
    if (!method.gui.run_menu) continue;  // another control runs it (Evaluate: the Evaluation dock)
    if (method.imported) continue;       // imported (headscope-cli import-published), not computed
    const QString m = QString::fromStdString(method.name);
    auto* a = run->addAction(QString::fromStdString(method.title) + "…");
    a->setObjectName("run:" + m);
    a->setToolTip(QString::fromStdString(method.description));
    if (!method.gui.shortcut.empty())
      a->setShortcut(QKeySequence(QString::fromStdString(method.gui.shortcut)));
    connect(a, &QAction::triggered, this, [this, m] {
      std::unique_ptr<MethodDialog> d(createMethodDialog(m));
      if (d && d->exec() == QDialog::Accepted) runAnalysis(m, d->options());
    });
  }
  run->addSeparator();
  auto* eval = run->addAction("&Evaluate with interventions");
  eval->setShortcut(QKeySequence("Ctrl+E"));
  connect(eval, &QAction::triggered, this, &MainWindow::evaluate);
  auto* cancel = run->addAction("&Cancel");
  cancel->setShortcut(QKeySequence("Esc"));
  connect(cancel, &QAction::triggered, this, &MainWindow::cancelJob);
}

void MainWindow::buildEditMenu() {
  auto* edit = menuBar()->addMenu("&Edit");
  auto* undo = undo_->createUndoAction(this, "&Undo");
  undo->setShortcut(QKeySequence::Undo);
  auto* redo = undo_->createRedoAction(this, "&Redo");
  redo->setShortcut(QKeySequence::Redo);
  edit->addAction(undo);
  edit->addAction(redo);
}

void MainWindow::buildViewMenu() {
  auto* view = menuBar()->addMenu("&View");
  view->setObjectName("ViewMenu");
  const char* names[] = {"&Heads",  "&Geometry",    "&Task vectors", "&Attention",
                         "&Prompt", "Att&ribution", "&Dynamics"};
  for (int i = 0; i < 7; ++i) {
    auto* a = view->addAction(names[i]);
    a->setShortcut(QKeySequence(QString("Ctrl+%1").arg(i + 1)));
    connect(a, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
  }
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>())
    view->addAction(d->toggleViewAction());
}

void MainWindow::buildHelpMenu() {
  auto* help = menuBar()->addMenu("&Help");
  connect(help->addAction("&Glossary of metrics"), &QAction::triggered, this, [this] { showGlossary(this); });
  connect(help->addAction("&About HeadScope"), &QAction::triggered, this, [this] {
    QMessageBox::about(this, "About HeadScope",
                       QString("<b>HeadScope %1</b><p>A workbench for finding out how transformer language "
                               "models learn in context: per-head analyses, interventions and their "
                               "evaluation on your own checkpoints.</p><p>Qt %2 · libtorch</p>")
                           .arg(QApplication::applicationVersion(), qVersion()));
  });
  connect(headsTab_, &HeadsTab::glossaryRequested, this,
          [this](const QString& metric) { showGlossary(this, metric); });
}

HeadGridView* MainWindow::headsView() const {
  return headsTab_->view();
}

// Without a tokenizer the loader takes the one beside the model (a llama2.c tok<vocab>.bin of the model's
// vocabulary size, a folder's tokenizer.json) and says in the Model dock when it found none.
void MainWindow::openModel(const QString& path, const QString& tokenizer, bool analyze) {
  log("opening " + path + (tokenizer.isEmpty() ? QString() : " with tokenizer " + tokenizer));
  analyzeOnLoad_ = analyze;
  tokenizerPath_ = tokenizer;
  const ModelOpenSettings how = ModelOpenSettings::remembered();  // the Open model dialog's choices
  post(worker_, [w = worker_, path, tokenizer, how] {
    w->loadModel(path, tokenizer, how.dtype, how.device, how.gpuLayers);
  });
}

void MainWindow::openDefault() {
  // The toy model speaks only its own world: a remembered task from a real model's dataset cannot run on it.
  const TaskSpec spec = taskDock_->spec();
  if (spec.dataset.rfind("toy:", 0) != 0) {
    TaskSpec toy = spec;
    toy.dataset = "toy:category_label";
    toy.label_words.clear();
    toy.template_id.clear();
    log("the remembered task " + QString::fromStdString(spec.dataset) +
        " is not a toy-world task; the toy model starts on toy:category_label");
    taskDock_->setSpec(toy);
  }
  openModel("toy");
}

namespace {
// The task the task-vector views start with on the toy model: a function task the model does with
// demonstrations and rarely without, so task vectors have a gap to close.
nlohmann::json taskVectorStartTask() {
  TaskSpec spec;
  spec.dataset = "toy:antonym_a";
  spec.shots = 10;
  spec.n_prompts = 50;
  spec.seed = 1;
  return taskSpecToJson(spec);
}
}  // namespace

QString MainWindow::nextRunId(const QString& method) const {
  std::vector<std::string> taken;
  for (const AnalysisOutputPtr& o : outputs_)
    taken.push_back(runOf(o).id);
  taken.insert(taken.end(), pendingIds_.begin(), pendingIds_.end());
  return QString::fromStdString(uniqueRunId(method.toStdString(), taken));
}

QString MainWindow::taskProblem(const QString& method, const TaskSpec& spec) const {
  const MethodInfo* m = findMethod(method.toStdString());
  if (!m) return "no analysis method \"" + method + "\" in this build";
  if (!m->takesTask()) return {};
  try {
    return QString::fromStdString(taskMismatch(*m, spec));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

MethodDialog* MainWindow::createMethodDialog(const QString& method) {
  const MethodInfo* m = findMethod(method.toStdString());
  if (!m) {
    showError("run", "no analysis method \"" + method + "\" in this build");
    return nullptr;
  }
  const TaskSpec spec = taskDock_->spec();
  const QString task = QString("%1, %2 shots, %3 prompts, seed %4")
                           .arg(QString::fromStdString(spec.dataset))
                           .arg(spec.shots)
                           .arg(spec.n_prompts)
                           .arg(spec.seed);
  return new MethodDialog(*m, task, taskProblem(method, spec), this);
}

bool MainWindow::runAnalysis(const QString& method, const nlohmann::json& options,
                             const nlohmann::json& taskOverride) {
  TaskSpec spec;
  try {
    spec = taskOverride.is_null() ? taskDock_->spec() : taskSpecFromJson(taskOverride);
  } catch (const std::exception& e) {
    showError(method, QString::fromStdString(e.what()));
    return false;
  }
  if (const QString why = taskProblem(method, spec); !why.isEmpty()) {
    showError(method, why);
    return false;
  }
  if (info_.path.isEmpty()) {  // no analysis starts that cannot run
    showError(method, "no model is loaded; open one first (File → Open model…)");
    return false;
  }
  const QString id = nextRunId(method);
  pendingIds_.push_back(id.toStdString());
  const QString task = QString::fromStdString(taskSpecToJson(spec).dump());
  const QString opts = QString::fromStdString(options.dump());
  log("running " + method + " as " + id);
  post(worker_, [w = worker_, method, task, opts, id] { w->runAnalysis(method, task, opts, id); });
  return true;
}

void MainWindow::deleteRuns(const QStringList& ids) {
  const size_t before = outputs_.size();
  outputs_.erase(std::remove_if(outputs_.begin(), outputs_.end(),
                                [&](const AnalysisOutputPtr& o) {
                                  return ids.contains(QString::fromStdString(runOf(o).id));
                                }),
                 outputs_.end());
  if (outputs_.size() == before) return;
  log(QString("deleted %1 run(s): %2").arg(before - outputs_.size()).arg(ids.join(", ")));
  refreshResults();
  setDirty(true);
}

void MainWindow::computeHeadScores() {
  runAnalysis("induction");
}

void MainWindow::evaluate() {
  if (info_.path.isEmpty()) {
    showError("evaluate", "no model is loaded");
    return;
  }
  const TaskSpec spec = taskDock_->spec();
  if (const QString why = taskProblem("evaluate", spec); !why.isEmpty()) {
    showError("evaluate", why);
    return;
  }
  const std::vector<InterventionEntry> entries = interventionsDock_->entries();
  try {  // parameters the method does not take are refused here, before anything runs
    evaluateOptions(entries);
  } catch (const std::exception& e) {
    showError("evaluate", QString::fromStdString(e.what()));
    return;
  }
  const QString task = QString::fromStdString(taskSpecToJson(spec).dump());
  const QString id = nextRunId("evaluate");
  const int draws = interventionsDock_->enabledHeads() > 0 ? evaluationDock_->randomDraws() : 0;
  pendingIds_.push_back(id.toStdString());
  log(QString("evaluating %1 with %2 heads under interventions as %3")
          .arg(QString::fromStdString(spec.dataset))
          .arg(interventionsDock_->enabledHeads())
          .arg(id));
  post(worker_, [w = worker_, task, entries, id, draws] { w->evaluate(task, entries, id, draws); });
}

void MainWindow::requestPreview() {
  if (info_.path.isEmpty()) return;
  const QString task = QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump());
  post(worker_, [w = worker_, task] { w->previewTask(task); });
}

QString MainWindow::promptText() const {
  return promptEdit_->text();
}
void MainWindow::setPromptText(const QString& text) {
  promptEdit_->setText(text);
}

void MainWindow::runPrompt() {
  if (info_.path.isEmpty()) return;  // nothing to run it on yet; onModelLoaded runs it
  const QString text = promptEdit_->text();
  const std::vector<InterventionEntry> entries = appliedEntries();
  const QString task = QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump());
  post(worker_, [w = worker_, text, entries, task] { w->runPrompt(text, 10, entries, task); });
}

void MainWindow::cancelJob() {
  if (!busy_) return;  // Esc with nothing running does nothing
  worker_->requestCancel();
  log("cancel requested");
}

void MainWindow::requestPattern(HeadRef h) {
  if (info_.path.isEmpty()) return;  // no model yet: onModelLoaded requests the selected heads' patterns
  const QString chosen = attentionTab_->chosenPrompt();
  const QString text = chosen.isEmpty() ? promptEdit_->text() : chosen;
  const std::vector<InterventionEntry> entries = appliedEntries();
  const QString task = QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump());
  post(worker_,
       [w = worker_, text, h, entries, task] { w->attentionPattern(text, h.layer, h.head, entries, task); });
}

void MainWindow::requestPatterns() {
  for (const HeadRef& h : attentionTab_->heads())
    requestPattern(h);
}

void MainWindow::onModelLoaded(const ModelInfo& i) {
  QString text = QString(
                     "<b>%1</b><br>%2 · %3<br><br>"
                     "layers %4 · heads %5 (kv %6)<br>d_model %7 · d_head %8 · d_mlp %9<br>"
                     "vocab %10 · context %11<br>parameters %12<br>dtype %13 · tokenizer %14<br>device %15")
                     .arg(QFileInfo(i.path).fileName().toHtmlEscaped(), i.architecture, i.format)
                     .arg(i.layers)
                     .arg(i.heads)
                     .arg(i.kvHeads)
                     .arg(i.dModel)
                     .arg(i.dHead)
                     .arg(i.dMlp)
                     .arg(i.vocab)
                     .arg(i.context)
                     .arg(QLocale().toString(i.params))
                     .arg(i.dtype, i.tokenizer, i.device.toHtmlEscaped());
  for (const QString& n : i.notes)
    text += "<br><i>" + n.toHtmlEscaped() + "</i>";
  if (!i.silent.empty()) text += QString("<br>silent heads (W_O all zero, hatched): %1").arg(i.silent.size());
  modelLabel_->setText(text);
  const QString previous = info_.label;
  info_ = i;
  QSettings().setValue("model/last", i.path);
  log(QString("loaded %1: %2 layers × %3 heads").arg(i.path).arg(i.layers).arg(i.heads));
  // Another model: the interventions named the old model's heads, so they go (undo brings them back).
  if (!previous.isEmpty() && previous != i.label && !interventionsDock_->entries().empty()) {
    log(QString("cleared %1 intervention(s) of the previous model")
            .arg(interventionsDock_->entries().size()));
    interventionsDock_->clear();
  }
  headsTab_->setSilentHeads(i.silent);
  for (StudyView* study : findChildren<StudyView*>())  // open studies rank as the Heads tab does
    study->setSilentHeads(i.label, i.silent);
  interventionsDock_->setModelLayers(i.layers);
  refreshResults();
  updateTitle();
  watchModelFiles(i);
  Q_EMIT modelReady();
  // The toy model speaks only the toy world: its prompt comes from the task.
  const bool toy = i.toyVocabulary;
  promptFromTask_ = toy && (promptEdit_->text() == kDefaultPrompt || promptEdit_->text() == taskPrompt_);
  startPending_ = analyzeOnLoad_;
  requestPreview();
  if (!promptFromTask_) runPrompt();
  // A session restored before the model arrived: its selected heads' patterns can be computed now.
  const std::vector<HeadRef> sel = headsView()->selection();
  if (!sel.empty()) {
    attentionTab_->setHeads(sel);
    requestPatterns();
  }
}

QStringList MainWindow::startAnalyses() const {
  if (startAnalysesSet_) return startAnalyses_;
  QStringList names;
  for (const MethodInfo& m : methods())
    if (m.gui.at_start && !m.imported) names << QString::fromStdString(m.name);
  return names;
}

void MainWindow::runStartAnalyses() {
  startPending_ = false;
  const bool toy = info_.toyVocabulary;
  {
    for (const QString& method : startAnalyses()) {
      const MethodInfo* m = findMethod(method.toStdString());
      if (!m) continue;
      const bool taskVector = m->gui.start_on_open_task;
      // Minutes to hours on a real model: the Run menu has it.
      if (m->gui.start_on_toy_only && !toy) continue;
      const nlohmann::json task = taskVector ? taskVectorStartTask() : taskSpecToJson(taskDock_->spec());
      // A start analysis that cannot run on this task is skipped with a line in the log, not a dialog.
      QString why = taskProblem(method, taskSpecFromJson(task));
      const TaskPreview& p = taskDock_->preview();
      if (why.isEmpty() && m && m->takesTask() && !taskVector) {
        const std::string dataset = taskDock_->spec().dataset;
        if (!toy && dataset.rfind("toy:", 0) == 0)
          why = "the toy-world task " + QString::fromStdString(dataset) + " is for the toy model";
        else if (!p.error.isEmpty())
          why = p.error;
        else if (!p.unknownWords.isEmpty())
          why = "the model's tokenizer does not know " + p.unknownWords.join(", ");
      }
      if (!why.isEmpty()) {
        log("skipped " + method + " at start: " + why);
        continue;
      }
      // The first screen wants heatmaps quickly: each method's record says what it runs at start (the Run
      // menu runs it whole).
      if (runAnalysis(method, m->gui.start_options, task)) startIds_.push_back(pendingIds_.back());
    }
  }
}

void MainWindow::updateTitle() {
  const QString name = sessionPath_.isEmpty() ? "untitled" : QFileInfo(sessionPath_).fileName();
  const QString model = info_.path.isEmpty() ? QString() : " · " + QFileInfo(info_.path).fileName();
  setWindowTitle(QString("HeadScope — %1[*]%2").arg(name, model));
}

void MainWindow::closeOtherModelsRuns() {
  QStringList ids;
  for (const AnalysisRun& r : runs())
    if (!info_.label.isEmpty() && !r.provenance.model.empty() &&
        QString::fromStdString(r.provenance.model) != info_.label)
      ids << QString::fromStdString(r.id);
  if (!ids.isEmpty()) deleteRuns(ids);
}

std::vector<AnalysisRun> MainWindow::runs() const {
  std::vector<AnalysisRun> out;
  for (const AnalysisOutputPtr& o : outputs_)
    out.push_back(runOf(o));
  return out;
}

void MainWindow::refreshResults() {
  const std::vector<AnalysisRun> all = runs();
  // The views show the loaded model's runs (all runs while no model is loaded); the Runs dock lists every
  // run, those of other models greyed, with a button to close them.
  std::vector<AnalysisRun> shown;
  for (const AnalysisRun& r : all)
    if (info_.label.isEmpty() || r.provenance.model.empty() ||
        QString::fromStdString(r.provenance.model) == info_.label)
      shown.push_back(r);
  std::vector<AnalysisRun> others;  // other models' runs: the Heads tab compares with them
  for (const AnalysisRun& r : all)
    if (!info_.label.isEmpty() && !r.provenance.model.empty() &&
        QString::fromStdString(r.provenance.model) != info_.label)
      others.push_back(r);
  refreshing_ = true;
  headsTab_->setRuns(shown, others);
  dynamicsTab_->setRuns(all);
  geometryTab_->setRuns(shown);
  taskVectorsTab_->setRuns(shown);
  outputsTab_->setRuns(shown);
  runsDock_->setRuns(all, info_.label);
  if (workspace_) workspace_->setRuns(shown, others);
  refreshing_ = false;
}

void MainWindow::onAnalysis(const AnalysisOutputPtr& output) {
  const std::string id = runOf(output).id;
  pendingIds_.erase(std::remove(pendingIds_.begin(), pendingIds_.end(), id), pendingIds_.end());
  outputs_.push_back(output);
  refreshResults();
  // What the start computed by itself is not a change the user would lose.
  const auto start = std::find(startIds_.begin(), startIds_.end(), id);
  if (start != startIds_.end())
    startIds_.erase(start);
  else
    setDirty(true);
  log(QString("%1 ready: %2 grids, %3 curves, %4 tables")
          .arg(QString::fromStdString(runOf(output).id))
          .arg(runOf(output).grids.size())
          .arg(runOf(output).curves.size())
          .arg(runOf(output).tables.size()));
  Q_EMIT gridsShown();
}

void MainWindow::onTaskPreview(const TaskPreview& p) {
  taskDock_->setPreview(p);
  attentionTab_->setTaskPrompts(p.prompts);
  interventionsDock_->setTaskPrompts(p.prompts);
  if (!p.error.isEmpty())
    log("the task cannot be built on this model: " + p.error);
  else if (!p.unknownWords.isEmpty())
    log("warning: the model's tokenizer does not know these words of the task: " + p.unknownWords.join(", "));
  // The prompt follows the task while it is the task's own (not typed by the user).
  const bool fromTask = promptFromTask_ || (!taskPrompt_.isEmpty() && promptEdit_->text() == taskPrompt_);
  if (fromTask && p.error.isEmpty() && promptEdit_->text() != p.text) {
    promptFromTask_ = false;
    taskPrompt_ = p.text;
    promptEdit_->setText(p.text);
    runPrompt();
    requestPatterns();
  } else if (promptFromTask_ && p.error.isEmpty()) {
    promptFromTask_ = false;
    taskPrompt_ = p.text;
    runPrompt();
  }
  evaluationDock_->setCurrent(QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()),
                              interventionsDock_->entries());
  if (startPending_) runStartAnalyses();
  Q_EMIT taskPreviewShown();
}

void MainWindow::onPrompt(const PromptView& v) {
  prompt_ = v;
  promptTab_->setView(v);
  attributionTab_->setView(v);
  attributionTab_->view()->setSilentHeads(info_.silent);
  if (!v.unknownWords.isEmpty())
    statusBar()->showMessage("Not in the vocabulary: " + v.unknownWords.join(", "), 8000);
  Q_EMIT promptShown();
}

void MainWindow::onPattern(const PatternView& v) {
  pattern_ = v;
  attentionTab_->setPattern(v);
  Q_EMIT patternShown();
}

void MainWindow::showError(const QString& title, const QString& message) {
  lastError_ = title + ": " + message;
  log("error: " + lastError_);
  Q_EMIT errorShown(lastError_);
  if (interactive_) QMessageBox::critical(this, "HeadScope — " + title, message);
}

void MainWindow::onFailed(const QString& job, const QString& message) {
  showError(job, message);
}

void MainWindow::onProgress(double fraction, const QString& message) {
  if (!busy_) return;  // a late report of a finished or cancelled job
  progress_->setValue(static_cast<int>(fraction * progress_->maximum()));
  statusBar()->showMessage(message, 5000);
}

void MainWindow::setDirty(bool on) {
  dirty_ = on;
  updateTitle();  // the title (with its [*]) first: setWindowModified needs the placeholder
  setWindowModified(on);
}

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss  ") + line);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  QMainWindow::closeEvent(event);
}

}  // namespace hs::gui
