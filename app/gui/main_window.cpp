#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
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
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTime>
#include <QVBoxLayout>

#include <set>

#include "engine_worker.h"
#include "evaluation_dock.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "task_dock.h"

namespace hs::gui {

namespace {
const char* kDefaultPrompt = "Lily and Ben went to the park. Lily and Ben";

QString escaped(const QString& s) {
  return s.toHtmlEscaped().replace(" ", "&middot;").replace("\n", "\\n");
}

// Queues `f` on the worker's thread.
template <typename F>
void post(EngineWorker* w, F&& f) {
  QMetaObject::invokeMethod(w, std::forward<F>(f), Qt::QueuedConnection);
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  registerMetaTypes();
  setWindowTitle("HeadScope");
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
    Q_EMIT jobCancelled(job);
  });
  connect(worker_, &EngineWorker::progress, this, &MainWindow::onProgress);
  connect(worker_, &EngineWorker::trainingPoint, this, [this](const QString& curve, int step, double value) {
    taskVectorsTab_->addLivePoint("site.loss", curve, step, value);
  });
  connect(worker_, &EngineWorker::busy, this, [this](bool b) {
    busy_ = b;
    cancel_->setEnabled(b);
    if (!b) progress_->setValue(progress_->maximum());
  });
  thread_.start();

  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  const QString task = settings.value("task/spec").toString();
  if (!task.isEmpty()) {
    try {
      taskDock_->setSpec(taskSpecFromJson(nlohmann::json::parse(task.toStdString())));
    } catch (const std::exception& e) {
      log("ignored the remembered task settings: " + QString::fromStdString(e.what()));
    }
  }
  setDirty(false);
}

MainWindow::~MainWindow() {
  worker_->requestCancel();
  thread_.quit();
  thread_.wait();
}

