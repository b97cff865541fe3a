#include "runs_dock.h"

#include <QAction>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "analysis/framework/registry.h"
#include "run_label.h"

namespace hs::gui {

RunsDock::RunsDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  list_ = new QListWidget;
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->setTextElideMode(Qt::ElideMiddle);
  layout->addWidget(list_, 1);
  auto* buttons = new QHBoxLayout;
  delete_ = new QPushButton("Delete");
  delete_->setToolTip("Remove the selected runs from the session (Del)");
  buttons->addWidget(delete_);
  auto* closeOthers = new QPushButton("Close other models' runs");
  closeOthers->setObjectName("CloseOtherModels");
  closeOthers->setToolTip("Remove the runs of models other than the loaded one (greyed in the list)");
  connect(closeOthers, &QPushButton::clicked, this, &RunsDock::closeOtherModelsRequested);
  buttons->addWidget(closeOthers);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  auto requestDelete = [this] {
    QStringList ids;
    for (QListWidgetItem* item : list_->selectedItems())
      ids << item->data(Qt::UserRole).toString();
    if (!ids.isEmpty()) Q_EMIT deleteRequested(ids);
  };
  connect(delete_, &QPushButton::clicked, this, requestDelete);
  auto* del = new QAction(list_);
  del->setShortcut(QKeySequence::Delete);
  del->setShortcutContext(Qt::WidgetShortcut);
  list_->addAction(del);
  connect(del, &QAction::triggered, this, requestDelete);
}

void RunsDock::setRuns(const std::vector<AnalysisRun>& runs, const QString& model) {
  list_->clear();
  for (const AnalysisRun& r : runs) {
    const QString label = runDisplayLabel(r);
    auto* item = new QListWidgetItem(label);
    item->setData(Qt::UserRole, QString::fromStdString(r.id));
    const QString tip = runToolTip(r);
    item->setToolTip(tip);
    const QString runModel = QString::fromStdString(r.provenance.model);
    if (!model.isEmpty() && !runModel.isEmpty() && runModel != model) {
      item->setForeground(QColor("#888"));
      item->setText("[other model] " + label);
      item->setToolTip(tip + "<br><i>from another model than the loaded one (not shown in the views)</i>");
    }
    list_->addItem(item);
  }
}

QStringList RunsDock::labels() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i)
    out << list_->item(i)->text();
  return out;
}

void RunsDock::selectRun(const QString& id) {
  for (int i = 0; i < list_->count(); ++i)
    list_->item(i)->setSelected(list_->item(i)->data(Qt::UserRole).toString() == id);
}

}  // namespace hs::gui
