#pragma once
// The Dynamics tab: learning dynamics of one checkpoint series (results/checkpoint_series.h: one grid of
// one model across its training checkpoints, e.g. the published OLMo-2 concept-copying scores). A series
// picker; a heads × checkpoints heatmap whose rows are the top-k heads at the last checkpoint (or all
// heads), best first, and whose columns are the training steps in order; and the selected heads' scores
// across steps as curves on a log-step axis. Clicking a row adds its head's curve (clicking it again
// removes it). The series come from every open run, whatever model is loaded.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include <vector>

#include "results/checkpoint_series.h"
#include "results/results.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QStackedWidget;

namespace hs {
class CurveView;
class HeadGridView;
}  // namespace hs

namespace hs::gui {

class DynamicsTab : public QWidget {
  Q_OBJECT
 public:
  explicit DynamicsTab(QWidget* parent = nullptr);

  // Finds the series of `runs`; keeps the shown series (and its curves) when it still exists.
  void setRuns(const std::vector<AnalysisRun>& runs);

  // Series, by key "<model>/<grid id>".
  QStringList seriesKeys() const;
  QString currentSeriesKey() const;
  bool setCurrentSeries(const QString& key);
  const CheckpointSeries* currentSeries() const;

  // Rows: the top k heads at the last checkpoint (0: all heads), best first.
  void setTopK(int k);
  int topK() const;
  const std::vector<HeadRef>& rowHeads() const { return rows_; }

  // The heads whose curves are drawn, in the order they were added.
  const std::vector<HeadRef>& curveHeads() const { return curves_; }
  void setCurveHeads(const std::vector<HeadRef>& heads);
  void toggleCurve(HeadRef head);

  // View state: series, top k, curve heads.
  nlohmann::json viewState() const;
  void restoreViewState(const nlohmann::json& j);

  HeadGridView* heatmap() const { return heatmap_; }
  CurveView* curveView() const { return curveView_; }
  bool hasSeries() const { return !series_.empty(); }

 Q_SIGNALS:
  void changed();  // the user changed the series, the rows or the curves

 private:
  void showSeries();
  void showCurves();
  void syncSelection();  // outline the rows whose head has a curve

  std::vector<CheckpointSeries> series_;
  std::vector<HeadRef> rows_;    // [rows] the head of each heatmap row
  std::vector<HeadRef> curves_;  // heads with a curve
  bool syncing_ = false;
  QComboBox* picker_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* placeholder_ = nullptr;
  HeadGridView* heatmap_ = nullptr;
  CurveView* curveView_ = nullptr;
};

}  // namespace hs::gui
