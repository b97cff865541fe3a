#pragma once
// A line plot of one Curve: every series over the shared x axis, with axis labels and a legend below the
// axis rect, where it covers no data (accuracy vs layer, logit difference vs layer, ablation curves over k,
// training loss, ...). A series with a 95 % interval (Curve::intervals) gets a translucent band of its
// colour between the interval's bounds, under the lines; hovering shows each series' value at the nearest
// x with its interval.
#include <QWidget>

#include "results/results.h"

class QCustomPlot;
class QCPGraph;
class QCPTextElement;
class QMouseEvent;

namespace hs {

class CurveView : public QWidget {
  Q_OBJECT
 public:
  explicit CurveView(QWidget* parent = nullptr);

  // Shows `curve`, replacing the previous one. NaN y values leave gaps. Series longer or shorter
  // than x are drawn over their common prefix.
  void setCurve(const Curve& curve);
  const Curve& curve() const { return curve_; }

  // Markers on every point (default: on when a series has at most 40 points).
  void setMarkersAuto();
  void setMarkers(bool on);

  QCustomPlot* plot() const { return plot_; }
  // The band graphs, one per series with an interval (the upper bound, filled down to its lower-bound
  // graph); the series' own graphs are graph(0) … graph(series − 1), the bands come after them.
  const std::vector<QCPGraph*>& bands() const { return bands_; }
  // The hover text at a pixel of the plot: the x nearest to it and every series' value there, with
  // "(95 %: lo – hi)" where the series has an interval; empty outside the axis rect or without points.
  QString hoverText(const QPoint& plotPixel) const;
  QSize sizeHint() const override { return {520, 360}; }

 private:
  void rebuild();
  void addBands(int rightSeries);  // the interval bands of rebuild()
  void onMouseMove(QMouseEvent* event);
  void wrapLegend();  // as many legend columns as the plot's width holds

  Curve curve_;
  int markers_ = -1;  // -1 automatic, 0 off, 1 on
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* title_ = nullptr;
  std::vector<QCPGraph*> bands_;
};

}  // namespace hs
