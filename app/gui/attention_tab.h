#pragma once
// The Attention tab, after CircuitsVis: the attention pattern of up to four heads side by side on one
// prompt, drawn as crisp cells (one per query × key, no smoothing); hovering a cell shows the query token,
// the key token and the weight. A picker chooses the prompt: the Prompt tab's text or any of the task's
// ICL prompts.
#include <QSharedPointer>
#include <QWidget>

#include <vector>

#include "gui_types.h"

class QComboBox;
class QCPAxisTickerText;
class QCustomPlot;
class QLabel;
class QMouseEvent;

namespace hs::gui {

class AttentionTab : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxHeads = 4;

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

 Q_SIGNALS:
  void promptChanged();  // the picker changed: patterns must be requested again

 private:
  void rebuild();
  void onMouseMove(QMouseEvent* event);
  // Thins the token labels of each panel to what its laid-out size holds without overlapping.
  void applyTicks();
  static QSharedPointer<QCPAxisTickerText> tokenTicker(const PatternView& v, int every);

  std::vector<HeadRef> heads_;
  std::vector<PatternView> patterns_;  // parallel to the drawn panels
  QComboBox* picker_ = nullptr;
  QString pendingChoice_;  // choosePromptText's text, until the picker offers it
  QLabel* note_ = nullptr;
  QCustomPlot* plot_ = nullptr;
};

}  // namespace hs::gui
