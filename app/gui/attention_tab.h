#pragma once
// The Attention tab, after CircuitsVis: the attention pattern of up to four heads side by side on one
// prompt, drawn as crisp cells (one per query × key, no smoothing); hovering a cell shows the query token,
// the key token and the weight. A picker chooses the prompt: the Prompt tab's text or any of the task's
// ICL prompts. Below the maps, a token strip (hs::TokenStrip) shows the same prompt as wrapped chips: the
// chosen query position's attention for every shown head, at any prompt length without scrolling sideways.
// The query is chosen by clicking a chip or a heatmap cell (its row); the maps outline the query's row.
// Until a query is chosen it is the last position (where the prediction is).
#include <QSharedPointer>
#include <QWidget>

#include <vector>

#include "gui_types.h"

class QComboBox;
class QCPAxisTickerText;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QResizeEvent;
class QScrollArea;
class QSplitter;

namespace hs {
class TokenStrip;
}

namespace hs::gui {

class AttentionTab : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxHeads = 4;
  static constexpr double kMaxStripShare = 0.35;
  static constexpr int kMinMapsHeight = 320;  // below this the strip starts collapsed (e.g. the head card)

  explicit AttentionTab(QWidget* parent = nullptr);

  // The heads shown, side by side in this order (at most kMaxHeads); patterns of other heads are ignored.
  void setHeads(const std::vector<HeadRef>& heads);
  const std::vector<HeadRef>& heads() const { return heads_; }
  // A head's pattern arrived (for the current prompt).
  void setPattern(const PatternView& view);
  // The task's ICL prompts for the picker (keeps the choice when the same prompt is still there).
  void setTaskPrompts(const QStringList& prompts);
  // "" when the picker says "the Prompt tab's text", else the chosen task prompt.
  QString chosenPrompt() const;
  void choosePrompt(int taskPromptIndex);  // -1: the Prompt tab's text
  // Chooses the task prompt with this text ("": the Prompt tab's text), now or, when the picker does not
  // hold it yet (a session restored before the task's prompts arrive), when setTaskPrompts brings it.
  void choosePromptText(const QString& text);

  QCustomPlot* plot() const { return plot_; }
  int shownCount() const { return static_cast<int>(patterns_.size()); }
  const PatternView* patternOf(HeadRef head) const;
  // The cell under a pixel of plot(): "query 'x' (3) → key 'y' (1): 0.412"; "" outside every map.
  QString hoverText(const QPoint& plotPixel) const;
  // The pixel at the centre of cell (q, k) of the i-th shown head (tests hover there).
  QPoint cellCenter(int panel, int q, int k) const;
  bool smoothed() const;  // true if any map interpolates between cells
  // The shown cell under a pixel of plot(): its panel, query and key; false outside every map.
  bool cellAt(const QPoint& plotPixel, int* panel, int* q, int* k) const;

  // The query ("from") position the strip shows and the maps outline: -1 for none; the last position until
  // one is chosen. A position beyond the shown prompt is kept and shown as its last position.
  int queryPosition() const;
  void setQueryPosition(int position);
  bool queryChosen() const { return !followLast_; }  // false while the query follows the last position
  hs::TokenStrip* tokenStrip() const { return strip_; }
  QSplitter* splitter() const { return split_; }

 Q_SIGNALS:
  void promptChanged();             // the picker changed: patterns must be requested again
  void queryChanged(int position);  // the user chose another query (a chip or a heatmap row)

 private:
  void rebuild();
  void onMouseMove(QMouseEvent* event);
  // Thins the token labels of each panel to what its laid-out size holds without overlapping.
  void applyTicks();
  static QSharedPointer<QCPAxisTickerText> tokenTicker(const PatternView& v, int every);
  int shownPositions() const;  // the shown prompt's length (0: none)
  void showQuery();            // the strip's query and the maps' row outlines follow queryPosition()
  // Gives the strip the height its chips need, at most kMaxStripShare of the splitter and never so much that
  // the maps get less than kMinMapsHeight (then the strip is collapsed to the splitter's handle); the rest
  // to the maps. Until the user drags the splitter.
  void fitStrip();
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;  // the strip's width decides its lines
  void chooseQuery(int position);

  std::vector<HeadRef> heads_;
  std::vector<PatternView> patterns_;  // parallel to the drawn panels
  QComboBox* picker_ = nullptr;
  QString pendingChoice_;  // choosePromptText's text, until the picker offers it
  QLabel* note_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QSplitter* split_ = nullptr;
  QScrollArea* stripScroll_ = nullptr;
  hs::TokenStrip* strip_ = nullptr;
  bool stripSized_ = false;  // the user dragged the splitter: its sizes are theirs
  bool followLast_ = true;   // no query chosen yet: the last position
  int query_ = -1;           // the chosen query (when !followLast_)
};

}  // namespace hs::gui