void MainWindow::buildUi() {
  tabs_ = new QTabWidget;
  setCentralWidget(tabs_);

  headsTab_ = new HeadsTab;
  tabs_->addTab(headsTab_, "Heads");
  HeadGridView* heads = headsTab_->view();
  connect(heads, &HeadGridView::selectionChanged, this, [this](const std::vector<HeadRef>& sel) {
    setDirty(true);
    if (sel.size() == 1) requestPattern(sel.front());
  });
  connect(heads, &HeadGridView::showPattern, this, [this](HeadRef h) {
    requestPattern(h);
    tabs_->setCurrentIndex(AttentionTabIndex);
  });
  connect(headsTab_, &HeadsTab::metricChanged, this, [this] { setDirty(true); });

  geometryTab_ = makeGeometryTab();
  tabs_->addTab(geometryTab_, "Geometry");
  taskVectorsTab_ = makeTaskVectorsTab();
  tabs_->addTab(taskVectorsTab_, "Task vectors");

  // Attention: the selected head's pattern on the current prompt.
  attention_ = new QCustomPlot;
  attention_->plotLayout()->insertRow(0);
  attention_->plotLayout()->addElement(0, 0,
                                       new QCPTextElement(attention_, "Select a head in the Heads tab"));
  attentionMap_ = new QCPColorMap(attention_->xAxis, attention_->yAxis);
  auto* scale = new QCPColorScale(attention_);
  attention_->plotLayout()->addElement(1, 1, scale);
  attentionMap_->setColorScale(scale);
  attentionMap_->setGradient(QCPColorGradient::gpThermal);
  scale->axis()->setLabel("attention");
  attention_->xAxis->setLabel("key token");
  attention_->yAxis->setLabel("query token");
  attention_->yAxis->setRangeReversed(true);
  tabs_->addTab(attention_, "Attention");

  // Prompt: text, tokens with ids, top-k next tokens, logit lens.
  auto* promptPage = new QWidget;
  auto* pl = new QVBoxLayout(promptPage);
  auto* pbar = new QHBoxLayout;
  promptEdit_ = new QLineEdit(kDefaultPrompt);
  auto* run = new QPushButton("Run");
  pbar->addWidget(promptEdit_, 1);
  pbar->addWidget(run);
  pl->addLayout(pbar);
  tokensLabel_ = new QLabel;
  tokensLabel_->setWordWrap(true);
  tokensLabel_->setTextFormat(Qt::RichText);
  pl->addWidget(tokensLabel_);
  auto* tables = new QHBoxLayout;
  topTable_ = new QTableWidget(0, 4);
  topTable_->setHorizontalHeaderLabels({"id", "token", "logit", "prob"});
  topTable_->horizontalHeader()->setStretchLastSection(true);
  lensTable_ = new QTableWidget(0, 2);
  lensTable_->setHorizontalHeaderLabels({"after layer", "logit lens: top tokens"});
  lensTable_->horizontalHeader()->setStretchLastSection(true);
  tables->addWidget(topTable_, 1);
  tables->addWidget(lensTable_, 1);
  pl->addLayout(tables, 1);
  tabs_->addTab(promptPage, "Prompt");
  connect(run, &QPushButton::clicked, this, &MainWindow::runPrompt);
  connect(promptEdit_, &QLineEdit::returnPressed, this, &MainWindow::runPrompt);

  // Left: Model and Task docks.
  auto* modelDock = new QDockWidget("Model", this);
  modelDock->setObjectName("ModelDock");
  modelLabel_ = new QLabel("No model loaded.\nFile → Open model…");
  modelLabel_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  modelLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  modelLabel_->setMinimumWidth(220);
  modelLabel_->setWordWrap(true);
  modelDock->setWidget(modelLabel_);
  addDockWidget(Qt::LeftDockWidgetArea, modelDock);

  auto* taskDockWidget = new QDockWidget("Task", this);
  taskDockWidget->setObjectName("TaskDock");
  taskDock_ = new TaskDock;
  taskDockWidget->setWidget(taskDock_);
  addDockWidget(Qt::LeftDockWidgetArea, taskDockWidget);
  connect(taskDock_, &TaskDock::changed, this, [this](bool byUser) {
    QSettings().setValue("task/spec", QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()));
    if (byUser) setDirty(true);
    requestPreview();
  });

  // Right: Interventions and Evaluation.
  auto* ivDock = new QDockWidget("Interventions", this);
  ivDock->setObjectName("InterventionsDock");
  interventionsDock_ = new InterventionsDock;
  ivDock->setWidget(interventionsDock_);
  addDockWidget(Qt::RightDockWidgetArea, ivDock);
  connect(interventionsDock_, &InterventionsDock::changed, this, [this] { setDirty(true); });
  connect(heads, &HeadGridView::zeroAblate, this,
          [this](const std::vector<HeadRef>& h) { interventionsDock_->add("zero_ablate", h); });
  connect(heads, &HeadGridView::meanAblate, this,
          [this](const std::vector<HeadRef>& h) { interventionsDock_->add("mean_ablate", h); });
  connect(heads, &HeadGridView::patchFromClean, this,
          [this](const std::vector<HeadRef>& h) { interventionsDock_->add("patch_clean", h); });
  connect(heads, &HeadGridView::addToSteering, this,
          [this](const std::vector<HeadRef>& h) { interventionsDock_->add("steer", h); });

  auto* evalDock = new QDockWidget("Evaluation", this);
  evalDock->setObjectName("EvaluationDock");
  evaluationDock_ = new EvaluationDock;
  evalDock->setWidget(evaluationDock_);
  addDockWidget(Qt::RightDockWidgetArea, evalDock);
  connect(evaluationDock_, &EvaluationDock::evaluateRequested, this, &MainWindow::evaluate);

  // Bottom: log, progress, Cancel.
  auto* logDock = new QDockWidget("Log", this);
  logDock->setObjectName("LogDock");
  auto* logPage = new QWidget;
  auto* ll = new QVBoxLayout(logPage);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  auto* pr = new QHBoxLayout;
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  cancel_ = new QPushButton("Cancel");
  cancel_->setEnabled(false);
  pr->addWidget(progress_, 1);
  pr->addWidget(cancel_);
  ll->addWidget(log_, 1);
  ll->addLayout(pr);
  logDock->setWidget(logPage);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelJob);
  resize(1560, 960);
  resizeDocks({logDock}, {130}, Qt::Vertical);
  resizeDocks({modelDock, taskDockWidget}, {170, 420}, Qt::Vertical);
  resizeDocks({modelDock, ivDock}, {300, 300}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu("&File");
  auto* openSessionAction = file->addAction("&Open session…");
  openSessionAction->setShortcut(QKeySequence::Open);
  connect(openSessionAction, &QAction::triggered, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Open a HeadScope session", {},
                                                   "HeadScope sessions (*.hscope);;All files (*)");
    if (!f.isEmpty()) openSession(f);
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
  file->addSeparator();
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
  file->addSeparator();
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
  file->addSeparator();
  auto* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  auto* run = menuBar()->addMenu("&Run");
  for (const std::string& method : analysisMethodNames()) {
    auto* a = run->addAction(QString("Run &%1").arg(QString::fromStdString(method)));
    if (method == "induction") a->setShortcut(QKeySequence("Ctrl+R"));
    const QString m = QString::fromStdString(method);
    connect(a, &QAction::triggered, this, [this, m] { runAnalysis(m); });
  }
  auto* eval = run->addAction("&Evaluate with interventions");
  eval->setShortcut(QKeySequence("Ctrl+E"));
  connect(eval, &QAction::triggered, this, &MainWindow::evaluate);
  auto* cancel = run->addAction("&Cancel");
  cancel->setShortcut(QKeySequence("Esc"));
  connect(cancel, &QAction::triggered, this, &MainWindow::cancelJob);

  auto* view = menuBar()->addMenu("&View");
  const char* names[] = {"&Heads", "&Geometry", "&Task vectors", "&Attention", "&Prompt"};
  for (int i = 0; i < 5; ++i) {
    auto* a = view->addAction(names[i]);
    a->setShortcut(QKeySequence(QString("Ctrl+%1").arg(i + 1)));
    connect(a, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
  }
}

HeadGridView* MainWindow::headsView() const {
  return headsTab_->view();
}

void MainWindow::openModel(const QString& path, const QString& tokenizer, bool analyze) {
  log("opening " + path + (tokenizer.isEmpty() ? QString() : " with tokenizer " + tokenizer));
  analyzeOnLoad_ = analyze;
  tokenizerPath_ = tokenizer;
  post(worker_, [w = worker_, path, tokenizer] { w->loadModel(path, tokenizer); });
}

void MainWindow::openDefault() {
  openModel("toy");
}

namespace {
// The task the task-vector views start with on the toy model: a function task (zero-shot 0.34, 10-shot 0.98).
nlohmann::json taskVectorStartTask() {
  TaskSpec spec;
  spec.dataset = "toy:antonym_a";
  spec.shots = 10;
  spec.n_prompts = 50;
  spec.seed = 1;
  return taskSpecToJson(spec);
}
}  // namespace

void MainWindow::runAnalysis(const QString& method, const nlohmann::json& options,
                             const nlohmann::json& taskOverride) {
  int n = 1;
  for (const AnalysisOutputPtr& o : outputs_)
    if (runOf(o).method == method.toStdString()) ++n;
  QString id = QString("%1-%2").arg(method).arg(n);
  for (bool taken = true; taken;) {  // unique even after runs were removed or loaded from a file
    taken = false;
    for (const AnalysisOutputPtr& o : outputs_)
      if (QString::fromStdString(runOf(o).id) == id) {
        taken = true;
        id = QString("%1-%2").arg(method).arg(++n);
      }
  }
  const QString task = QString::fromStdString(
      (taskOverride.is_null() ? taskSpecToJson(taskDock_->spec()) : taskOverride).dump());
  const QString opts = QString::fromStdString(options.dump());
  log("running " + method + " as " + id);
  post(worker_, [w = worker_, method, task, opts, id] { w->runAnalysis(method, task, opts, id); });
}

void MainWindow::computeHeadScores() {
  runAnalysis("induction");
}

void MainWindow::evaluate() {
  const QString task = QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump());
  const std::vector<InterventionEntry> entries = interventionsDock_->entries();
  log(QString("evaluating %1 with %2 interventions").arg(task).arg(entries.size()));
  post(worker_, [w = worker_, task, entries] { w->evaluate(task, entries); });
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
  const QString text = promptEdit_->text();
  post(worker_, [w = worker_, text] { w->runPrompt(text, 10); });
}

