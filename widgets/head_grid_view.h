#pragma once
// A layer × head heatmap of one HeadGrid (docs/architecture.md, "The GUI").
//
// Layer runs down the y axis with layer 0 at the TOP (reading order of a network diagram), head runs
// along x. Each cell is one (layer, head); the cell of head h, layer l is centred on plot coordinates
// (h, l), so a pixel maps back to a cell by rounding its plot coordinates.
//
// Interaction: hover shows "layer L, head H: value ± se (rank r of N)" (± where the grid has standard
// errors); click selects one head; Ctrl-click toggles a head in a multi-selection; right-click opens a menu
// whose actions emit the intervention signals below with the current selection. Selected cells are outlined.
#include <QPoint>
#include <QString>
#include <QWidget>

#include <functional>
#include <optional>
#include <vector>

#include "plot_export.h"
#include "results/results.h"

class QAction;
class QCPAbstractItem;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCustomPlot;
class QMenu;
class QMouseEvent;

namespace hs {

class HeadGridView : public QWidget {
  Q_OBJECT
 public:
  // The actions of the right-click menu, in menu order.
  enum class MenuAction { ZeroAblate, MeanAblate, PatchFromClean, AddToSteering, ShowPattern, HeadCard };

  explicit HeadGridView(QWidget* parent = nullptr);
  ~HeadGridView() override;

  // Shows `grid` (replacing the previous one). Keeps the selected heads that still exist in the new
  // shape; emits selectionChanged only if that drops some.
  void setGrid(const HeadGrid& grid);
  const HeadGrid& grid() const { return grid_; }
  bool hasGrid() const { return grid_.layers() > 0 && grid_.heads() > 0; }

  // Selection, always sorted layer-major and free of duplicates. Setters emit selectionChanged when
  // the selection actually changes; heads outside the grid are ignored.
  std::vector<HeadRef> selection() const { return selection_; }
  void setSelection(std::vector<HeadRef> heads);
  void clearSelection() { setSelection({}); }
  // The k heads with the largest values (NaN never selected; ties broken layer-major). rank_stats'
  // topHeads, so the view and the analyses agree on what "top k" means.
  void selectTopK(int k);
  // The top ceil(p/100 · all heads) heads, at least one (rank_stats' topPercent); p ≤ 0 clears.
  void selectTopPercent(double percent);

  // Silent heads (all-zero W_O): hatched, and left out of ranks and top-k / top-% unless
  // setRankSilentHeads(true).
  void setSilentHeads(const std::vector<HeadRef>& heads);
  const std::vector<HeadRef>& silentHeads() const { return silent_; }
  void setRankSilentHeads(bool on);
  bool isSilent(HeadRef head) const;
  int hatchCount() const { return static_cast<int>(hatches_.size()); }

  // Rank of a head's value among the finite values of the grid: 1 = largest; equal values share the
  // best rank ("1224" ranking). nullopt for NaN or a head outside the grid.
  std::optional<int> rankOf(HeadRef head) const;
  int rankedCount() const;  // number of finite values (the N of "rank r of N")

  // Pixel ↔ cell mapping, in the coordinates of plot() (the widget that receives the mouse events;
  // QTest::mouseClick(view.plot(), Qt::LeftButton, {}, view.cellCenter({2, 5})) clicks head (2, 5)).
  std::optional<HeadRef> headAt(const QPoint& plotPixel) const;
  QPoint cellCenter(HeadRef head) const;

  // The hover text of a head: "layer L, head H: value unit (rank r of N)".
  QString tooltipText(HeadRef head) const;

  // The menu action objects (tests trigger them directly; the app may add shortcuts).
  QAction* menuAction(MenuAction which) const;
  // The head the menu was last opened on (ShowPattern uses it; falls back to the first selected head).
  std::optional<HeadRef> menuHead() const { return menuHead_; }
  void setMenuHead(std::optional<HeadRef> head) { menuHead_ = head; }

  // The title above the map: the grid's name, or `title` when that is not empty (kept across setGrid; an
  // empty string goes back to the grid's name). titleText() is the full title, before it is fitted.
  void setTitleText(const QString& title);
  QString titleText() const;

  // Off: right-clicking opens no menu, so a view of another model's grid never asks for interventions.
  void setMenuEnabled(bool on) { menuEnabled_ = on; }
  bool menuEnabled() const { return menuEnabled_; }

  // A matrix that is not layer × head (heads × checkpoints): axis titles and one tick label per column
  // (x) and per row (y), thinned to a readable number; empty lists go back to "head" / "layer" and integer
  // ticks. Kept across setGrid while the lists match the grid's shape.
  void setAxisText(const QString& xLabel, const QStringList& xTicks, const QString& yLabel,
                   const QStringList& yTicks);
  // The hover text of a cell (row, column, value) when set, instead of tooltipText's layer / head wording.
  void setCellText(std::function<QString(HeadRef cell, double value)> text) { cellText_ = std::move(text); }

  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return map_; }
  QCPColorScale* colorScale() const { return scale_; }
  // True when the grid has both signs and is drawn with the diverging gradient centred at 0.
  bool isDiverging() const { return diverging_; }

  QSize sizeHint() const override { return {520, 420}; }
  QSize minimumSizeHint() const override { return {240, 200}; }

 Q_SIGNALS:
  void selectionChanged(std::vector<hs::HeadRef> heads);
  void zeroAblate(std::vector<hs::HeadRef> heads);
  void meanAblate(std::vector<hs::HeadRef> heads);
  void patchFromClean(std::vector<hs::HeadRef> heads);
  void addToSteering(std::vector<hs::HeadRef> heads);
  void showPattern(hs::HeadRef head);
  void headCardRequested(hs::HeadRef head);  // "Head card": everything known about the head

 private:
  void onMousePress(QMouseEvent* event);
  void onMouseMove(QMouseEvent* event);
  void openMenu(const QPoint& plotPixel);
  void updateMenuEnabled();
  void redrawSelection();
  void redrawSilent();
  HeadGrid rankedGrid() const;  // the grid with silent heads as NaN (unless they are ranked)
  void applyTicks();

  HeadGrid grid_;
  std::vector<HeadRef> selection_;
  std::optional<HeadRef> menuHead_;
  bool diverging_ = false;

  QCustomPlot* plot_ = nullptr;
  QCPColorMap* map_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QCPTextElement* title_ = nullptr;
  QMenu* menu_ = nullptr;
  std::vector<QAction*> actions_;           // indexed by MenuAction
  std::vector<QCPAbstractItem*> outlines_;  // the outline items of the selected cells
  std::vector<QCPAbstractItem*> hatches_;   // the hatch items of the silent heads
  std::vector<HeadRef> silent_;
  bool rankSilent_ = false;
  bool menuEnabled_ = true;
  QString titleOverride_;
  QString xLabel_, yLabel_;
  QStringList xTicks_, yTicks_;
  std::function<QString(HeadRef, double)> cellText_;
};

}  // namespace hs

Q_DECLARE_METATYPE(hs::HeadRef)
Q_DECLARE_METATYPE(std::vector<hs::HeadRef>)
