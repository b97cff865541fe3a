#include "curve_view.h"

#include <QMouseEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "qcustomplot_include.h"

#include "plot_style.h"

namespace hs {

CurveView::CurveView(QWidget* parent) : QWidget(parent) {
  plot_ = plotstyle::addPlot(*this);
  title_ = plotstyle::addTitle(*plot_);
  // The legend sits below the axis rect, outside the data: inside it, it covered curves wherever it went
  // (several series span the whole plot). Its items run across in as many columns as the width allows.
  plot_->legend->setVisible(true);
  plot_->legend->setFont(plotstyle::tickFont());
  plot_->legend->setBrush(Qt::NoBrush);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->addElement(2, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(2, 0.001);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setMargins(QMargins(4, 0, 4, 2));
  connect(plot_, &QCustomPlot::beforeReplot, this, &CurveView::wrapLegend);
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    axis->grid()->setPen(QPen(QColor(225, 225, 225)));
  connect(plot_, &QCustomPlot::mouseMove, this, &CurveView::onMouseMove);
}

namespace {

// Titles longer than a panel is wide break once: after a colon, else at the space nearest the middle.
QString wrapTitle(const QString& t) {
  constexpr int kMaxLine = 60;
  if (t.size() <= kMaxLine || t.contains('\n')) return t;
  int cut = t.indexOf(": ");
  if (cut > 0 && cut < t.size() - 2) return t.left(cut + 1) + "\n" + t.mid(cut + 2);
  cut = -1;
  for (int i = 0; i < t.size(); ++i)
    if (t[i] == ' ' && (cut < 0 || std::abs(i - t.size() / 2) < std::abs(cut - t.size() / 2))) cut = i;
  return cut < 0 ? t : t.left(cut) + "\n" + t.mid(cut + 1);
}

// The index of a series whose largest |y| is over ten times that of every other series, or -1.
int dominantSeries(const Curve& c) {
  if (c.series.size() < 2) return -1;
  std::vector<double> peak;
  for (const auto& [label, ys] : c.series) {
    double m = 0;
    for (double y : ys)
      if (std::isfinite(y)) m = std::max(m, std::abs(y));
    peak.push_back(m);
  }
  const auto top = std::max_element(peak.begin(), peak.end());
  for (auto it = peak.begin(); it != peak.end(); ++it)
    if (it != top && !(*it > 0 && *top > 10 * *it)) return -1;
  return static_cast<int>(top - peak.begin());
}

}  // namespace

void CurveView::wrapLegend() {
  QCPLegend& legend = *plot_->legend;
  plotstyle::wrapLegendToRoom(legend, QCPLayoutGrid::foColumnsFirst,
                              plot_->width() - legend.margins().left() - legend.margins().right());
}

void CurveView::setCurve(const Curve& curve) {
  curve_ = curve;
  rebuild();
}

void CurveView::setMarkersAuto() {
  markers_ = -1;
  rebuild();
}

void CurveView::setMarkers(bool on) {
  markers_ = on ? 1 : 0;
  rebuild();
}

void CurveView::rebuild() {
  plot_->clearGraphs();
  bands_.clear();
  title_->setText(wrapTitle(QString::fromStdString(curve_.name.empty() ? curve_.id : curve_.name)));
  plot_->xAxis->setLabel(QString::fromStdString(curve_.x_label));
  plot_->yAxis->setLabel(QString::fromStdString(curve_.y_label));

  bool integerX = !curve_.x.empty();
  for (double x : curve_.x)
    integerX = integerX && std::isfinite(x) && x == std::round(x);

  // A series ten times larger than all others gets the right axis, so the others stay readable (LTV's
  // stretch beside cos(θ, Qθ)).
  const int right = dominantSeries(curve_);
  plot_->yAxis2->setVisible(right >= 0);
  if (right >= 0)
    plot_->yAxis2->setLabel(QString::fromStdString(curve_.series[static_cast<size_t>(right)].first) +
                            " (right axis)");

  for (size_t s = 0; s < curve_.series.size(); ++s) {
    const auto& [label, ys] = curve_.series[s];
    const size_t n = std::min(ys.size(), curve_.x.size());
    QVector<double> x(static_cast<int>(n)), y(static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) {
      x[static_cast<int>(i)] = curve_.x[i];
      y[static_cast<int>(i)] = ys[i];
    }
    const bool onRight = static_cast<int>(s) == right;
    QCPGraph* graph = plot_->addGraph(plot_->xAxis, onRight ? plot_->yAxis2 : plot_->yAxis);
    graph->setName(QString::fromStdString(label) + (onRight ? " (right)" : ""));
    const QColor color = plotstyle::seriesColor(static_cast<int>(s));
    graph->setPen(QPen(color, 2.0));
    const bool markers = markers_ == 1 || (markers_ == -1 && n <= 40);
    if (markers) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 6));
    graph->setData(x, y);
  }
  addBands(right);
  plot_->legend->setVisible(curve_.series.size() > 0);

