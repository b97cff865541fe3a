#include "lens_view.h"

#include <QLayout>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "qcustomplot_include.h"

#include "plot_style.h"

namespace hs {

namespace {

// A token as a cell label or tick: newlines and spaces made visible, long pieces cut.
QString shownPiece(const QString& piece, int maxChars) {
  QString s = piece;
  s.replace("\n", "\\n").replace(" ", "·");
  return s.size() > maxChars ? s.left(maxChars - 1) + "…" : s;
}

// Left, right, top and bottom room the axes, title and colour bar take around the cells.
constexpr int kFrameWidth = 150;
constexpr int kFrameHeight = 130;
constexpr int kMinCellHeight = 14;

}  // namespace

LensView::LensView(QWidget* parent) : QWidget(parent) {
  plot_ = plotstyle::addPlot(*this);
  plot_->setMouseTracking(true);
  title_ = plotstyle::addTitle(*plot_);

  QCPAxis* x = plot_->xAxis;
  QCPAxis* y = plot_->yAxis;
  x->setLabel("position");
  y->setLabel("after layer");
  y->setRangeReversed(true);  // layer 0 at the top
  for (QCPAxis* axis : {x, y}) {
    plotstyle::styleCellAxis(*axis);
    axis->setTickLabelFont(plotstyle::tickFont());
  }
  x->setTickLabelRotation(60);

  colorMap_ = plotstyle::addCellMap(*plot_, &scale_);
  plot_->plotLayout()->addElement(1, 1, scale_);
  plotstyle::alignColorScale(*plot_, *scale_);

  scroll_ = new QScrollBar(Qt::Horizontal, this);
  scroll_->setToolTip("Scroll the prompt's positions; the layer axis stays in view");
  layout()->addWidget(scroll_);
  connect(scroll_, &QScrollBar::actionTriggered, this, [this] { followEnd_ = false; });
  connect(scroll_, &QScrollBar::valueChanged, this, [this] { updateWindow(); });

  // Labels are shown only where they fit, which depends on the cell size of this layout.
  connect(plot_, &QCustomPlot::afterLayout, this, &LensView::updateLabels);
  connect(plot_, &QCustomPlot::mouseMove, this, &LensView::onMouseMove);
}

QSize LensView::sizeHint() const {
  return {std::max(520, minimumSizeHint().width()), 420};
}

QSize LensView::minimumSizeHint() const {
  return {kFrameWidth + 4 * kMinCellWidth, kFrameHeight + std::max(map_.layers, 2) * kMinCellHeight};
}

void LensView::setMap(const LensMap& map) {
  map_ = map;
  const int n = map_.positions(), L = map_.layers;
  const bool valid = n > 0 && L > 0 && map_.cells.size() == static_cast<size_t>(n) * static_cast<size_t>(L);
  if (!valid) map_.cells.clear();
  title_->setText(map_.title);
  scale_->axis()->setLabel(map_.valueLabel);

  // QCPColorMap places cell i of k at lower + i·(upper−lower)/(k−1) and needs k ≥ 2: a single row or
  // column is drawn as two half-width copies centred on ±0.25 (as HeadGridView does).
  const int nx = n <= 1 ? 2 : n, ny = L <= 1 ? 2 : L;
  colorMap_->data()->setSize(nx, ny);
  colorMap_->data()->setRange(n <= 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, n - 1),
                              L <= 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, L - 1));
  double extent = 0;  // the largest |value|: the range of a difference map
  for (int i = 0; i < nx; ++i)
    for (int j = 0; j < ny; ++j) {
      const double v = valid ? value(std::min(j, L - 1), std::min(i, n - 1)) : std::nan("");
      colorMap_->data()->setCell(i, j, v);
      if (std::isfinite(v)) extent = std::max(extent, std::abs(v));
    }
  // Probabilities on one fixed scale, so that two prompts' maps compare; differences centred at white.
  const QCPRange range =
      map_.difference ? QCPRange(-std::max(extent, 1e-6), std::max(extent, 1e-6)) : QCPRange(0, 1);
  colorMap_->setGradient(map_.difference ? plotstyle::divergingGradient() : plotstyle::sequentialGradient());
  colorMap_->setDataRange(range);

  setPositionTicks(labelStep_);
  QSharedPointer<QCPAxisTickerText> yt(new QCPAxisTickerText);
  for (int l = 0; l < L; ++l)
    yt->addTick(l, QString("L%1").arg(l));
  plot_->yAxis->setTicker(yt);
  plot_->yAxis->setRange(-0.5, std::max(L, 1) - 0.5);

  for (QCPItemText* t : labels_)
    plot_->removeItem(t);
  labels_.clear();
  if (valid) {
    QCPColorGradient gradient = colorMap_->gradient();  // color() is not const
    for (int l = 0; l < L; ++l)
      for (int p = 0; p < n; ++p) {
        const LensCell& c = map_.cells[static_cast<size_t>(l * n + p)];
        auto* t = new QCPItemText(plot_);
        t->setClipToAxisRect(true);
        t->position->setType(QCPItemPosition::ptPlotCoords);
        t->position->setCoords(p, l);
        t->setPositionAlignment(Qt::AlignCenter);
        t->setText(shownPiece(c.top, 10));
        t->setFont(plotstyle::tickFont());
        t->setSelectable(false);
        // Light text on dark cells: the cell's colour decides.
        const QColor cell =
            std::isfinite(c.value) ? QColor::fromRgba(gradient.color(c.value, range)) : QColor(Qt::white);
        t->setColor(cell.lightnessF() < 0.5 ? Qt::white : Qt::black);
        labels_.push_back(t);
      }
  }
  followEnd_ = true;
  updateWindow();
}

