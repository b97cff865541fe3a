#include "dynamics_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>

#include "curve_view.h"
#include "head_grid_view.h"
#include "plot_style.h"
#include "qcustomplot_include.h"
#include "view_state_read.h"

namespace hs::gui {

namespace {

QString seriesKey(const CheckpointSeries& s) {
  return QString::fromStdString(s.model + "/" + s.grid_id);
}

QString headName(HeadRef h) {
  return QString("L%1 H%2").arg(h.layer).arg(h.head);
}

// A training step in a few characters: 150, 4k, 262k, 1.2M.
QString stepLabel(double step) {
  const double a = std::abs(step);
  if (a >= 1e6) return QString::number(step / 1e6, 'g', 2) + "M";
  if (a >= 1e3) return QString::number(std::round(step / 1e3)) + "k";
  return QString::number(step, 'g', 6);
}

// The rows of the heatmap: the k best heads at the last checkpoint (k ≤ 0: all heads), best first.
std::vector<HeadRef> rowsOf(const CheckpointSeries& s, int k) {
  return s.topAtLast(k > 0 ? k : s.layers * s.heads);
}

}  // namespace

DynamicsTab::DynamicsTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  picker_ = new QComboBox;
  picker_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  picker_->setMinimumContentsLength(24);
  picker_->setToolTip("One grid of one model across its training checkpoints");
  topK_ = new QSpinBox;
  topK_->setRange(0, 100000);
  topK_->setValue(24);
  topK_->setPrefix("top ");
  topK_->setSuffix(" heads");
  topK_->setSpecialValueText("all heads");
  topK_->setToolTip("Rows: the heads with the highest score at the last checkpoint (0: all heads, sorted)");
  auto* clear = new QPushButton("Clear curves");
  bar->addWidget(new QLabel("Series"));
  bar->addWidget(picker_, 1);
  bar->addSpacing(12);
  bar->addWidget(new QLabel("Rows"));
  bar->addWidget(topK_);
  bar->addWidget(clear);
  layout->addLayout(bar);

  stack_ = new QStackedWidget;
  placeholder_ = new QLabel(
      "No checkpoint series in the session. A series is one grid of one model at two or more training "
      "steps: File → Import published results → Files or folder… and pick a model's folder of training "
      "checkpoints (e.g. causal_scores/OLMo-2-1124-7B of the dual-route study), or open runs whose options "
      "record a \"step\".");
  placeholder_->setWordWrap(true);
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setMargin(24);
  auto* split = new QSplitter(Qt::Horizontal);
  heatmap_ = new HeadGridView;
  heatmap_->setMenuEnabled(false);  // rows are heads of another model than the loaded one, in general
  curveView_ = new CurveView;
  split->addWidget(heatmap_);
  split->addWidget(curveView_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  stack_->addWidget(placeholder_);
  stack_->addWidget(split);
  layout->addWidget(stack_, 1);

  connect(picker_, &QComboBox::currentIndexChanged, this, [this] {
    showSeries();
    Q_EMIT changed();
  });
  connect(topK_, &QSpinBox::valueChanged, this, [this] {
    showSeries();
    Q_EMIT changed();
  });
  connect(clear, &QPushButton::clicked, this, [this] {
    setCurveHeads({});
    Q_EMIT changed();
  });
  // Connected after the view's own handler: the view's click selection is replaced by the curve rows.
  connect(heatmap_->plot(), &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    const std::optional<HeadRef> cell = heatmap_->headAt(event->position().toPoint());
    if (cell && cell->layer < static_cast<int>(rows_.size())) {
      toggleCurve(rows_[static_cast<size_t>(cell->layer)]);
      Q_EMIT changed();
    } else {
      syncSelection();
    }
  });
  showSeries();
}

void DynamicsTab::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keep = currentSeriesKey();
  series_ = checkpointSeries(runs);
  {
    const QSignalBlocker block(picker_);
    picker_->clear();
    for (const CheckpointSeries& s : series_)
      picker_->addItem(QString::fromStdString(s.label()) + QString("  (%1 checkpoints)").arg(s.steps.size()),
                       seriesKey(s));
    const int i = picker_->findData(keep);
    picker_->setCurrentIndex(i >= 0 ? i : 0);
  }
  showSeries();
}

