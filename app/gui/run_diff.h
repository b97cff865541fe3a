#pragma once
// Run diff (issue 40): two runs of the session side by side. Their options (every option of the run's
// record, the task's fields, the model and seed) in one table with the differing ones highlighted; the
// difference A − B of a grid both hold, as a heatmap; and a curve both hold, both drawn and A − B.
// Opened from the Runs dock's context menu ("Compare with…") or View → Compare runs….
#include <QDialog>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "results/results.h"

class QComboBox;
class QLabel;
class QTableWidget;
class QTabWidget;

namespace hs {
class CurveView;
class HeadGridView;
}  // namespace hs

namespace hs::gui {

// A − B cell by cell (same shape; throws naming both ids otherwise); NaN where either is NaN.
HeadGrid gridDifference(const HeadGrid& a, const HeadGrid& b);
// Series of both curves renamed "A: s" and "B: s", on the union of their x values (NaN where one has none).
Curve curveOverlay(const Curve& a, const Curve& b);
// For each series both curves hold, "A − B: s" at the x values both have.
Curve curveDifference(const Curve& a, const Curve& b);
// The options of a run flattened to "key" / "task.key" → value text, after "method", "model" and (when no
// option is named so) the provenance's "seed".
std::vector<std::pair<QString, QString>> flatOptions(const AnalysisRun& run);

class RunDiffView : public QWidget {
  Q_OBJECT
 public:
  explicit RunDiffView(QWidget* parent = nullptr);

  void setRuns(const std::vector<AnalysisRun>& runs);
  // The loaded model's silent heads (W_O all zero) and its runs: A − B hatches those heads when both runs
  // are the model's.
  void setSilentHeads(const std::vector<HeadRef>& silent, const QStringList& modelRuns);
  // Picks the two runs by id (false when either is not in the session).
  bool setPair(const QString& runA, const QString& runB);
  QString runA() const;
  QString runB() const;

  // The grid and curve ids both runs hold (same id; grids also the same shape).
  QStringList commonGrids() const;
  QStringList commonCurves() const;
  bool setGrid(const QString& id);
  bool setCurve(const QString& id);
  QString currentGrid() const;
  QString currentCurve() const;
  // What is shown: A − B of the current grid, the overlay and the difference of the current curve.
  const HeadGrid& difference() const { return difference_; }
  const Curve& overlay() const { return overlay_; }
  const Curve& curveDiff() const { return curveDiff_; }
  // The option keys whose values differ between the two runs.
  QStringList differingOptions() const;

  QTableWidget* optionsTable() const { return options_; }
  HeadGridView* differenceView() const { return diffView_; }
  CurveView* overlayView() const { return overlayView_; }
  CurveView* curveDiffView() const { return curveDiffView_; }
  QTabWidget* resultTabs() const { return resultTabs_; }

 private:
  const AnalysisRun* find(const QString& id) const;
  void pairChanged();
  void showGrid();
  void showCurve();

  std::vector<AnalysisRun> runs_;
  std::vector<HeadRef> silent_;
  QStringList modelRuns_;  // the runs silent_ belongs to
  HeadGrid difference_;
  Curve overlay_, curveDiff_;
  QComboBox* a_ = nullptr;
  QComboBox* b_ = nullptr;
  QLabel* optionsNote_ = nullptr;  // how many options differ, and which
  QTableWidget* options_ = nullptr;
  QTabWidget* resultTabs_ = nullptr;
  QComboBox* grid_ = nullptr;
  QLabel* gridNote_ = nullptr;
  HeadGridView* diffView_ = nullptr;
  QComboBox* curve_ = nullptr;
  QLabel* curveNote_ = nullptr;
  CurveView* overlayView_ = nullptr;
  CurveView* curveDiffView_ = nullptr;
};

// The view in a window of its own (not modal).
class RunDiffDialog : public QDialog {
  Q_OBJECT
 public:
  explicit RunDiffDialog(QWidget* parent = nullptr);
  RunDiffView* view() const { return view_; }

 private:
  RunDiffView* view_ = nullptr;
};

}  // namespace hs::gui
