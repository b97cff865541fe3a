#include "curve_view.h"

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "qcustomplot_include.h"

#include "plot_style.h"

namespace hs {

CurveView::CurveView(QWidget* parent) : QWidget(parent) {
  plot_ = new QCustomPlot(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plotstyle::applyBaseStyle(*plot_);
  plot_->plotLayout()->insertRow(0);
  title_ = new QCPTextElement(plot_, QString(), plotstyle::titleFont());
  plot_->plotLayout()->addElement(0, 0, title_);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(plotstyle::tickFont());
  plot_->legend->setBrush(QColor(255, 255, 255, 220));
  plot_->legend->setBorderPen(QPen(QColor(180, 180, 180)));
  plotstyle::keepLegendInEmptiestCorner(*plot_);
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    axis->grid()->setPen(QPen(QColor(225, 225, 225)));
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
  title_->setText(QString::fromStdString(curve_.name.empty() ? curve_.id : curve_.name));
  plot_->xAxis->setLabel(QString::fromStdString(curve_.x_label));
  plot_->yAxis->setLabel(QString::fromStdString(curve_.y_label));

  bool integerX = !curve_.x.empty();
  for (double x : curve_.x)
    integerX = integerX && std::isfinite(x) && x == std::round(x);

  for (size_t s = 0; s < curve_.series.size(); ++s) {
    const auto& [label, ys] = curve_.series[s];
    const size_t n = std::min(ys.size(), curve_.x.size());
    QVector<double> x(static_cast<int>(n)), y(static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) {
      x[static_cast<int>(i)] = curve_.x[i];
      y[static_cast<int>(i)] = ys[i];
    }
    QCPGraph* graph = plot_->addGraph();
    graph->setName(QString::fromStdString(label));
    const QColor color = plotstyle::seriesColor(static_cast<int>(s));
    graph->setPen(QPen(color, 2.0));
    const bool markers = markers_ == 1 || (markers_ == -1 && n <= 40);
    if (markers) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 6));
    graph->setData(x, y);
  }
  plot_->legend->setVisible(curve_.series.size() > 0);

  plot_->rescaleAxes();
  // A little air so that markers at the extremes are not cut by the frame.
  const QCPRange xr = plot_->xAxis->range();
  const QCPRange yr = plot_->yAxis->range();
  const double xpad = xr.size() > 0 ? xr.size() * 0.03 : 0.5;
  const double ypad = yr.size() > 0 ? yr.size() * 0.06 : std::max(std::abs(yr.center()) * 0.1, 0.5);
  plot_->xAxis->setRange(xr.lower - xpad, xr.upper + xpad);
  plot_->yAxis->setRange(yr.lower - ypad, yr.upper + ypad);
  if (integerX) {
    const int span = static_cast<int>(std::ceil(xr.size())) + 1;
    plot_->xAxis->setTicker(plotstyle::integerTicker(span, 12));
  } else {
    plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  }
  plot_->xAxis->setSubTicks(!integerX);
  plot_->replot();
}

}  // namespace hs
