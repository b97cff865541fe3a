#include "study_view.h"

#include "gui_types.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>

#include "analysis/framework/registry.h"
#include "batch/merge.h"
#include "head_grid_view.h"
#include "session/session.h"
#include "util/error.h"

namespace hs::gui {
namespace {

namespace fs = std::filesystem;

// A run's model or task as every view names it (registry.h shortName); "—" when not recorded.
QString shortLabel(const std::string& s) {
  return s.empty() ? QStringLiteral("—") : QString::fromStdString(shortName(s));
}

const char* kFilterNames[] = {"model", "task", "method", "seed"};
constexpr int kPanelColumns = 3;
constexpr int kMaxPanels = 24;  // more models or tasks than this: narrow the filters

}  // namespace

StudyView::StudyView(QWidget* parent) : QWidget(parent) {
  setWindowTitle("HeadScope study");
  auto* layout = new QVBoxLayout(this);

  auto* bar = new QHBoxLayout;
  for (int c = 0; c < 4; ++c) {
    filters_[c] = new QComboBox(this);
    filters_[c]->setObjectName(QString("filter:") + kFilterNames[c]);
    filters_[c]->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    bar->addWidget(new QLabel(QString(kFilterNames[c]) + ":", this));
    bar->addWidget(filters_[c]);
    connect(filters_[c], &QComboBox::activated, this, [this] { refresh(); });
  }
  bar->addSpacing(16);
  bar->addWidget(new QLabel("grid:", this));
  grid_ = new QComboBox(this);
  grid_->setObjectName("grid");
  grid_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(grid_);
  connect(grid_, &QComboBox::activated, this, [this] { refreshPanels(); });
  bar->addWidget(new QLabel("across:", this));
  across_ = new QComboBox(this);
  across_->setObjectName("across");
  across_->addItems({"models", "tasks"});
  bar->addWidget(across_);
  connect(across_, &QComboBox::activated, this, [this] { refreshPanels(); });
  allRuns_ = new QPushButton("All filtered runs", this);
  allRuns_->setObjectName("allRuns");
  allRuns_->setToolTip("Back from the run shown (double-click a row) to the filtered runs' panels");
  allRuns_->hide();
  connect(allRuns_, &QPushButton::clicked, this, [this] { showRun({}); });
  bar->addWidget(allRuns_);
  bar->addStretch(1);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableWidget(this);
  table_->setColumnCount(7);
  table_->setHorizontalHeaderLabels({"model", "task", "method", "seed", "run", "prompts", "summary"});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSortingEnabled(true);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setToolTip("Double-click a run to see its own grids");
  connect(table_, &QTableWidget::cellDoubleClicked, this,
          [this](int row, int) { showRun(table_->item(row, RunColumn)->text()); });
  split->addWidget(table_);

  auto* panelPage = new QWidget(this);
  panelGrid_ = new QGridLayout(panelPage);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(panelPage);
  split->addWidget(scroll);

  auto* failedPage = new QWidget(this);
  auto* fl = new QVBoxLayout(failedPage);
  fl->setContentsMargins(0, 0, 0, 0);
  fl->addWidget(new QLabel("Failed jobs (DIR/failed/<id>.log has the details):", failedPage));
  failures_ = new QListWidget(failedPage);
  fl->addWidget(failures_);
  split->addWidget(failedPage);
  split->setSizes({300, 500, 90});
  layout->addWidget(split, 1);

  status_ = new QLabel(this);
  layout->addWidget(status_);
  resize(1280, 900);
}

bool StudyView::watching() const {
  return watcher_ && !watcher_->directories().isEmpty();
}

void StudyView::clear() {
  runs_.clear();
  runFiles_.clear();
  failed_.clear();
  jobs_ = 0;
  shownRun_.clear();
  delete watcher_;
  watcher_ = nullptr;
}

void StudyView::addRun(AnalysisRun run) {
  Row r;
  const Provenance& p = run.provenance;
  r.model = shortLabel(p.model);
  r.task = shortLabel(p.task);
  r.method = QString::fromStdString(run.method);
  r.seed = QString::number(p.seed);
  r.fullModel = QString::fromStdString(p.model);
  r.run = std::move(run);
  runs_.push_back(std::move(r));
}

void StudyView::openStudy(const QString& path) {
  const Session s = loadSession(path.toStdString());  // throws naming the file
  if (!s.batch.contains("jobs"))
    fail(path.toStdString(), ": not a study (merge a batch folder: headscope-cli merge)");
  clear();
  source_ = path;
  folder_ = false;
  for (const AnalysisRun& r : s.runs)
    addRun(r);
  if (s.batch.contains("failed") && s.batch["failed"].is_object())
    for (const auto& [id, error] : s.batch["failed"].items())
      failed_[id] = error.is_string() ? error.get<std::string>() : error.dump();
  jobs_ = static_cast<int>(s.runs.size() + failed_.size() +
                           s.batch.value("pending", nlohmann::json::array()).size());
  setWindowTitle("HeadScope study — " + QFileInfo(path).fileName());
  refresh();
  Q_EMIT runsChanged();
}

void StudyView::openFolder(const QString& dir, bool watch) {
  if (!QFileInfo(dir).isDir()) fail(dir.toStdString(), ": not a batch folder (no such folder)");
  clear();
  source_ = QDir(dir).absolutePath();
  folder_ = true;
  if (watch) {
    watcher_ = new QFileSystemWatcher(this);
    connect(watcher_, &QFileSystemWatcher::directoryChanged, this, [this] { rescanFolder(); });
  }
  setWindowTitle("HeadScope batch — " + source_);
  rescanFolder();
}

void StudyView::rescanFolder() {
  const std::string dir = source_.toStdString();
  if (watcher_) {  // runs/ and failed/ may appear after the folder itself
    QStringList want = {source_};
    for (const char* sub : {"runs", "failed"})
      if (QFileInfo(source_ + "/" + sub).isDir()) want << source_ + "/" + sub;
    for (const QString& w : want)
      if (!watcher_->directories().contains(w)) watcher_->addPath(w);
  }
  bool changed = false;
  for (const std::string& file : batch::runFiles(dir)) {
    if (runFiles_.count(file)) continue;
    try {
      Session s = loadSession(file);
      for (AnalysisRun& r : s.runs)
        addRun(std::move(r));
    } catch (const std::exception& e) {
      failed_[fs::path(file).stem().string()] = std::string("unreadable run file: ") + e.what();
    }
    runFiles_.insert(file);
    changed = true;
  }
  std::map<std::string, std::string> failed;
  try {
    for (const batch::Failure& f : batch::failures(dir))
      failed[f.id] = (f.label.empty() ? std::string() : f.label + ": ") + f.error;
    const nlohmann::json index = batch::readJobIndex(dir);
    if (!index.is_null()) jobs_ = static_cast<int>(index["jobs"].size());
  } catch (const std::exception& e) {
    failed["(batch folder)"] = e.what();
  }
  for (const auto& [id, why] : failed_)  // unreadable run files stay listed
    if (why.rfind("unreadable run file: ", 0) == 0) failed[id] = why;
  if (failed != failed_) {
    failed_ = std::move(failed);
    changed = true;
  }
  if (changed || table_->rowCount() == 0) {
    refresh();
    Q_EMIT runsChanged();
  }
}

bool StudyView::passes(const Row& r) const {
  const QString values[4] = {r.model, r.task, r.method, r.seed};
  for (int c = 0; c < 4; ++c) {
    const QString want = filters_[c]->currentData().toString();
    if (!want.isEmpty() && want != values[c]) return false;
  }
  return true;
}

int StudyView::shownRunCount() const {
  int n = 0;
  for (const Row& r : runs_)
    n += passes(r) ? 1 : 0;
  return n;
}

QStringList StudyView::failedJobs() const {
  QStringList ids;
  for (const auto& [id, why] : failed_)
    ids << QString::fromStdString(id);
  return ids;
}

QStringList StudyView::filterValues(Column c) const {
  QStringList values;
  for (int i = 0; i < filters_[c]->count(); ++i)
    values << filters_[c]->itemData(i).toString();
  return values;
}

bool StudyView::setFilter(Column c, const QString& value) {
  const int i = filters_[c]->findData(value);
  if (i < 0) return false;
  filters_[c]->setCurrentIndex(i);
  refresh();
  return true;
}

QStringList StudyView::gridIds() const {
  QStringList ids;
  for (int i = 0; i < grid_->count(); ++i)
    ids << grid_->itemText(i);
  return ids;
}

bool StudyView::setGrid(const QString& id) {
  const int i = grid_->findText(id);
  if (i < 0) return false;
  grid_->setCurrentIndex(i);
  refreshPanels();
  return true;
}

QString StudyView::grid() const {
  return grid_->currentText();
}

void StudyView::setAcross(Across a) {
  across_->setCurrentIndex(a == Across::Models ? 0 : 1);
  refreshPanels();
}

StudyView::Across StudyView::across() const {
  return across_->currentIndex() == 0 ? Across::Models : Across::Tasks;
}

bool StudyView::showRun(const QString& id) {
  if (!id.isEmpty() && std::none_of(runs_.begin(), runs_.end(),
                                    [&](const Row& r) { return QString::fromStdString(r.run.id) == id; }))
    return false;
  shownRun_ = id;
  refreshPanels();
  return true;
}

void StudyView::setSilentHeads(const QString& model, const std::vector<HeadRef>& heads) {
  silent_[model] = heads;
  refreshPanels();
}

void StudyView::refresh() {
  // Filter choices: every value among the runs; the current choice kept when still offered.
  for (int c = 0; c < 4; ++c) {
    const QString keep = filters_[c]->currentData().toString();
    std::set<QString> values;
    for (const Row& r : runs_)
      values.insert(c == ModelColumn    ? r.model
                    : c == TaskColumn   ? r.task
                    : c == MethodColumn ? r.method
                                        : r.seed);
    std::vector<QString> sorted(values.begin(), values.end());
    if (c == SeedColumn)
      std::sort(sorted.begin(), sorted.end(),
                [](const QString& a, const QString& b) { return a.toULongLong() < b.toULongLong(); });
    filters_[c]->clear();
    filters_[c]->addItem("all", QString());
    for (const QString& v : sorted)
      filters_[c]->addItem(v, v);
    filters_[c]->setCurrentIndex(std::max(0, filters_[c]->findData(keep)));
  }

  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  std::set<QString> grids;
  for (const Row& r : runs_) {
    if (!passes(r)) continue;
    const int row = table_->rowCount();
    table_->insertRow(row);
    const nlohmann::json& summary = r.run.summary;
    const QStringList numbers = summaryNumbers(summary);
    QString text = numbers.join(" · ");
    if (text.size() > 160) text = text.left(157) + "…";
    const QString cells[7] = {r.model,
                              r.task,
                              r.method,
                              r.seed,
                              QString::fromStdString(r.run.id),
                              QString::number(r.run.provenance.n_prompts),
                              text};
    for (int c = 0; c < 7; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == SeedColumn || c == PromptsColumn) item->setData(Qt::DisplayRole, cells[c].toLongLong());
      item->setToolTip(c == SummaryColumn ? numbers.join("\n") : cells[c]);
      table_->setItem(row, c, item);
    }
    for (const HeadGrid& g : r.run.grids)
      grids.insert(QString::fromStdString(g.id));
  }
  table_->setSortingEnabled(true);
  table_->resizeColumnsToContents();

