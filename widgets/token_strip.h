#pragma once
// A prompt's tokens as chips wrapped onto lines like text (CircuitsVis's token view), for reading attention
// from one query position at any prompt length without scrolling sideways. Clicking a chip chooses it as the
// query (the "from" position); each chip then shows, in one thin band per head, how much weight that head
// puts on it from the query: the head's colour at full weight, white at none. The legend above the chips
// names each head in its colour, in the bands' top-to-bottom order. The query's chip is outlined; chips after
// it are greyed (a causal head cannot attend to them). Hover gives every head's weight ("L3.H1: 0.412").
//
// Spaces and newlines in pieces are drawn visibly ('·', '↵'); a chip never holds more than
// kMaxChipChars characters (the tooltip has the whole piece). Lines wrap at the widget's width, and the
// widget's height follows its width (heightForWidth), so it sits in a vertically scrolling area.
#include <QColor>
#include <QRect>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

namespace hs {

struct TokenStripHead {
  QString name;                 // e.g. "L3.H1"
  std::vector<double> weights;  // [q, k] row-major attention probabilities, n × n
};

class TokenStrip : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxChipChars = 14;
  static constexpr int kMaxHeads = 4;

  explicit TokenStrip(QWidget* parent = nullptr);

  // The prompt's tokens and the heads to show (at most kMaxHeads; a head whose weights are not n × n is
  // dropped). Keeps the query, clamped to the new positions.
  void setData(const QStringList& pieces, const std::vector<TokenStripHead>& heads);
  int count() const { return static_cast<int>(pieces_.size()); }
  int headCount() const { return static_cast<int>(heads_.size()); }

  // The query position, -1 for none (chips uncoloured).
  int query() const { return query_; }
  void setQuery(int position);  // clamped to [-1, count() - 1]; emits nothing

  // What the band of `head` on chip `key` shows: the head's weight from the query on `key`; NaN without a
  // query and for keys after it.
  double weight(int head, int key) const;
  QColor bandColor(int head, int key) const;
  static QColor headColor(int head);
  static QString shownPiece(const QString& piece);  // spaces '·', newlines '↵', cut to kMaxChipChars

  // Geometry after the last layout (widget coordinates): the chip of a position, its band for a head, the
  // legend entry of a head, the chip under a pixel (-1: none).
  QRect chipRect(int position) const;
  QRect bandRect(int head, int position) const;
  QRect legendRect(int head) const;
  // The label a chip draws (shownPiece, elided only when the chip is narrowed to the widget's width).
  QString chipLabel(int position) const;
  QRect chipTextRect(int position) const;
  QRect captionRect() const;  // the line naming the query, left of the legend
  int chipAt(const QPoint& pixel) const;
  // The hover text of a chip: its position and piece, then one line per head "L3.H1: 0.412".
  QString chipToolTip(int position) const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 Q_SIGNALS:
  void queryChosen(int position);  // the user clicked a chip or moved the query with the arrow keys

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  struct Layout {
    QRect caption;
    std::vector<QRect> legend;  // [head]
    std::vector<QRect> chips;   // [pos]
    int height = 0;
    int width = -1;  // the width it was laid out for
  };
  Layout layOut(int width) const;  // wraps the chips into `width` pixels
  // The layout at the current width (a hidden widget gets no resize event, so it is made on demand).
  const Layout& laidOut() const;
  int chipHeight() const;
  int bandHeight() const;
  QString captionText() const;
  void choose(int position);

  QStringList pieces_;
  std::vector<TokenStripHead> heads_;
  int query_ = -1;
  mutable Layout layout_;
};

}  // namespace hs