void MainWindow::cancelJob() {
  worker_->requestCancel();
  log("cancel requested");
}

void MainWindow::requestPattern(HeadRef h) {
  const QString text = promptEdit_->text();
  post(worker_, [w = worker_, text, h] { w->attentionPattern(text, h.layer, h.head); });
}

void MainWindow::onModelLoaded(const ModelInfo& i) {
  info_ = i;
  QString text = QString(
                     "<b>%1</b><br>%2 · %3<br><br>"
                     "layers %4 · heads %5 (kv %6)<br>d_model %7 · d_head %8 · d_mlp %9<br>"
                     "vocab %10 · context %11<br>parameters %12<br>dtype %13 · tokenizer %14")
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
                     .arg(i.dtype, i.tokenizer);
  for (const QString& n : i.notes)
    text += "<br><i>" + n.toHtmlEscaped() + "</i>";
  modelLabel_->setText(text);
  setWindowTitle("HeadScope — " + QFileInfo(i.path).fileName());
  QSettings().setValue("model/last", i.path);
  log(QString("loaded %1: %2 layers × %3 heads").arg(i.path).arg(i.layers).arg(i.heads));
  watchModelFiles(i);
  Q_EMIT modelReady();
  // The toy model speaks only the toy world: its prompt comes from the task.
  const bool toy = i.path.contains("toy-icl");
  promptFromTask_ = toy && promptEdit_->text() == kDefaultPrompt;
  requestPreview();
  if (!promptFromTask_) runPrompt();
  if (analyzeOnLoad_) {
    const std::vector<std::string> names = analysisMethodNames();
    const std::set<std::string> methods(names.begin(), names.end());
    for (const QString& method : startAnalyses_) {
      if (!methods.count(method.toStdString())) continue;
      const bool taskVector = method == "fv" || method == "site" || method == "ltv";
      if (taskVector && !toy) continue;  // on a real model they take minutes to hours: the Run menu has them
      runAnalysis(method, nlohmann::json::object(), taskVector ? taskVectorStartTask() : nlohmann::json());
    }
  }
}

