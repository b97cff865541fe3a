#pragma once
// "Compare metrics": one point per head at (value in grid A, value in grid B), with the rank agreement
// of the two metrics in the title: Spearman ρ, Kendall τ-b and Jaccard@k of the two top-k head sets
// (core/results/rank_stats). Points are coloured by top-k membership: in both, only A, only B, neither.
#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

#include "results/results.h"

class QCustomPlot;
class QCPTextElement;
class QMouseEvent;

namespace hs {

class ScatterCompare : public QWidget {
  Q_OBJECT
 public:
  explicit ScatterCompare(QWidget* parent = nullptr);

  // Shows grids a (x) and b (y). They must have the same shape; otherwise the plot is emptied, the
  // title says why and hasData() is false. k ≤ 0 picks 5 % of the heads (at least one).
  void setGrids(const HeadGrid& a, const HeadGrid& b, int k = 0);
  void setK(int k);
  bool hasData() const { return hasData_; }

  // The statistics shown in the title (NaN when undefined, e.g. a constant grid).
  double spearman() const { return spearman_; }
  double kendall() const { return kendall_; }
  double jaccardAtK() const { return jaccard_; }
  int k() const { return kEffective_; }
  QString statsText() const;

  // The head drawn nearest to a pixel of plot(), within `radius` pixels.
  std::optional<HeadRef> headNear(const QPoint& plotPixel, double radius = 8.0) const;
  QPoint pointCenter(HeadRef head) const;

  QCustomPlot* plot() const { return plot_; }
  QSize sizeHint() const override { return {480, 440}; }

 private:
  void rebuild();
  // Before each replot: the legend in two columns when they fit the plot's width (else one), and the axis
  // labels elided to their axes' lengths, so nothing is cut at the panel's edge.
  void fitToWidth();
  void onMouseMove(QMouseEvent* event);

  HeadGrid a_, b_;
  int kRequested_ = 0, kEffective_ = 0;
  bool hasData_ = false;
  double spearman_ = 0, kendall_ = 0, jaccard_ = 0;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* title_ = nullptr;
  QCPTextElement* stats_ = nullptr;
};

}  // namespace hs
