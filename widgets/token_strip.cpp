#include "token_strip.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "plot_style.h"

namespace hs {

namespace {

constexpr int kMargin = 4;            // around everything
constexpr int kGap = 3;               // between chips on a line
constexpr int kLineGap = 4;           // between lines of chips
constexpr int kPadX = 4;              // text inset in a chip
constexpr int kBand = 6;              // height of one head's band
constexpr int kSwatch = 10;           // legend colour square
constexpr int kMinChip = 14;          // a chip of a one-character piece still has room to be clicked
const QColor kMasked(236, 236, 236);  // bands of keys after the query, and without a query
const QColor kQueryFill(255, 240, 170);

// `text` whole when its advance fits `width` (elidedText alone elides some texts whose rounded advance is
// exactly the width: it measures in fractional pixels), else elided.
QString fitted(const QFontMetrics& fm, const QString& text, int width) {
  return fm.horizontalAdvance(text) <= width ? text : fm.elidedText(text, Qt::ElideRight, width);
}

// Places boxes of the given widths left to right, wrapping at `width`; returns the rects and moves `y` below
// them. A box wider than the line is narrowed to it.
std::vector<QRect> flow(const std::vector<int>& widths, int height, int width, int& y, int x0 = kMargin) {
  std::vector<QRect> rects;
  const int right = width - kMargin;
  int x = x0;
  bool lineUsed = x0 > kMargin;
  for (int w : widths) {
    w = std::max(1, std::min(w, right - kMargin));
    if (lineUsed && x + w > right) {
      x = kMargin;
      y += height + kLineGap;
    }
    rects.emplace_back(x, y, w, height);
    x += w + kGap;
    lineUsed = true;
  }
  if (lineUsed) y += height + kLineGap;
  return rects;
}

}  // namespace

TokenStrip::TokenStrip(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
  setFocusPolicy(Qt::ClickFocus);  // the arrow keys move the query once a chip was clicked
  setMouseTracking(true);
}

QString TokenStrip::shownPiece(const QString& piece) {
  QString s = piece;
  s.replace("\n", "↵").replace(" ", "·").replace("\t", "→");
  return s.size() > kMaxChipChars ? s.left(kMaxChipChars - 1) + "…" : s;
}

QColor TokenStrip::headColor(int head) {
  return plotstyle::seriesColor(head);
}

void TokenStrip::setData(const QStringList& pieces, const std::vector<TokenStripHead>& heads) {
  pieces_ = pieces;
  heads_.clear();
  const size_t n = static_cast<size_t>(pieces.size());
  for (const TokenStripHead& h : heads)
    if (h.weights.size() == n * n && static_cast<int>(heads_.size()) < kMaxHeads) heads_.push_back(h);
  query_ = std::min(query_, count() - 1);
  layout_.width = -1;
  updateGeometry();  // the height for this width changed with the chips
  update();
}

void TokenStrip::setQuery(int position) {
  query_ = std::clamp(position, -1, count() - 1);
  layout_.width = -1;  // the caption names the query
  update();
}

void TokenStrip::choose(int position) {
  if (position == query_ || position < 0 || position >= count()) return;
  setQuery(position);
  Q_EMIT queryChosen(query_);
}

double TokenStrip::weight(int head, int key) const {
  const int n = count();
  if (head < 0 || head >= headCount() || query_ < 0 || key < 0 || key > query_ || key >= n)
    return std::nan("");
  return heads_[static_cast<size_t>(head)].weights[static_cast<size_t>(query_ * n + key)];
}

QColor TokenStrip::bandColor(int head, int key) const {
  const double w = weight(head, key);
  if (!std::isfinite(w)) return kMasked;
  // White at 0, the head's colour at 1: one hue per head, so bands of different heads never read alike.
  const double t = std::clamp(w, 0.0, 1.0);
  const QColor c = headColor(head);
  auto mix = [t](int channel) { return static_cast<int>(std::lround(255 + (channel - 255) * t)); };
  return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}

int TokenStrip::bandHeight() const {
  return headCount() <= 2 ? kBand + 2 : kBand;
}

int TokenStrip::chipHeight() const {
  return fontMetrics().height() + 4 + std::max(headCount(), 1) * bandHeight();
}

QString TokenStrip::captionText() const {
  if (pieces_.isEmpty()) return "No prompt yet";
  if (query_ < 0) return "Click a token to see where each head attends from it";
  return QString("From %1 '%2' to each token:").arg(query_).arg(shownPiece(pieces_[query_]));
}

TokenStrip::Layout TokenStrip::layOut(int width) const {
  Layout l;
  const QFontMetrics fm = fontMetrics();
  const int line = fm.height();
  int y = kMargin;
  // The caption, then the legend entries on the same line as far as they fit.
  const QString caption = captionText();
  const int captionWidth = std::min(fm.horizontalAdvance(caption) + 2, width - 2 * kMargin);
  l.caption = QRect(kMargin, y, std::max(captionWidth, 0), line);
  std::vector<int> legendWidths;
  for (const TokenStripHead& h : heads_)
    legendWidths.push_back(kSwatch + 4 + fm.horizontalAdvance(h.name) + 2);
  int legendY = y;
  l.legend = flow(legendWidths, line, width, legendY, kMargin + captionWidth + 8);
  y = std::max(legendY, y + line + kLineGap) + 2;
  // The chips.
  std::vector<int> chipWidths;
  for (const QString& p : pieces_)
    chipWidths.push_back(std::max(kMinChip, fm.horizontalAdvance(shownPiece(p)) + 2 * kPadX + 2));
  l.chips = flow(chipWidths, chipHeight(), width, y);
  l.height = y + kMargin;
  l.width = width;
  return l;
}

const TokenStrip::Layout& TokenStrip::laidOut() const {
  if (layout_.width != width()) layout_ = layOut(width());
  return layout_;
}

int TokenStrip::heightForWidth(int width) const {
  return layOut(width).height;
}

QSize TokenStrip::sizeHint() const {
  return {480, heightForWidth(480)};
}

QSize TokenStrip::minimumSizeHint() const {
  return {120, fontMetrics().height() + 2 * kMargin};
}

QRect TokenStrip::chipRect(int position) const {
  return position >= 0 && position < static_cast<int>(laidOut().chips.size())
             ? laidOut().chips[static_cast<size_t>(position)]
             : QRect();
}

QRect TokenStrip::bandRect(int head, int position) const {
  const QRect chip = chipRect(position);
  if (chip.isNull() || head < 0 || head >= headCount()) return {};
  const int top = chip.top() + fontMetrics().height() + 2 + head * bandHeight();
  return QRect(chip.left() + 2, top, chip.width() - 4, bandHeight() - 1);
}

QRect TokenStrip::chipTextRect(int position) const {
  const QRect chip = chipRect(position);
  return chip.isNull()
             ? QRect()
             : QRect(chip.left() + kPadX, chip.top() + 1, chip.width() - 2 * kPadX, fontMetrics().height());
}

QString TokenStrip::chipLabel(int position) const {
  if (position < 0 || position >= count()) return {};
  return fitted(fontMetrics(), shownPiece(pieces_[position]), chipTextRect(position).width());
}

QRect TokenStrip::legendRect(int head) const {
  return head >= 0 && head < static_cast<int>(laidOut().legend.size())
             ? laidOut().legend[static_cast<size_t>(head)]
             : QRect();
}

QRect TokenStrip::captionRect() const {
  return laidOut().caption;
}

int TokenStrip::chipAt(const QPoint& pixel) const {
  for (size_t i = 0; i < laidOut().chips.size(); ++i)
    if (laidOut().chips[i].contains(pixel)) return static_cast<int>(i);
  return -1;
}

QString TokenStrip::chipToolTip(int position) const {
  if (position < 0 || position >= count()) return {};
  QString piece = pieces_[position];
  piece.replace("\n", "↵");
  QStringList lines{QString("position %1 '%2'").arg(position).arg(piece)};
  if (query_ < 0) {
    lines << "click: attention from this token";
  } else if (position > query_) {
    lines << QString("after the query (%1): no head attends to it").arg(query_);
  } else {
    for (int h = 0; h < headCount(); ++h)
      lines << QString("%1: %2").arg(heads_[static_cast<size_t>(h)].name).arg(weight(h, position), 0, 'f', 3);
  }
  return lines.join("\n");
}

bool TokenStrip::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = chipToolTip(chipAt(help->pos()));
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, this, chipRect(chipAt(help->pos())));
    return true;
  }
  return QWidget::event(e);
}