std::vector<AnalysisRun> MainWindow::runs() const {
  std::vector<AnalysisRun> out;
  for (const AnalysisOutputPtr& o : outputs_)
    out.push_back(runOf(o));
  return out;
}

void MainWindow::refreshResults() {
  const std::vector<AnalysisRun> all = runs();
  headsTab_->setRuns(all);
  geometryTab_->setRuns(all);
  taskVectorsTab_->setRuns(all);
}

void MainWindow::onAnalysis(const AnalysisOutputPtr& output) {
  outputs_.push_back(output);
  refreshResults();
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
  if (promptFromTask_ && p.error.isEmpty()) {
    promptFromTask_ = false;
    promptEdit_->setText(p.text);
    runPrompt();
  }
  Q_EMIT taskPreviewShown();
}

void MainWindow::onPrompt(const PromptView& v) {
  prompt_ = v;
  QString html;
  for (int i = 0; i < v.pieces.size(); ++i)
    html += QString("<span style='background:%1'>%2<sub>%3</sub></span> ")
                .arg(i % 2 ? "#dde8f5" : "#f5e6d3", escaped(v.pieces[i]))
                .arg(v.ids[static_cast<size_t>(i)]);
  tokensLabel_->setText(html);
  topTable_->setRowCount(static_cast<int>(v.top.size()));
  for (int r = 0; r < static_cast<int>(v.top.size()); ++r) {
    const TopToken& t = v.top[static_cast<size_t>(r)];
    topTable_->setItem(r, 0, new QTableWidgetItem(QString::number(t.id)));
    topTable_->setItem(r, 1, new QTableWidgetItem(escaped(t.piece).replace("&middot;", "·")));
    topTable_->setItem(r, 2, new QTableWidgetItem(QString::number(t.logit, 'f', 3)));
    topTable_->setItem(r, 3, new QTableWidgetItem(QString::number(t.prob, 'f', 4)));
  }
  lensTable_->setRowCount(static_cast<int>(v.lens.size()));
  for (int l = 0; l < static_cast<int>(v.lens.size()); ++l) {
    QStringList parts;
    for (const TopToken& t : v.lens[static_cast<size_t>(l)])
      parts << QString("%1 (%2)").arg(t.piece).arg(t.prob, 0, 'f', 3);
    lensTable_->setItem(l, 0, new QTableWidgetItem(QString::number(l)));
    lensTable_->setItem(l, 1, new QTableWidgetItem(parts.join("   ")));
  }
  Q_EMIT promptShown();
}

void MainWindow::onPattern(const PatternView& v) {
  pattern_ = v;
  const int n = v.n;
  attentionMap_->data()->setSize(n, n);
  attentionMap_->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < n; ++k)
      attentionMap_->data()->setCell(k, q, v.weights[static_cast<size_t>(q * n + k)]);
  attentionMap_->setDataRange(QCPRange(0, 1));
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int i = 0; i < n; ++i)
    ticker->addTick(i, v.pieces[i]);
  attention_->xAxis->setTicker(ticker);
  attention_->yAxis->setTicker(ticker);
  attention_->xAxis->setTickLabelRotation(60);
  attention_->xAxis->setRange(-0.5, n - 0.5);
  attention_->yAxis->setRange(-0.5, n - 0.5);
  if (auto* title = qobject_cast<QCPTextElement*>(attention_->plotLayout()->element(0, 0)))
    title->setText(QString("layer %1, head %2: attention on the prompt").arg(v.head.layer).arg(v.head.head));
  attention_->replot();
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
  progress_->setValue(static_cast<int>(fraction * progress_->maximum()));
  statusBar()->showMessage(message, 5000);
}

void MainWindow::setDirty(bool on) {
  dirty_ = on;
  setWindowModified(on);
  const QString name = sessionPath_.isEmpty() ? "untitled" : QFileInfo(sessionPath_).fileName();
  setWindowTitle(QString("HeadScope — %1[*]%2")
                     .arg(name, info_.path.isEmpty() ? QString() : " · " + QFileInfo(info_.path).fileName()));
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
