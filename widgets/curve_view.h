#pragma once
// A line plot of one Curve: every series over the shared x axis, with axis labels and a legend below the
// axis rect, where it covers no data (accuracy vs layer, logit difference vs layer, ablation curves over k,
// training loss, ...).
#include <QWidget>

#include "results/results.h"

class QCustomPlot;
class QCPTextElement;

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
  QSize sizeHint() const override { return {520, 360}; }

 private:
  void rebuild();
  void wrapLegend();  // as many legend columns as the plot's width holds

  Curve curve_;
  int markers_ = -1;  // -1 automatic, 0 off, 1 on
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* title_ = nullptr;
};

}  // namespace hs
