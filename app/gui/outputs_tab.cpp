#include "outputs_tab.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "analysis/framework/registry.h"
#include "curve_view.h"
#include "run_label.h"

namespace hs::gui {

namespace {

constexpr int kKeyRole = Qt::UserRole;

// The record's line on a result ("layer → accuracy: ..."): its id, or the family ("dual_route.ablation.*")
// it belongs to.
QString meaningOf(const AnalysisRun& run, const std::string& id) {
  const MethodInfo* m = findMethod(run.method);
  if (!m) return {};
  for (const OutputSpec& o : m->outputs) {
    const bool family = o.id.size() > 2 && o.id.compare(o.id.size() - 2, 2, ".*") == 0;
    const bool match = family ? id.rfind(o.id.substr(0, o.id.size() - 1), 0) == 0 : id == o.id;
    if (!match) continue;
    QString s = QString::fromStdString(o.meaning);
    if (!o.unit.empty()) s = QString::fromStdString(o.unit) + (s.isEmpty() ? "" : ": " + s);
    return s;
  }
  return {};
}

QString cellText(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_number_float()) return QString::number(v.get<double>(), 'g', 4);
  return QString::fromStdString(v.dump());
}

}  // namespace

OutputsTab::OutputsTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* split = new QSplitter;
  tree_ = new QTreeWidget;
  tree_->setHeaderLabels({tr("Run / result"), tr("kind")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  tree_->header()->setStretchLastSection(false);
  tree_->setMinimumWidth(260);  // results' names stay readable beside a wide plot
  split->addWidget(tree_);
  auto* right = new QWidget;
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(4, 0, 0, 0);
  meaning_ = new QLabel;
  meaning_->setWordWrap(true);
  rl->addWidget(meaning_);
  stack_ = new QStackedWidget;
  hint_ =
      new QLabel(tr("Every curve and table of the session's runs is listed on the left; grids are on the "
                    "Heads tab. Run an analysis to fill this."));
  hint_->setAlignment(Qt::AlignCenter);
  hint_->setWordWrap(true);
  hint_->setStyleSheet("color:#777; border:1px dashed #bbb; font-size:13px");
  stack_->addWidget(hint_);
  curve_ = new CurveView;
  stack_->addWidget(curve_);
  table_ = new QTableWidget;
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSortingEnabled(true);
  stack_->addWidget(table_);
  rl->addWidget(stack_, 1);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setSizes({340, 900});
  layout->addWidget(split);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this] { showSelected(); });
}

void OutputsTab::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keep = selectedKey();
  runs_ = runs;
  tree_->blockSignals(true);
  tree_->clear();
  QTreeWidgetItem* reselect = nullptr;
  for (const AnalysisRun& run : runs_) {
    if (run.curves.empty() && run.tables.empty()) continue;
    auto* top = new QTreeWidgetItem(tree_, {runDisplayLabel(run) + " · " + QString::fromStdString(run.id)});
    top->setToolTip(0, runToolTip(run));
    auto add = [&](const std::string& id, const std::string& name, const char* kind) {
      const QString key = QString::fromStdString(run.id + "/" + id);
      auto* item = new QTreeWidgetItem(top, {QString::fromStdString(name.empty() ? id : name), kind});
      item->setData(0, kKeyRole, key);
      item->setToolTip(0, QString::fromStdString(name.empty() ? id : name + "\n" + id));
      if (key == keep) reselect = item;
    };
    for (const Curve& c : run.curves)
      add(c.id, c.name, "curve");
    for (const Table& t : run.tables)
      add(t.id, t.name, "table");
    top->setExpanded(true);
  }
  // Something to look at: the kept result, else the first one.
  if (!reselect && tree_->topLevelItemCount() > 0 && tree_->topLevelItem(0)->childCount() > 0)
    reselect = tree_->topLevelItem(0)->child(0);
  tree_->blockSignals(false);
  if (reselect) tree_->setCurrentItem(reselect);
  showSelected();
}

QStringList OutputsTab::resultKeys() const {
  QStringList keys;
  for (int i = 0; i < tree_->topLevelItemCount(); ++i)
    for (int j = 0; j < tree_->topLevelItem(i)->childCount(); ++j)
      keys << tree_->topLevelItem(i)->child(j)->data(0, kKeyRole).toString();
  return keys;
}

bool OutputsTab::select(const QString& key) {
  for (int i = 0; i < tree_->topLevelItemCount(); ++i)
    for (int j = 0; j < tree_->topLevelItem(i)->childCount(); ++j)
      if (QTreeWidgetItem* item = tree_->topLevelItem(i)->child(j); item->data(0, kKeyRole) == key) {
        tree_->setCurrentItem(item);
        return true;
      }
  return false;
}

QString OutputsTab::selectedKey() const {
  const QTreeWidgetItem* item = tree_->currentItem();
  return item ? item->data(0, kKeyRole).toString() : QString();
}

QCustomPlot* OutputsTab::currentPlot() const {
  return stack_->currentWidget() == curve_ ? curve_->plot() : nullptr;
}

void OutputsTab::showSelected() {
  const QString key = selectedKey();
  const int slash = key.indexOf('/');
  const std::string runId = key.left(slash).toStdString(), id = key.mid(slash + 1).toStdString();
  for (const AnalysisRun& run : runs_) {
    if (slash < 0 || run.id != runId) continue;
    for (const Curve& c : run.curves)
      if (c.id == id) {
        meaning_->setText(meaningOf(run, id));
        curve_->setCurve(c);
        stack_->setCurrentWidget(curve_);
        return;
      }
    for (const Table& t : run.tables)
      if (t.id == id) {
        meaning_->setText(meaningOf(run, id));
        table_->setSortingEnabled(false);
        table_->clear();
        table_->setColumnCount(static_cast<int>(t.columns.size()));
        table_->setRowCount(static_cast<int>(t.rows.size()));
        QStringList headers;
        for (const std::string& c : t.columns)
          headers << QString::fromStdString(c);
        table_->setHorizontalHeaderLabels(headers);
        for (size_t r = 0; r < t.rows.size(); ++r)
          for (size_t c = 0; c < t.rows[r].size() && c < t.columns.size(); ++c) {
            auto* cell = new QTableWidgetItem;
            const nlohmann::json& v = t.rows[r][c];
            if (v.is_number())
              cell->setData(Qt::DisplayRole, v.get<double>());  // sorts as a number
            else
              cell->setText(cellText(v));
            table_->setItem(static_cast<int>(r), static_cast<int>(c), cell);
          }
        table_->setSortingEnabled(true);
        table_->resizeColumnsToContents();
        stack_->setCurrentWidget(table_);
        return;
      }
  }
  meaning_->clear();
  stack_->setCurrentWidget(hint_);
}

}  // namespace hs::gui
