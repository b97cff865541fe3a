#include "evaluation_dock.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace hs::gui {

namespace {
QString pct(double v) {
  return std::isfinite(v) ? QString::number(100.0 * v, 'f', 1) + " %" : QString("—");
}
QString delta(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "—";
  const double d = 100.0 * (b - a);
  return QString("%1%2 pp").arg(d > 0 ? "+" : "").arg(d, 0, 'f', 1);
}
}  // namespace

EvaluationDock::EvaluationDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  evaluate_ = new QPushButton("Evaluate with interventions");
  evaluate_->setToolTip(
      "Runs the current task on the worker: ICL prompts with the checked ablations, "
      "zero-shot prompts with the checked patches and steering (Ctrl+E)");
  layout->addWidget(evaluate_);
  table_ = new QTableWidget(4, 3);
  table_->setHorizontalHeaderLabels({"baseline", "intervened", "Δ"});
  table_->setVerticalHeaderLabels({"ICL accuracy", "ICL TR ratio", "0-shot accuracy", "0-shot TR ratio"});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMinimumHeight(150);
  // Room for the row labels and three percentages ("100.0 %", "+12.5 pp") without clipping.
  table_->setMinimumWidth(table_->fontMetrics().horizontalAdvance("0-shot TR ratio") +
                          3 * table_->fontMetrics().horizontalAdvance("  intervened  ") + 8);
  layout->addWidget(table_);
  note_ = new QLabel("Not evaluated yet.");
  note_->setWordWrap(true);
  note_->setStyleSheet("color:#555");
  layout->addWidget(note_);
  layout->addStretch(1);
  connect(evaluate_, &QPushButton::clicked, this, &EvaluationDock::evaluateRequested);
}

void EvaluationDock::setResult(const EvalResult& r) {
  result_ = r;
  const std::pair<double, double> rows[4] = {{r.icl.accuracy, r.iclIntervened.accuracy},
                                             {r.icl.trRatio, r.iclIntervened.trRatio},
                                             {r.zeroShot.accuracy, r.zeroShotIntervened.accuracy},
                                             {r.zeroShot.trRatio, r.zeroShotIntervened.trRatio}};
  for (int i = 0; i < 4; ++i) {
    table_->setItem(i, 0, new QTableWidgetItem(pct(rows[i].first)));
    table_->setItem(i, 1, new QTableWidgetItem(pct(rows[i].second)));
    table_->setItem(i, 2, new QTableWidgetItem(delta(rows[i].first, rows[i].second)));
    for (int c = 0; c < 3; ++c)
      table_->item(i, c)->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  note_->setText(QString("%1 · %2 prompts · %3 heads ablated on ICL prompts, %4 heads patched/steered on "
                         "zero-shot prompts")
                     .arg(r.task.toHtmlEscaped())
                     .arg(r.icl.n)
                     .arg(r.nAblated)
                     .arg(r.nPatched));
}

}  // namespace hs::gui
