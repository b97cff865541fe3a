#include "prompt_slices.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QTextStream>
#include <QVBoxLayout>

#include "analysis/framework/registry.h"

namespace hs::gui {

namespace {

constexpr int kRecordRole = Qt::UserRole + 1;  // on a row's first item: the index into the run's prompts
const char* kRecords = "prompts";

// The record's output spec of a table says it is per prompt.
bool perPrompt(const AnalysisRun& run, const Table& t) {
  const MethodInfo* m = findMethod(run.method);
  if (!m) return false;
  for (const OutputSpec& o : m->outputs)
    if (o.kind == OutputSpec::Kind::Table && o.id == t.id) return o.unit.rfind("per prompt", 0) == 0;
  return false;
}

QString csvField(QString s) {
  if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace('"', "\"\"") + '"';
  return s;
}

QStandardItem* itemOf(const nlohmann::json& v) {
  auto* item = new QStandardItem;
  if (v.is_number())
    item->setData(v.get<double>(), Qt::DisplayRole);  // sorts as a number
  else if (v.is_string())
    item->setText(QString::fromStdString(v.get<std::string>()));
  else if (!v.is_null())
    item->setText(QString::fromStdString(v.dump()));
  return item;
}

}  // namespace

PromptSlices::PromptSlices(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  source_ = new QComboBox;
  source_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  source_->setMinimumContentsLength(16);
  source_->setToolTip(tr("Per-prompt tables of the session's runs, and the prompts each run used"));
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("filter: rows holding this text"));
  filter_->setClearButtonEnabled(true);
  column_ = new QComboBox;
  column_->setToolTip(tr("The column the filter looks in"));
  auto* exportButton = new QPushButton(tr("Export CSV…"));
  exportButton->setObjectName("ExportPromptsCsv");
  count_ = new QLabel;
  column_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  column_->setMinimumContentsLength(10);
  bar->addWidget(new QLabel(tr("Rows of")));
  bar->addWidget(source_, 1);
  bar->addWidget(count_);
  bar->addWidget(exportButton);
  layout->addLayout(bar);
  auto* bar2 = new QHBoxLayout;  // a second row: the window stays narrow enough for 1024 px screens
  bar2->addWidget(new QLabel(tr("Filter")));
  bar2->addWidget(filter_, 1);
  bar2->addWidget(new QLabel(tr("in")));
  bar2->addWidget(column_);
  layout->addLayout(bar2);
  model_ = new QStandardItemModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);
  view_ = new QTableView;
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setWordWrap(false);
  view_->setTextElideMode(Qt::ElideMiddle);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);  // one line a row
  view_->setToolTip(tr("Double-click a row: its prompt on the Prompt tab"));
  layout->addWidget(view_, 1);

  connect(source_, &QComboBox::currentIndexChanged, this, &PromptSlices::fill);
  auto refilter = [this] { setFilter(filter_->text(), column_->currentData().toString()); };
  connect(filter_, &QLineEdit::textChanged, this, refilter);
  connect(column_, &QComboBox::currentIndexChanged, this, refilter);
  connect(view_, &QTableView::activated, this, [this](const QModelIndex& i) {
    const QString text = promptOf(i.row());
    if (!text.isEmpty()) Q_EMIT openPrompt(text);
  });
  connect(exportButton, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export the rows shown"), {}, tr("CSV (*.csv)"));
    if (!f.isEmpty()) exportCsv(f);
  });
}

const AnalysisRun* PromptSlices::run(const QString& id) const {
  for (const AnalysisRun& r : runs_)
    if (QString::fromStdString(r.id) == id) return &r;
  return nullptr;
}

void PromptSlices::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keep = source();
  runs_ = runs;
  {
    const QSignalBlocker block(source_);
    source_->clear();
    for (const AnalysisRun& r : runs_) {
      const QString id = QString::fromStdString(r.id);
      for (const Table& t : r.tables)
        if (perPrompt(r, t))
          source_->addItem(QString::fromStdString(t.name.empty() ? t.id : t.name) + " · " + id,
                           id + "/" + QString::fromStdString(t.id));
      if (!r.prompts.empty())
        source_->addItem(tr("The %1 prompts %2 ran on").arg(r.prompts.size()).arg(id), id + "/" + kRecords);
    }
    const int i = source_->findData(keep);
    source_->setCurrentIndex(i >= 0 ? i : 0);
  }
  fill();
}