QStringList DynamicsTab::seriesKeys() const {
  QStringList out;
  for (const CheckpointSeries& s : series_)
    out << seriesKey(s);
  return out;
}

QString DynamicsTab::currentSeriesKey() const {
  return picker_->currentData().toString();
}

bool DynamicsTab::setCurrentSeries(const QString& key) {
  const int i = picker_->findData(key);
  if (i < 0) return false;
  picker_->setCurrentIndex(i);
  return true;
}

const CheckpointSeries* DynamicsTab::currentSeries() const {
  const QString key = currentSeriesKey();
  for (const CheckpointSeries& s : series_)
    if (seriesKey(s) == key) return &s;
  return nullptr;
}

void DynamicsTab::setTopK(int k) {
  topK_->setValue(std::max(k, 0));
}

int DynamicsTab::topK() const {
  return topK_->value();
}

void DynamicsTab::showSeries() {
  const CheckpointSeries* s = currentSeries();
  if (!s) {
    rows_.clear();
    stack_->setCurrentWidget(placeholder_);
    return;
  }
  stack_->setCurrentIndex(1);
  const QString key = seriesKey(*s);
  const bool newSeries = heatmap_->property("hsSeries").toString() != key;
  heatmap_->setProperty("hsSeries", key);

  rows_ = rowsOf(*s, topK_->value());
  const int steps = static_cast<int>(s->steps.size());
  HeadGrid m;
  m.id = s->grid_id + ".dynamics";
  m.unit = s->unit;
  // Two lines: the grid's name, then the model and which heads the rows are.
  m.name = (s->name.empty() ? s->grid_id : s->name) + "\n" + s->model + " · " +
           (topK_->value() > 0 && static_cast<int>(rows_.size()) < s->layers * s->heads
                ? "top " + std::to_string(rows_.size()) + " heads at the last checkpoint"
                : "all heads, best at the last checkpoint first");
  m.values.resize(static_cast<Eigen::Index>(rows_.size()), steps);  // [rows, steps]
  QStringList rowLabels, stepLabels;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const Eigen::Index row = static_cast<Eigen::Index>(rows_[r].layer) * s->heads + rows_[r].head;
    m.values.row(static_cast<Eigen::Index>(r)) = s->values.row(row);
    rowLabels << headName(rows_[r]);
  }
  for (double step : s->steps)
    stepLabels << stepLabel(step);
  heatmap_->setGrid(m);
  heatmap_->setAxisText("training step", stepLabels, "head (best at the last checkpoint first)", rowLabels);
  heatmap_->setCellText([this](HeadRef cell, double v) {
    const CheckpointSeries* s = currentSeries();
    if (!s || cell.layer >= static_cast<int>(rows_.size()) || cell.head >= static_cast<int>(s->steps.size()))
      return QString();
    const size_t c = static_cast<size_t>(cell.head);
    QString text = QString("%1 at step %2 (%3): ")
                       .arg(headName(rows_[static_cast<size_t>(cell.layer)]))
                       .arg(QString::number(s->steps[c], 'f', 0), QString::fromStdString(s->checkpoints[c]));
    text += std::isfinite(v) ? QString::number(v, 'g', 4) + " " + QString::fromStdString(s->unit)
                             : QString("no value");
    return text + "\nclick: add or remove this head's curve";
  });

  // Curves of heads the series has; a series shown for the first time starts with its three best heads.
  std::vector<HeadRef> kept;
  for (const HeadRef& h : curves_)
    if (h.layer < s->layers && h.head < s->heads) kept.push_back(h);
  curves_ = kept;
  if (newSeries && curves_.empty()) {
    const std::vector<HeadRef> best = s->topAtLast(3);
    curves_.assign(best.begin(), best.end());
  }
  showCurves();
}