void LensView::setPositionTicks(int step) {
  labelStep_ = std::max(step, 1);
  QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText);
  for (int p = 0; p < map_.positions(); p += labelStep_)
    xt->addTick(p, QString("%1 %2").arg(p).arg(shownPiece(map_.pieces[p], 8)));
  plot_->xAxis->setTicker(xt);
}

void LensView::setScrolling(bool on) {
  if (on == scrolling_) return;
  scrolling_ = on;
  followEnd_ = true;
  updateWindow();
}

int LensView::visiblePositions() const {
  const int n = std::max(map_.positions(), 1);
  if (!scrolling_) return n;
  const int fit = std::max(1, (width() - kFrameWidth) / kMinCellWidth);  // the plot spans the view
  return std::clamp(fit, 1, n);
}

int LensView::firstPosition() const {
  return scroll_->value();
}

void LensView::scrollToPosition(int first) {
  scroll_->setValue(first);  // clamped to the scroll bar's range; valueChanged updates the window
}

void LensView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updateWindow();
}

void LensView::updateWindow() {
  const int n = std::max(map_.positions(), 1), visible = visiblePositions();
  {
    const QSignalBlocker block(scroll_);  // the range change below must not re-enter
    scroll_->setRange(0, n - visible);
    scroll_->setPageStep(visible);
    if (followEnd_) scroll_->setValue(scroll_->maximum());
  }
  scroll_->setVisible(visible < n);
  const int first = scroll_->value();
  plot_->xAxis->setRange(first - 0.5, first + visible - 0.5);
  // Before the layout has sized the plot there is nothing to draw into; its own resize replots then.
  if (!plot_->size().isEmpty()) plot_->replot();
}

double LensView::value(int layer, int pos) const {
  const int n = map_.positions();
  if (layer < 0 || layer >= map_.layers || pos < 0 || pos >= n || map_.cells.empty()) return std::nan("");
  return map_.cells[static_cast<size_t>(layer * n + pos)].value;
}

void LensView::updateLabels() {
  const double cellW = std::abs(plot_->xAxis->coordToPixel(1) - plot_->xAxis->coordToPixel(0));
  // Position labels turn by 60°: neighbours need a line of the tick font / sin 60° between them. The ticks
  // of this frame were made before its layout, so a new step shows from the next frame (it changes only
  // with the cells' width, so this settles at once).
  const double pitch = (QFontMetrics(plotstyle::tickFont()).height() + 2) / 0.866;
  const int step = cellW > 0 ? std::max(1, static_cast<int>(std::ceil(pitch / cellW))) : 1;
  if (step != labelStep_) {
    setPositionTicks(step);
    plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
  }
  if (labels_.empty()) return;
  const double cellH = std::abs(plot_->yAxis->coordToPixel(1) - plot_->yAxis->coordToPixel(0));
  const QFontMetrics fm(plotstyle::tickFont());
  for (QCPItemText* t : labels_)
    t->setVisible(fm.horizontalAdvance(t->text()) + 4 <= cellW && fm.height() + 2 <= cellH);
}

int LensView::visibleLabels() const {
  return static_cast<int>(
      std::count_if(labels_.begin(), labels_.end(), [](const QCPItemText* t) { return t->visible(); }));
}

QString LensView::hoverText(const QPoint& plotPixel) const {
  if (map_.cells.empty() || !plot_->axisRect()->rect().contains(plotPixel)) return {};
  const int p = static_cast<int>(std::floor(plot_->xAxis->pixelToCoord(plotPixel.x()) + 0.5));
  const int l = static_cast<int>(std::floor(plot_->yAxis->pixelToCoord(plotPixel.y()) + 0.5));
  const int n = map_.positions();
  if (p < 0 || p >= n || l < 0 || l >= map_.layers) return {};
  const LensCell& c = map_.cells[static_cast<size_t>(l * n + p)];
  QString text = QString("after layer %1 · position %2 '%3' · top token '%4' · probability %5")
                     .arg(l)
                     .arg(p)
                     .arg(shownPiece(map_.pieces[p], 40), shownPiece(c.top, 40))
                     .arg(c.prob, 0, 'f', 4);
  if (!c.detail.isEmpty()) text += " · " + c.detail;
  return text;
}

QPoint LensView::cellCenter(int layer, int pos) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(pos))),
                static_cast<int>(std::lround(plot_->yAxis->coordToPixel(layer))));
}

void LensView::onMouseMove(QMouseEvent* event) {
  const QString text = hoverText(event->position().toPoint());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

}  // namespace hs
