#pragma once
// The Learning dynamics tab: one head score across a model's training checkpoints (results/
// checkpoint_series.h), e.g. the published concept-copying scores of OLMo-2 or Pythia from step 150 to the
// end of pretraining. Left: each of the top-k heads (by their value at the last checkpoint) as a line over
// the training step (log scale); right: the layer × head grid at the checkpoint the slider picks.
#include <QWidget>

#include <vector>

#include "results/checkpoint_series.h"
#include "results/results.h"

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QCustomPlot;

namespace hs {
class CurveView;
class HeadGridView;
}  // namespace hs

namespace hs::gui {

class DynamicsTab : public QWidget {
  Q_OBJECT
 public:
  explicit DynamicsTab(QWidget* parent = nullptr);

  // Finds every checkpoint series of `runs`; keeps the shown one when it still exists.
  void setRuns(const std::vector<AnalysisRun>& runs);
  // "<model> · <grid name>" of every series, in the selector's order.
  QStringList seriesLabels() const;
  bool setSeries(const QString& label);
  const CheckpointSeries* current() const;
  void setTopK(int k);
  void setCheckpoint(int index);  // the grid shown on the right

  CurveView* curveView() const { return curve_; }
  HeadGridView* gridView() const { return grid_; }
  QCustomPlot* plot() const;  // the line plot (for export)

 private:
  void showCurrent();
  void showCheckpoint();

  std::vector<CheckpointSeries> series_;
  QComboBox* selector_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QSlider* checkpoint_ = nullptr;
  QLabel* checkpointLabel_ = nullptr;
  QLabel* empty_ = nullptr;
  CurveView* curve_ = nullptr;
  HeadGridView* grid_ = nullptr;
};

}  // namespace hs::gui
