#pragma once
// A one-line label that ends in "…" instead of widening its window when the text is longer than the room it
// has; the full text is its tooltip.
#include <QLabel>
#include <QPainter>

namespace hs::gui {

class ElidedLabel : public QLabel {
 public:
  explicit ElidedLabel(QWidget* parent = nullptr) : QLabel(parent) {
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    setTextFormat(Qt::PlainText);
  }
  void setFullText(const QString& text) {
    setText(text);
    setToolTip(text);
  }
  QSize minimumSizeHint() const override { return {20, QLabel::minimumSizeHint().height()}; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(contentsRect(), Qt::AlignLeft | Qt::AlignVCenter,
               fontMetrics().elidedText(text(), Qt::ElideRight, contentsRect().width()));
  }
};

// A word-wrapped label that keeps room for all its lines: in a dock (whose layout ignores height-for-width)
// a plain wrapped label gets the height of fewer lines than it wraps into, and its last lines are cut.
class WrappedLabel : public QLabel {
 public:
  explicit WrappedLabel(const QString& text, QWidget* parent = nullptr) : QLabel(text, parent) {
    setWordWrap(true);
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QLabel::resizeEvent(e);
    const int h = heightForWidth(width());
    if (h > 0 && h != minimumHeight()) setMinimumHeight(h);  // the layout gives it that much next time
  }
};

}  // namespace hs::gui