void DynamicsTab::setCurveHeads(const std::vector<HeadRef>& heads) {
  curves_.clear();
  for (const HeadRef& h : heads)
    if (std::find(curves_.begin(), curves_.end(), h) == curves_.end()) curves_.push_back(h);
  if (const CheckpointSeries* s = currentSeries()) {
    curves_.erase(std::remove_if(curves_.begin(), curves_.end(),
                                 [s](const HeadRef& h) {
                                   return h.layer < 0 || h.head < 0 || h.layer >= s->layers ||
                                          h.head >= s->heads;
                                 }),
                  curves_.end());
  }
  showCurves();
}

void DynamicsTab::toggleCurve(HeadRef head) {
  std::vector<HeadRef> next = curves_;
  const auto it = std::find(next.begin(), next.end(), head);
  if (it != next.end())
    next.erase(it);
  else
    next.push_back(head);
  setCurveHeads(next);
}

void DynamicsTab::showCurves() {
  const CheckpointSeries* s = currentSeries();
  if (!s) return;
  Curve c;
  c.id = s->grid_id + ".dynamics";
  c.name = (s->name.empty() ? s->grid_id : s->name) + "\n" + s->model + " · the chosen heads across training";
  c.x_label = "training step (log scale)";
  c.y_label = s->unit;
  c.x = s->steps;
  for (const HeadRef& h : curves_) {
    const Eigen::Index row = static_cast<Eigen::Index>(h.layer) * s->heads + h.head;
    std::vector<double> ys(s->steps.size());
    for (size_t j = 0; j < ys.size(); ++j)
      ys[j] = s->values(row, static_cast<Eigen::Index>(j));
    c.series.emplace_back(headName(h).toStdString(), std::move(ys));
  }
  curveView_->setCurve(c);
  // Training steps span orders of magnitude: a log axis (when every step is positive), a decade ticker.
  QCustomPlot* plot = curveView_->plot();
  if (!s->steps.empty() && s->steps.front() > 0) {
    plot->xAxis->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
    ticker->setLogBase(10);
    ticker->setSubTickCount(8);
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setNumberFormat("eb");
    plot->xAxis->setNumberPrecision(0);
    plot->xAxis->setSubTicks(true);
    plot->xAxis->setRange(s->steps.front() / 1.5, s->steps.back() * 1.5);
  } else {
    plot->xAxis->setScaleType(QCPAxis::stLinear);
    plot->xAxis->setLabel("training step");
  }
  plotstyle::replotIfSized(*plot);
  syncSelection();
}

void DynamicsTab::syncSelection() {
  if (syncing_) return;
  syncing_ = true;
  std::vector<HeadRef> cells;
  const int steps = heatmap_->grid().heads();
  for (size_t r = 0; r < rows_.size(); ++r)
    if (std::find(curves_.begin(), curves_.end(), rows_[r]) != curves_.end())
      for (int c = 0; c < steps; ++c)
        cells.push_back({static_cast<int>(r), c});
  heatmap_->setSelection(cells);
  syncing_ = false;
}

nlohmann::json DynamicsTab::viewState() const {
  nlohmann::json heads = nlohmann::json::array();
  for (const HeadRef& h : curves_)
    heads.push_back({h.layer, h.head});
  return {{"series", currentSeriesKey().toStdString()}, {"top_k", topK()}, {"curves", heads}};
}

void DynamicsTab::restoreViewState(const nlohmann::json& j) {
  if (!j.is_object()) return;
  const ViewStateReader r(j);
  if (r.has("top_k")) setTopK(r.integer("top_k", topK(), 0, 100000));
  if (r.has("series")) setCurrentSeries(r.text("series", currentSeriesKey()));
  if (j.contains("curves") && j["curves"].is_array()) {
    std::vector<HeadRef> heads;
    for (const nlohmann::json& h : j["curves"])
      if (h.is_array() && h.size() == 2 && h[0].is_number_integer() && h[1].is_number_integer() &&
          h[0].get<int64_t>() >= 0 && h[0].get<int64_t>() < 1 << 20 && h[1].get<int64_t>() >= 0 &&
          h[1].get<int64_t>() < 1 << 20)
        heads.push_back({h[0].get<int>(), h[1].get<int>()});
    setCurveHeads(heads);
  }
}

}  // namespace hs::gui