void TokenStrip::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  layout_.width = -1;
}

void TokenStrip::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  choose(chipAt(e->position().toPoint()));
}

void TokenStrip::keyPressEvent(QKeyEvent* e) {
  if (query_ >= 0 && e->key() == Qt::Key_Left)
    choose(query_ - 1);
  else if (query_ >= 0 && e->key() == Qt::Key_Right)
    choose(query_ + 1);
  else
    QWidget::keyPressEvent(e);
}

void TokenStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QFontMetrics fm = fontMetrics();
  p.setPen(palette().text().color());
  p.drawText(laidOut().caption, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
             fitted(fm, captionText(), laidOut().caption.width()));
  for (int h = 0; h < headCount() && h < static_cast<int>(laidOut().legend.size()); ++h) {
    const QRect r = laidOut().legend[static_cast<size_t>(h)];
    const QColor c = headColor(h);
    p.fillRect(QRect(r.left(), r.center().y() - kSwatch / 2, kSwatch, kSwatch), c);
    p.setPen(c.darker(130));
    p.drawText(r.adjusted(kSwatch + 4, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
               heads_[static_cast<size_t>(h)].name);
  }
  for (int i = 0; i < count() && i < static_cast<int>(laidOut().chips.size()); ++i) {
    const QRect chip = laidOut().chips[static_cast<size_t>(i)];
    const bool isQuery = i == query_, after = query_ >= 0 && i > query_;
    p.setPen(isQuery ? QPen(Qt::black, 2) : QPen(QColor(200, 200, 200), 1));
    p.setBrush(isQuery ? kQueryFill : (after ? QColor(248, 248, 248) : QColor(Qt::white)));
    p.drawRect(chip.adjusted(0, 0, -1, -1));
    p.setPen(after ? QColor(170, 170, 170) : palette().text().color());
    p.drawText(chipTextRect(i), Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextDontClip, chipLabel(i));
    for (int h = 0; h < headCount(); ++h)
      p.fillRect(bandRect(h, i), bandColor(h, i));
  }
}

}  // namespace hs
