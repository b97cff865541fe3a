#pragma once
// The Heads tab: a metric selector over every grid of every run in the session, the layer × head heatmap,
// "select top k / top %", and "compare with": a scatter of the shown metric against a second one with
// Spearman ρ, Kendall τ-b and Jaccard@k.
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

namespace hs {
class HeadGridView;
class ScatterCompare;
}  // namespace hs

namespace hs::gui {

class HeadsTab : public QWidget {
  Q_OBJECT
 public:
  explicit HeadsTab(QWidget* parent = nullptr);

  // Lists every grid of `runs` as "<run id> · <grid name>" with the key "<run id>/<grid id>". Keeps the
  // shown metric when it still exists (else shows the first grid of the last run).
  void setRuns(const std::vector<AnalysisRun>& runs);
  // The loaded model's silent heads: hatched in the heatmap, left out of its ranks and top-k.
  void setSilentHeads(const std::vector<HeadRef>& heads);
  QString currentMetric() const;  // key, "" when none
  bool setCurrentMetric(const QString& key);
  QStringList metricKeys() const;
  const HeadGrid* gridOf(const QString& key) const;

  // Compare: on/off and the second metric.
  void setCompare(bool on, const QString& otherKey = {});
  bool comparing() const;
  QString compareMetric() const;

  // View state: shown metric, compare metric, top-k settings, colour range.
  nlohmann::json viewState() const;
  void restoreViewState(const nlohmann::json& j);

  HeadGridView* view() const { return view_; }
  ScatterCompare* scatter() const { return scatter_; }
  QSpinBox* topKBox() const { return topK_; }

 Q_SIGNALS:
  void metricChanged(const QString& key);
  void glossaryRequested(const QString& metricKey);  // the "?" beside the metric selector

 private:
  void showCurrent();
  void updateCompare();

  std::vector<std::pair<QString, HeadGrid>> grids_;  // (key, grid)
  QComboBox* metric_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topPct_ = nullptr;
  QCheckBox* compare_ = nullptr;
  QComboBox* other_ = nullptr;
  QSpinBox* jaccardK_ = nullptr;
  QLabel* summary_ = nullptr;
  QMap<QString, QStringList> summaries_;  // run id -> "key value" of its numeric summary entries
  QSplitter* split_ = nullptr;
  HeadGridView* view_ = nullptr;
  ScatterCompare* scatter_ = nullptr;
};

}  // namespace hs::gui
