#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
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
#include "qcustomplot_include.h"

#include "engine_worker.h"
#include "head_grid_view.h"

namespace hs::gui {

namespace {
const char* kDefaultPrompt = "Lily and Ben went to the park. Lily and Ben";

QString escaped(const QString& s) {
  return s.toHtmlEscaped().replace(" ", "&middot;").replace("\n", "\\n");
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
  connect(worker_, &EngineWorker::gridsReady, this, &MainWindow::onGrids);
  connect(worker_, &EngineWorker::promptReady, this, &MainWindow::onPrompt);
  connect(worker_, &EngineWorker::patternReady, this, &MainWindow::onPattern);
  connect(worker_, &EngineWorker::failed, this, &MainWindow::onFailed);
  connect(worker_, &EngineWorker::progress, this, &MainWindow::onProgress);
  connect(worker_, &EngineWorker::busy, this, [this](bool b) {
    busy_ = b;
    cancel_->setEnabled(b);
    if (!b) progress_->setValue(progress_->maximum());
  });
  thread_.start();

  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
}

MainWindow::~MainWindow() {
  worker_->requestCancel();
  thread_.quit();
  thread_.wait();
}

void MainWindow::buildUi() {
  tabs_ = new QTabWidget;
  setCentralWidget(tabs_);

  // Heads: metric selector + heatmap.
  auto* headsPage = new QWidget;
  auto* hl = new QVBoxLayout(headsPage);
  auto* bar = new QHBoxLayout;
  metric_ = new QComboBox;
  metric_->setMinimumContentsLength(28);
  auto* compute = new QPushButton("Compute head scores");
  headsSummary_ = new QLabel;
  bar->addWidget(new QLabel("Metric:"));
  bar->addWidget(metric_);
  bar->addWidget(compute);
  bar->addStretch(1);
  bar->addWidget(headsSummary_);
  hl->addLayout(bar);
  heads_ = new HeadGridView;
  hl->addWidget(heads_, 1);
  tabs_->addTab(headsPage, "Heads");
  connect(metric_, &QComboBox::currentIndexChanged, this, &MainWindow::showGrid);
  connect(compute, &QPushButton::clicked, this, &MainWindow::computeHeadScores);
  connect(heads_, &HeadGridView::selectionChanged, this, [this](const std::vector<HeadRef>& sel) {
    if (sel.size() == 1) requestPattern(sel.front());
  });
  connect(heads_, &HeadGridView::showPattern, this, [this](HeadRef h) {
    requestPattern(h);
    tabs_->setCurrentIndex(1);
  });

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

  // Model dock.
  auto* modelDock = new QDockWidget("Model", this);
  modelDock->setObjectName("ModelDock");
  modelLabel_ = new QLabel("No model loaded.\nFile → Open model…");
  modelLabel_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  modelLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  modelLabel_->setMinimumWidth(220);
  modelLabel_->setWordWrap(true);
  modelDock->setWidget(modelLabel_);
  addDockWidget(Qt::LeftDockWidgetArea, modelDock);

  // Log dock: messages, progress, Cancel.
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
  resize(1200, 800);
  resizeDocks({logDock}, {150}, Qt::Vertical);
  resizeDocks({modelDock}, {240}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu("&File");
  auto* openFolder = file->addAction("Open model &folder…");
  openFolder->setShortcut(QKeySequence("Ctrl+Shift+O"));
  connect(openFolder, &QAction::triggered, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a Hugging Face model folder");
    if (!dir.isEmpty()) openModel(dir);
  });
  auto* openFile = file->addAction("&Open model file…");
  openFile->setShortcut(QKeySequence::Open);
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
  file->addSeparator();
  auto* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  auto* run = menuBar()->addMenu("&Run");
  auto* scores = run->addAction("Compute &head scores");
  scores->setShortcut(QKeySequence("Ctrl+R"));
  connect(scores, &QAction::triggered, this, &MainWindow::computeHeadScores);
  auto* cancel = run->addAction("&Cancel");
  cancel->setShortcut(QKeySequence("Esc"));
  connect(cancel, &QAction::triggered, this, &MainWindow::cancelJob);
}

void MainWindow::openModel(const QString& path, const QString& tokenizer) {
  log("opening " + path + (tokenizer.isEmpty() ? QString() : " with tokenizer " + tokenizer));
  QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection, Q_ARG(QString, path),
                            Q_ARG(QString, tokenizer));
}

QString MainWindow::promptText() const {
  return promptEdit_->text();
}
void MainWindow::setPromptText(const QString& text) {
  promptEdit_->setText(text);
}

void MainWindow::runPrompt() {
  QMetaObject::invokeMethod(worker_, "runPrompt", Qt::QueuedConnection, Q_ARG(QString, promptEdit_->text()),
                            Q_ARG(int, 10));
}

void MainWindow::computeHeadScores() {
  QMetaObject::invokeMethod(worker_, "computeHeadScores", Qt::QueuedConnection, Q_ARG(int, 20),
                            Q_ARG(int, 16), Q_ARG(int, 1));
}

void MainWindow::cancelJob() {
  worker_->requestCancel();
  log("cancel requested");
}

void MainWindow::requestPattern(HeadRef h) {
  QMetaObject::invokeMethod(worker_, "attentionPattern", Qt::QueuedConnection,
                            Q_ARG(QString, promptEdit_->text()), Q_ARG(int, h.layer), Q_ARG(int, h.head));
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
  Q_EMIT modelReady();
  runPrompt();
  computeHeadScores();
}

void MainWindow::onGrids(const std::vector<HeadGrid>& grids, double copyAccuracy) {
  grids_ = grids;
  const QSignalBlocker block(metric_);
  metric_->clear();
  for (const HeadGrid& g : grids_)
    metric_->addItem(QString::fromStdString(g.name), QString::fromStdString(g.id));
  headsSummary_->setText(
      QString("copying accuracy on repeated random tokens: %1 %").arg(100.0 * copyAccuracy, 0, 'f', 1));
  showGrid(0);
  log(QString("head scores ready (%1 grids)").arg(grids_.size()));
  Q_EMIT gridsShown();
}

void MainWindow::showGrid(int index) {
  if (index < 0 || index >= static_cast<int>(grids_.size())) return;
  heads_->setGrid(grids_[static_cast<size_t>(index)]);
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

void MainWindow::onFailed(const QString& job, const QString& message) {
  lastError_ = job + ": " + message;
  log("error: " + lastError_);
  Q_EMIT errorShown(lastError_);
  if (interactive_) QMessageBox::critical(this, "HeadScope — " + job, message);
}

void MainWindow::onProgress(double fraction, const QString& message) {
  progress_->setValue(static_cast<int>(fraction * progress_->maximum()));
  statusBar()->showMessage(message, 5000);
}

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss  ") + line);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  QMainWindow::closeEvent(event);
}

}  // namespace hs::gui