QStringList PromptSlices::sources() const {
  QStringList out;
  for (int i = 0; i < source_->count(); ++i)
    out << source_->itemData(i).toString();
  return out;
}

bool PromptSlices::setSource(const QString& key) {
  const int i = source_->findData(key);
  if (i < 0) return false;
  source_->setCurrentIndex(i);
  return true;
}

QString PromptSlices::source() const {
  return source_->currentData().toString();
}

void PromptSlices::setDecoded(const QString& runId, const QStringList& texts, const QStringList& answers) {
  texts_[runId] = texts;
  answers_[runId] = answers;
  if (source().section('/', 0, 0) == runId) fill();
}

void PromptSlices::fill() {
  const int sortColumn = proxy_->sortColumn();
  const Qt::SortOrder order = proxy_->sortOrder();
  model_->clear();
  const QString key = source();
  const QString runId = key.section('/', 0, 0), what = key.section('/', 1);
  const AnalysisRun* r = run(runId);
  if (!r) {
    updateCount();
    return;
  }
  // Each prompt record's index within its set, to find a table row's ("set", "index") record.
  std::vector<int> inSet;
  QMap<QString, int> seen;
  for (const PromptRecord& p : r->prompts)
    inSet.push_back(seen[QString::fromStdString(p.set)]++);
  auto recordOf = [&](const QString& set, int index) {
    for (size_t i = 0; i < r->prompts.size(); ++i)
      if (QString::fromStdString(r->prompts[i].set) == set && inSet[i] == index) return static_cast<int>(i);
    return -1;
  };
  const QStringList texts = texts_.value(runId), answers = answers_.value(runId);
  if (!r->prompts.empty() && !texts_.contains(runId) && !requested_.contains(runId)) {
    requested_ << runId;
    std::vector<std::vector<int>> ids, answerIds;
    for (const PromptRecord& p : r->prompts) {
      ids.emplace_back(p.ids.begin(), p.ids.end());
      answerIds.emplace_back(p.answer_ids.begin(), p.answer_ids.end());
    }
    Q_EMIT decodeRequested(runId, ids, answerIds);
  }
  if (what == kRecords) {
    model_->setHorizontalHeaderLabels({"set", "index", "tokens", "query_pos", "answer", "text"});
    for (size_t i = 0; i < r->prompts.size(); ++i) {
      const PromptRecord& p = r->prompts[i];
      QList<QStandardItem*> row;
      row << itemOf(p.set) << itemOf(inSet[i]) << itemOf(p.ids.size()) << itemOf(p.query_pos)
          << new QStandardItem(answers.value(static_cast<int>(i)))
          << new QStandardItem(texts.value(static_cast<int>(i), tr("(decoding…)")));
      row.front()->setData(static_cast<int>(i), kRecordRole);
      model_->appendRow(row);
    }
  } else {
    for (const Table& t : r->tables) {
      if (QString::fromStdString(t.id) != what) continue;
      QStringList header;
      for (const std::string& c : t.columns)
        header << QString::fromStdString(c);
      model_->setHorizontalHeaderLabels(header);
      const int setColumn = header.indexOf("set"), indexColumn = header.indexOf("index");
      for (const auto& cells : t.rows) {
        QList<QStandardItem*> row;
        for (const nlohmann::json& v : cells)
          row << itemOf(v);
        int record = -1;
        if (setColumn >= 0 && indexColumn >= 0 && setColumn < static_cast<int>(cells.size()) &&
            indexColumn < static_cast<int>(cells.size()) &&
            cells[static_cast<size_t>(setColumn)].is_string() &&
            cells[static_cast<size_t>(indexColumn)].is_number_integer())
          record = recordOf(QString::fromStdString(cells[static_cast<size_t>(setColumn)].get<std::string>()),
                            cells[static_cast<size_t>(indexColumn)].get<int>());
        if (!row.isEmpty()) row.front()->setData(record, kRecordRole);
        model_->appendRow(row);
      }
    }
  }
  {
    const QString keepColumn = column_->currentData().toString();
    const QSignalBlocker block(column_);
    column_->clear();
    column_->addItem(tr("any column"), QString());
    for (const QString& c : columns())
      column_->addItem(c, c);
    column_->setCurrentIndex(std::max(0, column_->findData(keepColumn)));
  }
  setFilter(filter_->text(), column_->currentData().toString());
  if (sortColumn >= 0 && sortColumn < model_->columnCount()) proxy_->sort(sortColumn, order);
  view_->resizeColumnsToContents();
  for (int c = 0; c < model_->columnCount(); ++c)
    view_->setColumnWidth(c, std::min(view_->columnWidth(c), 360));
}