  const QString keepGrid = grid_->currentText();
  grid_->clear();
  for (const QString& g : grids)
    grid_->addItem(g);
  grid_->setCurrentIndex(std::max(0, grid_->findText(keepGrid)));

  failures_->clear();
  for (const auto& [id, why] : failed_)
    failures_->addItem(QString::fromStdString(id + " — " + why));

  QString status = QString("%1 runs (%2 shown)").arg(runs_.size()).arg(shownRunCount());
  if (jobs_ > 0) status += QString(" of %1 jobs").arg(jobs_);
  status += QString(", %1 failed").arg(failed_.size());
  if (folder_) status += (watching() ? " — watching " : " — ") + source_;
  status_->setText(status);
  refreshPanels();
}

void StudyView::refreshPanels() {
  for (QWidget* w : panelCells_)
    delete w;
  panelCells_.clear();
  panels_.clear();
  allRuns_->setVisible(!shownRun_.isEmpty());
  auto addPanel = [this](const QString& name, const HeadGrid& grid, const QString& model, int n) {
    auto* view = new HeadGridView;
    view->setObjectName("panel:" + name);
    // The loaded model's silent heads, as its Heads tab: hatched and not ranked.
    if (const auto it = silent_.find(model); it != silent_.end()) view->setSilentHeads(it->second);
    view->setGrid(grid);
    view->setMinimumSize(320, 260);
    panelGrid_->addWidget(view, n / kPanelColumns, n % kPanelColumns);
    panelCells_.push_back(view);
    panels_.push_back(view);
  };
  if (!shownRun_.isEmpty()) {  // one run: each of its grids
    for (const Row& r : runs_)
      if (QString::fromStdString(r.run.id) == shownRun_) {
        int n = 0;
        for (const HeadGrid& g : r.run.grids) {
          HeadGrid shown = g;
          shown.name = (r.run.id + " · " + (g.name.empty() ? g.id : g.name));
          addPanel(QString::fromStdString(r.run.id + "/" + g.id), shown, r.fullModel, n++);
        }
        status_->setText(QString("run %1: %2 · %3 · %4 · seed %5 (All filtered runs: back)")
                             .arg(shownRun_, r.model, r.task, r.method, r.seed));
        break;
      }
    return;
  }
  const std::string gridId = grid_->currentText().toStdString();
  if (gridId.empty()) return;
  const bool byModel = across_->currentIndex() == 0;

  // Group → the selected grid of each filtered run in it (the first shape met per group). A group is one
  // model and one task: a mean over runs of different tasks (or models) would mean nothing, so with several
  // of them among the filtered runs the panels are per model and task.
  std::set<QString> models, tasks;
  for (const Row& r : runs_)
    if (passes(r)) {
      models.insert(r.model);
      tasks.insert(r.task);
    }
  struct Group {
    std::vector<const HeadGrid*> grids;
    QString model;  // as the runs record it
  };
  std::map<QString, Group> groups;
  for (const Row& r : runs_) {
    if (!passes(r)) continue;
    for (const HeadGrid& g : r.run.grids) {
      if (g.id != gridId) continue;
      QString key = byModel ? r.model : r.task;
      if (byModel && tasks.size() > 1) key += " · " + r.task;
      if (!byModel && models.size() > 1) key = r.model + " · " + key;
      Group& group = groups[key];
      group.model = r.fullModel;
      auto& list = group.grids;
      if (list.empty() || (list.front()->layers() == g.layers() && list.front()->heads() == g.heads()))
        list.push_back(&g);
    }
  }
  int n = 0;
  for (const auto& [group, members] : groups) {
    const std::vector<const HeadGrid*>& grids = members.grids;
    if (n == kMaxPanels) {
      auto* more = new QLabel(QString("%1 more %2: narrow the filters")
                                  .arg(groups.size() - kMaxPanels)
                                  .arg(byModel ? "models" : "tasks"));
      panelGrid_->addWidget(more, n / kPanelColumns, n % kPanelColumns);
      panelCells_.push_back(more);
      break;
    }
    HeadGrid mean = *grids.front();
    for (size_t i = 1; i < grids.size(); ++i)
      mean.values += grids[i]->values;
    mean.values /= static_cast<double>(grids.size());
    mean.name = group.toStdString() + " · " + (grids.front()->name.empty() ? gridId : grids.front()->name) +
                (grids.size() > 1 ? " (mean of " + std::to_string(grids.size()) + " runs)" : "");
    addPanel(group, mean, members.model, n);
    ++n;
  }
}

StudyView* openStudyWindow(QWidget* parent, const QString& path, QString* error) {
  auto* view = new StudyView(parent);
  view->setWindowFlag(Qt::Window);
  view->setAttribute(Qt::WA_DeleteOnClose);
  try {
    if (QFileInfo(path).isDir())
      view->openFolder(path, true);
    else
      view->openStudy(path);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    delete view;
    return nullptr;
  }
  view->show();
  return view;
}

}  // namespace hs::gui
