#include "interventions_dock.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace hs::gui {

InterventionsDock::InterventionsDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* hint = new QLabel(
      "Right-click heads in the Heads tab to add. Checked entries apply to "
      "“Evaluate with interventions”.");
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
    Q_EMIT changed();
  });
}

void InterventionsDock::append(const InterventionEntry& e) {
  const QSignalBlocker block(list_);
  auto* item = new QListWidgetItem(interventionLabel(e));
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(e.enabled ? Qt::Checked : Qt::Unchecked);
  list_->addItem(item);
  entries_.push_back(e);
}

void InterventionsDock::add(InterventionKind kind, const std::vector<HeadRef>& heads) {
  bool any = false;
  for (const HeadRef& h : heads) {
    bool found = false;
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].kind == kind && entries_[i].head == h) {
        found = true;
        if (!entries_[i].enabled) setEnabled(static_cast<int>(i), true);
      }
    if (!found) {
      append({kind, h, true});
      any = true;
    }
  }
  if (any) Q_EMIT changed();
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
