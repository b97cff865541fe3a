#pragma once
// A tab of named result panels that fill themselves from the session's runs by stable result id, as the
// methods' records place them (OutputSpec::panel): the Geometry tab (alignment / logit-difference curves,
// the 2-D projection coloured by gold label, LTV rotation vs stretch) and the Task-vectors tab (SITE α
// heatmap, accuracy vs layer, training loss). A panel whose result no run has yet says which analysis fills
// it.
#include <QString>
#include <QWidget>

#include <vector>

#include "results/results.h"

class QCustomPlot;
class QLabel;
class QStackedWidget;
class QTimer;

namespace hs {
class CurveView;
class HeadGridView;
}  // namespace hs

namespace hs::gui {

class ElidedLabel;

// A 2-D scatter of a Table with numeric columns "x", "y" and a "label" column (the gold label), one
// colour per label.
class ProjectionView : public QWidget {
  Q_OBJECT
 public:
  explicit ProjectionView(QWidget* parent = nullptr);
  // False (and nothing drawn) when the table lacks x / y columns.
  bool setTable(const Table& t);
  QCustomPlot* plot() const { return plot_; }

 private:
  QCustomPlot* plot_ = nullptr;
};

class ResultsTab : public QWidget {
  Q_OBJECT
 public:
  enum class Kind { Curve, Grid, Projection };
  struct Panel {
    std::string id;  // e.g. "tsla.alignment"
    Kind kind;
    QString title;        // shown above the panel
    QString placeholder;  // e.g. "Run Geometry to fill this"
  };
  explicit ResultsTab(std::vector<Panel> panels, int columns = 2, QWidget* parent = nullptr);

  // Fills every panel from the LAST run that holds its id (grids, curves or tables).
  void setRuns(const std::vector<AnalysisRun>& runs);
  bool isFilled(int panel) const;
  int panelIndex(const std::string& id) const;  // -1 when no panel shows that result
  // A training curve while its job runs: points (curve id, step, value) go to the curve panel `panelId`,
  // drawn at most every 150 ms, until the run's own results arrive through setRuns. A new curve id, or a
  // step that does not grow, starts the live curve afresh (the next LTV layer, the next SITE run).
  void addLivePoint(const std::string& panelId, const QString& curve, int step, double value);
  const Curve& liveCurve() const { return live_; }
  int panelCount() const { return static_cast<int>(panels_.size()); }
  // The plot of a panel (nullptr while it shows its placeholder); the first filled one for export.
  QCustomPlot* plotOf(int panel) const;
  QCustomPlot* currentPlot() const;

 private:
  struct Slot {
    Panel panel;
    QStackedWidget* stack = nullptr;
    QLabel* placeholder = nullptr;
    ElidedLabel* title = nullptr;  // bold panel title, then (grey) where the shown result comes from
    CurveView* curve = nullptr;
    HeadGridView* grid = nullptr;
    ProjectionView* projection = nullptr;
    bool filled = false;
  };
  static void setTitle(Slot& s, const QString& source);
  void drawLive();
  std::vector<Slot> panels_;
  Curve live_;
  std::string livePanel_;
  QTimer* liveTimer_ = nullptr;
  int focused_ = -1;  // the panel last clicked (export target)
};

// A tab of the panels the methods' records place on it (OutputSpec::panel, registry.h), in the registry's
// order: "Geometry" and "Task vectors".
ResultsTab* makePanelTab(const std::string& tab);
ResultsTab* makeGeometryTab();
ResultsTab* makeTaskVectorsTab();

}  // namespace hs::gui
