#include "interventions_dock.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QRegularExpression>

#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <set>

namespace hs::gui {

InterventionsDock::InterventionsDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* hint = new QLabel(
      "Right-click heads in the Heads tab to add. Checked entries apply to the Prompt and Attention tabs "
      "and to “Evaluate with interventions”. Double-click an entry for its scale and positions.");
  hint->setWordWrap(true);
  hint->setStyleSheet("color:#555");
  layout->addWidget(hint);
  list_ = new QListWidget;
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  layout->addWidget(list_, 1);
  auto* buttons = new QHBoxLayout;
  auto* remove = new QPushButton("Remove");
  auto* clearAll = new QPushButton("Clear");
  buttons->addWidget(remove);
  buttons->addWidget(clearAll);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  connect(remove, &QPushButton::clicked, this, [this] {
    for (int r = list_->count() - 1; r >= 0; --r)
      if (list_->item(r)->isSelected()) removeRow(r);
  });
  connect(clearAll, &QPushButton::clicked, this, &InterventionsDock::clear);
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const int r = list_->row(item);
    if (r < 0 || r >= static_cast<int>(entries_.size())) return;
    const bool on = item->checkState() == Qt::Checked;
    if (entries_[static_cast<size_t>(r)].enabled == on) return;
    entries_[static_cast<size_t>(r)].enabled = on;
    if (on) {
      const QStringList off = untickOthers(r);
      if (!off.isEmpty())
        Q_EMIT notice(QString("%1 replaces %2 (one intervention per head)")
                          .arg(interventionLabel(entries_[static_cast<size_t>(r)]), off.join(", ")));
    }
    Q_EMIT changed();
  });
  connect(list_, &QListWidget::itemDoubleClicked, this,
          [this](QListWidgetItem* item) { editParameters(list_->row(item)); });
}

void InterventionsDock::append(const InterventionEntry& e) {
  const QSignalBlocker block(list_);
  auto* item = new QListWidgetItem(interventionLabel(e));
  item->setToolTip(interventionLabel(e));
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(e.enabled ? Qt::Checked : Qt::Unchecked);
  list_->addItem(item);
  entries_.push_back(e);
}

QStringList InterventionsDock::untickOthers(int row) {
  QStringList off;
  const HeadRef head = entries_[static_cast<size_t>(row)].head;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (static_cast<int>(i) != row && entries_[i].enabled && entries_[i].head == head) {
      entries_[i].enabled = false;
      const QSignalBlocker block(list_);
      list_->item(static_cast<int>(i))->setCheckState(Qt::Unchecked);
      off << interventionLabel(entries_[i]);
    }
  return off;
}

void InterventionsDock::add(InterventionKind kind, const std::vector<HeadRef>& heads) {
  bool any = false;
  QStringList replaced;
  for (const HeadRef& h : heads) {
    int row = -1;
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].kind == kind && entries_[i].head == h) row = static_cast<int>(i);
    if (row < 0) {
      InterventionEntry e;
      e.kind = kind;
      e.head = h;
      append(e);
      row = static_cast<int>(entries_.size()) - 1;
      any = true;
    } else if (!entries_[static_cast<size_t>(row)].enabled) {
      const QSignalBlocker block(list_);
      entries_[static_cast<size_t>(row)].enabled = true;
      list_->item(row)->setCheckState(Qt::Checked);
      any = true;
    }
    const QStringList off = untickOthers(row);
    if (!off.isEmpty()) {
      replaced << off;
      any = true;
    }
  }
  if (!replaced.isEmpty())
    Q_EMIT notice(QString("%1 replaces %2 (one intervention per head; the other stays in the list, unticked)")
                      .arg(kindLabel(kind), replaced.join(", ")));
  if (any) Q_EMIT changed();
}

int InterventionsDock::enabledHeads() const {
  std::set<HeadRef> heads;
  for (const InterventionEntry& e : entries_)
    if (e.enabled) heads.insert(e.head);
  return static_cast<int>(heads.size());
}

void InterventionsDock::setParameters(int row, double scale, const std::vector<int>& positions) {
  if (row < 0 || row >= static_cast<int>(entries_.size())) return;
  InterventionEntry& e = entries_[static_cast<size_t>(row)];
  if (e.scale == scale && e.positions == positions) return;
  e.scale = scale;
  e.positions = positions;
  list_->item(row)->setText(interventionLabel(e));
  Q_EMIT changed();
}

void InterventionsDock::editParameters(int row) {
  if (row < 0 || row >= static_cast<int>(entries_.size())) return;
  const InterventionEntry e = entries_[static_cast<size_t>(row)];
  QDialog d(this);
  d.setWindowTitle("Intervention: " + interventionLabel(e));
  auto* form = new QFormLayout(&d);
  auto* scale = new QDoubleSpinBox;
  scale->setRange(-100, 100);
  scale->setDecimals(2);
  scale->setValue(e.scale);
  scale->setEnabled(e.kind == InterventionKind::Steer);
  scale->setToolTip("Steering adds scale × the head's clean ICL mean output at the chosen positions");
  auto* positions = new QLineEdit;
  QStringList p;
  for (int i : e.positions)
    p << QString::number(i);
  positions->setText(p.join(","));
  const bool atN = e.kind == InterventionKind::PatchClean || e.kind == InterventionKind::Steer;
  positions->setPlaceholderText(atN ? "default: -1 (the last position, N)" : "default: every position");
  positions->setToolTip(
      "Token positions, comma-separated; negative counts from the end (-1 = N). The "
      "Prompt and Attention tabs use them; the evaluation needs the default.");
  form->addRow("Steering scale", scale);
  form->addRow("Positions", positions);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  if (d.exec() != QDialog::Accepted) return;
  std::vector<int> pos;
  for (const QString& s : positions->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = s.toInt(&ok);
    if (!ok) {
      QMessageBox::warning(this, "Intervention", "“" + s + "” is not a token position (an integer)");
      return;
    }
    pos.push_back(v);
  }
  setParameters(row, scale->value(), pos);
}

std::vector<InterventionEntry> InterventionsDock::entries() const {
  return entries_;
}

void InterventionsDock::setEntries(const std::vector<InterventionEntry>& entries) {
  {
    const QSignalBlocker block(list_);
    list_->clear();
    entries_.clear();
  }
  for (const InterventionEntry& e : entries)
    append(e);
  Q_EMIT changed();
}

void InterventionsDock::setEnabled(int row, bool on) {
  if (row < 0 || row >= list_->count()) return;
  list_->item(row)->setCheckState(on ? Qt::Checked : Qt::Unchecked);  // itemChanged updates entries_
}

void InterventionsDock::removeRow(int row) {
  if (row < 0 || row >= list_->count()) return;
  {
    const QSignalBlocker block(list_);
    delete list_->takeItem(row);
  }
  entries_.erase(entries_.begin() + row);
  Q_EMIT changed();
}

void InterventionsDock::clear() {
  if (entries_.empty()) return;
  setEntries({});
}

}  // namespace hs::gui