QStringList PromptSlices::columns() const {
  QStringList out;
  for (int c = 0; c < model_->columnCount(); ++c)
    out << model_->headerData(c, Qt::Horizontal).toString();
  return out;
}

void PromptSlices::setFilter(const QString& text, const QString& column) {
  if (filter_->text() != text) {
    const QSignalBlocker block(filter_);
    filter_->setText(text);
  }
  const int c = column.isEmpty() ? -1 : static_cast<int>(columns().indexOf(column));
  if (c >= 0 && column_->currentData().toString() != column) {
    const QSignalBlocker block(column_);
    column_->setCurrentIndex(column_->findData(column));
  }
  proxy_->setFilterKeyColumn(c);
  proxy_->setFilterRegularExpression(
      QRegularExpression(QRegularExpression::escape(text), QRegularExpression::CaseInsensitiveOption));
  updateCount();
}

void PromptSlices::sortBy(const QString& column, Qt::SortOrder order) {
  const int c = static_cast<int>(columns().indexOf(column));
  if (c >= 0) view_->sortByColumn(c, order);
}

QString PromptSlices::filterText() const {
  return filter_->text();
}

QString PromptSlices::filterColumn() const {
  return column_->currentData().toString();
}

QString PromptSlices::sortColumn() const {
  const int c = proxy_->sortColumn();
  const QStringList names = columns();
  return c >= 0 && c < names.size() ? names[c] : QString();
}

Qt::SortOrder PromptSlices::sortOrder() const {
  return proxy_->sortOrder();
}

int PromptSlices::rowCount() const {
  return proxy_->rowCount();
}

int PromptSlices::totalRows() const {
  return model_->rowCount();
}

QString PromptSlices::cell(int row, const QString& column) const {
  const int c = static_cast<int>(columns().indexOf(column));
  if (c < 0 || row < 0 || row >= proxy_->rowCount()) return {};
  return proxy_->data(proxy_->index(row, c)).toString();
}

QString PromptSlices::promptOf(int row) const {
  if (row < 0 || row >= proxy_->rowCount()) return {};
  const int record = proxy_->data(proxy_->index(row, 0), kRecordRole).toInt();
  const QStringList texts = texts_.value(source().section('/', 0, 0));
  return record >= 0 && record < texts.size() ? texts[record] : QString();
}

void PromptSlices::updateCount() {
  count_->setText(tr("%1 of %2 rows").arg(proxy_->rowCount()).arg(model_->rowCount()));
}

bool PromptSlices::exportCsv(const QString& path, QString* error) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
    if (error) *error = path + ": " + f.errorString();
    return false;
  }
  QTextStream out(&f);
  QStringList header;
  for (const QString& c : columns())
    header << csvField(c);
  out << header.join(',') << '\n';
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < proxy_->columnCount(); ++c)
      cells << csvField(proxy_->data(proxy_->index(r, c)).toString());
    out << cells.join(',') << '\n';
  }
  out.flush();
  if (f.error() != QFile::NoError) {
    if (error) *error = path + ": " + f.errorString();
    return false;
  }
  return true;
}

}  // namespace hs::gui
