#include "dynamics_tab.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "curve_view.h"
#include "head_grid_view.h"
#include "qcustomplot_include.h"

namespace hs::gui {

DynamicsTab::DynamicsTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  selector_ = new QComboBox;
  selector_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  selector_->setMinimumContentsLength(30);
  topK_ = new QSpinBox;
  topK_->setRange(1, 64);
  topK_->setValue(8);
  topK_->setPrefix("top ");
  topK_->setSuffix(" heads");
  topK_->setToolTip("Heads drawn: those with the highest value at the last checkpoint");
  checkpoint_ = new QSlider(Qt::Horizontal);
  checkpoint_->setMinimumWidth(160);
  checkpointLabel_ = new QLabel;
  bar->addWidget(new QLabel("Series"));
  bar->addWidget(selector_, 1);
  bar->addWidget(topK_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel("Grid at"));
  bar->addWidget(checkpoint_);
  bar->addWidget(checkpointLabel_);
  layout->addLayout(bar);
  empty_ = new QLabel(
      "No training-checkpoint series in this session. File → Import published results… and choose a model "
      "with checkpoints (e.g. causal_scores/OLMo-2-1124-7B or causal_scores/pythia-6.9b of the dual-route "
      "study): each head's score is then drawn across training.");
  empty_->setWordWrap(true);
  layout->addWidget(empty_);
  auto* split = new QSplitter(Qt::Horizontal);
  curve_ = new CurveView;
  grid_ = new HeadGridView;
  split->addWidget(curve_);
  split->addWidget(grid_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  connect(selector_, &QComboBox::currentIndexChanged, this, &DynamicsTab::showCurrent);
  connect(topK_, &QSpinBox::valueChanged, this, &DynamicsTab::showCurrent);
  connect(checkpoint_, &QSlider::valueChanged, this, &DynamicsTab::showCheckpoint);
  showCurrent();
}

void DynamicsTab::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keep = selector_->currentText();
  series_ = checkpointSeries(runs);
  {
    const QSignalBlocker b(selector_);
    selector_->clear();
    for (const CheckpointSeries& s : series_)
      selector_->addItem(QString::fromStdString(s.label()));
    const int i = selector_->findText(keep);
    selector_->setCurrentIndex(i >= 0 ? i : 0);
  }
  showCurrent();
}

QStringList DynamicsTab::seriesLabels() const {
  QStringList out;
  for (const CheckpointSeries& s : series_)
    out << QString::fromStdString(s.label());
  return out;
}

bool DynamicsTab::setSeries(const QString& label) {
  const int i = selector_->findText(label);
  if (i < 0) return false;
  selector_->setCurrentIndex(i);
  return true;
}

const CheckpointSeries* DynamicsTab::current() const {
  const int i = selector_->currentIndex();
  return i >= 0 && i < static_cast<int>(series_.size()) ? &series_[static_cast<size_t>(i)] : nullptr;
}

void DynamicsTab::setTopK(int k) {
  topK_->setValue(k);
}

void DynamicsTab::setCheckpoint(int index) {
  checkpoint_->setValue(index);
}

QCustomPlot* DynamicsTab::plot() const {
  return curve_->plot();
}

void DynamicsTab::showCurrent() {
  const CheckpointSeries* s = current();
  empty_->setVisible(!s);
  curve_->setVisible(s);
  grid_->setVisible(s);
  checkpoint_->setEnabled(s);
  if (!s) {
    checkpointLabel_->clear();
    return;
  }
  Curve c;
  c.id = "dynamics." + s->grid_id;
  c.name = s->model + ": " + (s->name.empty() ? s->grid_id : s->name) + " across training";
  c.x_label = "training step";
  c.y_label = s->unit;
  c.x = s->steps;
  for (const HeadRef& h : s->topAtLast(topK_->value())) {
    std::vector<double> y;
    for (Eigen::Index j = 0; j < s->values.cols(); ++j)
      y.push_back(s->values(h.layer * s->heads + h.head, j));
    c.series.emplace_back(std::to_string(h.layer) + "." + std::to_string(h.head), y);
  }
  curve_->setCurve(c);
  // Checkpoints are spread over orders of magnitude of steps: a logarithmic step axis.
  QCustomPlot* p = curve_->plot();
  p->xAxis->setScaleType(QCPAxis::stLogarithmic);
  p->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  p->xAxis->setRange(s->steps.front() / 1.5, s->steps.back() * 1.5);
  p->replot();
  {
    const QSignalBlocker b(checkpoint_);
    checkpoint_->setRange(0, static_cast<int>(s->steps.size()) - 1);
    if (checkpoint_->value() > checkpoint_->maximum() || checkpoint_->value() < 0)
      checkpoint_->setValue(checkpoint_->maximum());
  }
  showCheckpoint();
}

void DynamicsTab::showCheckpoint() {
  const CheckpointSeries* s = current();
  if (!s) return;
  const int j = std::clamp(checkpoint_->value(), 0, static_cast<int>(s->steps.size()) - 1);
  HeadGrid g;
  g.id = s->grid_id;
  g.name = s->model + " @ " + s->checkpoints[static_cast<size_t>(j)];
  g.unit = s->unit;
  g.values.resize(s->layers, s->heads);
  for (int l = 0; l < s->layers; ++l)
    for (int h = 0; h < s->heads; ++h)
      g.values(l, h) = s->values(l * s->heads + h, j);
  grid_->setGrid(g);
  checkpointLabel_->setText(QString::fromStdString(s->checkpoints[static_cast<size_t>(j)]));
}

}  // namespace hs::gui
