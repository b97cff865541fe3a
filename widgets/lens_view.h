#pragma once
// The logit lens as a heatmap: layers down (layer 0 at the top, as in the head grids) × the prompt's
// positions across. Each cell is coloured by one value (a probability on a fixed [0, 1] scale, or a
// difference of probabilities on a diverging scale centred at 0) and labelled with the top token after
// that layer at that position when the cell is large enough for it; hover names the layer, the position
// and its token, the top token and its probability (and the cell's detail line).
//
// Cells are centred on plot coordinates (position, layer), so a pixel maps back to a cell by rounding its
// plot coordinates. By default every position is in view at any prompt length: the cells share the view's
// width (narrow cells lose their labels, never their hover), and the position labels are thinned to those
// a line of the tick font apart. Scrolling is an opt-in (setScrolling): cells keep kMinCellWidth pixels and
// a scroll bar under the map moves the window of positions the x axis shows, so the layer axis and the
// colour bar stay in view; a new map then opens at its last positions (where the prediction is) and keeps
// them in view through resizes until the user scrolls.
#include <QPoint>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

class QCPColorMap;
class QCPColorScale;
class QCPItemText;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;
class QResizeEvent;
class QScrollBar;

namespace hs {

struct LensCell {
  QString top;       // the top token after the layer at the position
  double prob = 0;   // its probability
  double value = 0;  // what the colour shows
  QString detail;    // appended to the hover text (e.g. the clean run's top token); may be empty
};

struct LensMap {
  QStringList pieces;  // [pos] the prompt's tokens
  int layers = 0;
  std::vector<LensCell> cells;  // [layer * pieces.size() + pos]
  QString title;
  QString valueLabel;       // the colour bar's label, e.g. "p(top token)"
  bool difference = false;  // values are differences: diverging map, symmetric range around 0
  int positions() const { return static_cast<int>(pieces.size()); }
};

class LensView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMinCellWidth = 34;

  explicit LensView(QWidget* parent = nullptr);

  // Shows `map`, replacing the previous one (a map whose cells do not match its shape shows nothing).
  void setMap(const LensMap& map);
  const LensMap& map() const { return map_; }
  // The value the colour of cell (layer, pos) shows (NaN outside the map).
  double value(int layer, int pos) const;

  // "after layer L · position p 'piece' · top token 'x' · probability 0.412" (+ " · " + detail), or ""
  // when the pixel (in plot() coordinates) is on no cell.
  QString hoverText(const QPoint& plotPixel) const;
  QPoint cellCenter(int layer, int pos) const;
  // Cells whose top-token label is shown (those large enough for it, after the last layout).
  int visibleLabels() const;

  // Off (the default): every position in view. On: cells of kMinCellWidth pixels that scroll sideways.
  void setScrolling(bool on);
  bool scrolling() const { return scrolling_; }
  // The window of positions in view: [firstPosition(), firstPosition() + visiblePositions()) (all of them
  // unless scrolling).
  int firstPosition() const;
  int visiblePositions() const;
  // Brings `first` to the left edge (clamped to the positions there are), as the scroll bar does.
  void scrollToPosition(int first);
  // Positions whose label the x axis shows: every labelStep()-th, so labels are a line apart.
  int labelStep() const { return labelStep_; }
  QScrollBar* scrollBar() const { return scroll_; }

  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return colorMap_; }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 private:
  void resizeEvent(QResizeEvent* event) override;
  void onMouseMove(QMouseEvent* event);
  void updateWindow();  // fits the window of positions to the width, sets the x range and the scroll bar
  void updateLabels();  // shows the labels that fit their cells, thins the position labels to the width
  void setPositionTicks(int step);

  LensMap map_;
  QCustomPlot* plot_ = nullptr;
  QCPColorMap* colorMap_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QCPTextElement* title_ = nullptr;
  std::vector<QCPItemText*> labels_;  // [layer * positions + pos]
  QScrollBar* scroll_ = nullptr;      // value = the first position in view
  bool followEnd_ = true;             // keep the last position in view (until the user scrolls)
  bool scrolling_ = false;
  int labelStep_ = 1;
};

}  // namespace hs
