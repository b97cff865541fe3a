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

}  // namespace hs::gui
