#pragma once
// The Heads tab: a metric selector over the grids of the loaded model's runs, the layer × head heatmap,
// "select top k / top %", and "compare with" any grid of any open run (published runs and other models'
// runs included), in one of two modes: a scatter of the shown metric against the other with Spearman ρ,
// Kendall τ-b and Jaccard@k (equal shapes only; otherwise one line says why), or the other grid as a second
// heatmap beside the first (any shapes, each with its own colour scale, titles naming grid, model and run).
#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include <vector>

#include "results/results.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QSplitter;
class QStackedWidget;

namespace hs {
class HeadGridView;
class ScatterCompare;
}  // namespace hs

namespace hs::gui {

class HeadsTab : public QWidget {
  Q_OBJECT
 public:
  enum class CompareMode { Scatter, SideBySide };

  explicit HeadsTab(QWidget* parent = nullptr);

  // Lists every grid of `runs` as "<grid name> · <run label>" (run_label.h) with the key
  // "<run id>/<grid id>" in both pickers, then those of `otherRuns` (runs of other models: published
  // results, closed models), marked "[other model]". Keeps the shown and the compared metric when they still
  // exist (else shows the first grid of the last run). Another model's grid, shown as the metric, has no
  // intervention menu, no silent heads, and its selection is not the loaded model's (showsLoadedModel).
  void setRuns(const std::vector<AnalysisRun>& runs, const std::vector<AnalysisRun>& otherRuns = {});
  // The loaded model's silent heads: hatched in the heatmap, left out of its ranks and top-k.
  void setSilentHeads(const std::vector<HeadRef>& heads);
  QString currentMetric() const;  // key, "" when none
  // False while the shown metric is a grid of another model than the loaded one.
  bool showsLoadedModel() const { return !otherKeys_.contains(currentMetric()); }
  bool setCurrentMetric(const QString& key);
  QStringList metricKeys() const;   // the metric picker's keys
  QStringList compareKeys() const;  // the "compare with" picker's keys (every open run's grids)
  const HeadGrid* gridOf(const QString& key) const;
  // "<grid name>\n<model> · <run id>": the title of a grid in side-by-side mode.
  QString gridTitle(const QString& key) const;

  // Compare: on/off, the second metric and the mode.
  void setCompare(bool on, const QString& otherKey = {});
  bool comparing() const;
  QString compareMetric() const;
  void setCompareMode(CompareMode mode);
  CompareMode compareMode() const;
  // The one line shown instead of the scatter when the two grids differ in shape ("" otherwise).
  QString compareMessage() const;
  bool compareMessageShown() const;

  // View state: shown metric, compare metric and mode, top-k settings, colour range.
  nlohmann::json viewState() const;
  void restoreViewState(const nlohmann::json& j);

  HeadGridView* view() const { return view_; }
  QComboBox* metricBox() const { return metric_; }
  ScatterCompare* scatter() const { return scatter_; }
  HeadGridView* secondView() const { return secondView_; }  // the compared grid in side-by-side mode
  QSpinBox* topKBox() const { return topK_; }
  QSpinBox* jaccardKBox() const { return jaccardK_; }  // k of Jaccard@k (0: 5 % of the heads)

 Q_SIGNALS:
  void metricChanged(const QString& key);
  void glossaryRequested(const QString& metricKey);  // the "?" beside the metric selector

 private:
  void showCurrent();
  void updateCompare();

  std::vector<std::pair<QString, HeadGrid>> grids_;  // (key, grid), every run's
  QMap<QString, QString> titles_;                    // key -> gridTitle
  QComboBox* metric_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topPct_ = nullptr;
  QCheckBox* compare_ = nullptr;
  QComboBox* other_ = nullptr;
  QComboBox* mode_ = nullptr;
  QSpinBox* jaccardK_ = nullptr;
  QLabel* summary_ = nullptr;
  QMap<QString, QStringList> summaries_;  // run id -> "key value" of its numeric summary entries
  QSplitter* split_ = nullptr;
  HeadGridView* view_ = nullptr;
  QStackedWidget* side_ = nullptr;  // beside the heatmap: the scatter, the shape message or the second map
  ScatterCompare* scatter_ = nullptr;
  QLabel* message_ = nullptr;
  HeadGridView* secondView_ = nullptr;
  CompareMode shownMode_ = CompareMode::Scatter;  // the mode the splitter sizes were last set for
  std::vector<HeadRef> silent_;
  QStringList otherKeys_;     // keys of other models' grids
  bool otherChosen_ = false;  // the shown metric is another model's grid because the user chose it
};

}  // namespace hs::gui