  plot_->rescaleAxes();
  // A little air so that markers at the extremes are not cut by the frame.
  const QCPRange xr = plot_->xAxis->range();
  plotstyle::padAxisRange(*plot_->xAxis, 0.03);
  for (QCPAxis* axis : {plot_->yAxis, plot_->yAxis2})
    plotstyle::padAxisRange(*axis, 0.06);
  if (integerX) {
    const int span = static_cast<int>(std::ceil(xr.size())) + 1;
    plot_->xAxis->setTicker(plotstyle::integerTicker(span, 12));
  } else {
    plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  }
  plot_->xAxis->setSubTicks(!integerX);
  plotstyle::replotIfSized(*plot_);
}

void CurveView::addBands(int rightSeries) {
  for (size_t s = 0; s < curve_.series.size(); ++s) {
    const SeriesInterval* iv = curve_.intervalOf(curve_.series[s].first);
    if (!iv) continue;
    const size_t n = std::min({iv->lo.size(), iv->hi.size(), curve_.x.size()});
    QVector<double> x(static_cast<int>(n)), lo(static_cast<int>(n)), hi(static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) {
      x[static_cast<int>(i)] = curve_.x[i];
      lo[static_cast<int>(i)] = iv->lo[i];
      hi[static_cast<int>(i)] = iv->hi[i];
    }
    QCPAxis* y = static_cast<int>(s) == rightSeries ? plot_->yAxis2 : plot_->yAxis;
    QColor color = plotstyle::seriesColor(static_cast<int>(s));
    QCPGraph* low = plot_->addGraph(plot_->xAxis, y);
    QCPGraph* high = plot_->addGraph(plot_->xAxis, y);
    for (QCPGraph* g : {low, high}) {
      g->setLayer("grid");  // under the lines and markers
      g->removeFromLegend();
      g->setSelectable(QCP::stNone);
      color.setAlpha(110);
      g->setPen(QPen(color, 1.0, Qt::DotLine));
    }
    low->setData(x, lo);
    high->setData(x, hi);
    color.setAlpha(45);
    high->setBrush(color);
    high->setChannelFillGraph(low);
    high->setName(QString::fromStdString(curve_.series[s].first) + " (95 % interval)");
    bands_.push_back(high);
  }
}

QString CurveView::hoverText(const QPoint& pixel) const {
  if (curve_.x.empty() || !plot_->axisRect()->rect().contains(pixel)) return QString();
  const double key = plot_->xAxis->pixelToCoord(pixel.x());
  size_t best = 0;
  for (size_t i = 1; i < curve_.x.size(); ++i)
    if (std::abs(curve_.x[i] - key) < std::abs(curve_.x[best] - key)) best = i;
  QString text = QString::fromStdString(curve_.x_label.empty() ? "x" : curve_.x_label) + " = " +
                 QString::number(curve_.x[best], 'g', 6);
  for (const auto& [label, ys] : curve_.series) {
    if (best >= ys.size()) continue;
    text += "\n" + QString::fromStdString(label) + ": " +
            (std::isfinite(ys[best]) ? QString::number(ys[best], 'g', 4) : QStringLiteral("no value"));
    const SeriesInterval* iv = curve_.intervalOf(label);
    if (iv && best < iv->lo.size() && best < iv->hi.size() && std::isfinite(iv->lo[best]) &&
        std::isfinite(iv->hi[best]))
      text += QStringLiteral(" (95 %: %1 – %2)").arg(iv->lo[best], 0, 'g', 4).arg(iv->hi[best], 0, 'g', 4);
  }
  return text;
}

void CurveView::onMouseMove(QMouseEvent* event) {
  const QString text = hoverText(event->position().toPoint());
  plot_->setToolTip(text);
  if (text.isEmpty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
  }
}

}  // namespace hs
