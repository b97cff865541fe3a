#include "head_grid_view.h"

#include <QAction>
#include <QMenu>
#include <QMetaMethod>
#include <QMouseEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

#include "qcustomplot_include.h"

#include "plot_style.h"
#include "results/rank_stats.h"

namespace hs {

namespace {

bool isFinite(double v) {
  return std::isfinite(v);
}

}  // namespace

HeadGridView::HeadGridView(QWidget* parent) : QWidget(parent) {
  plot_ = plotstyle::addPlot(*this);
  plot_->setMouseTracking(true);
  plot_->setContextMenuPolicy(Qt::PreventContextMenu);  // the right button is handled in onMousePress
  // Layout: title on row 0; heatmap axis rect and its colour scale side by side on row 1.
  title_ = plotstyle::addTitle(*plot_);

  QCPAxis* x = plot_->xAxis;
  QCPAxis* y = plot_->yAxis;
  x->setLabel(QStringLiteral("head"));
  y->setLabel(QStringLiteral("layer"));
  y->setRangeReversed(true);  // layer 0 at the top
  for (QCPAxis* axis : {x, y})
    plotstyle::styleCellAxis(*axis);
  // A closed frame around the map; the top and right axes mirror the ticks without labels.
  plot_->axisRect()->setupFullAxesBox(true);
  plot_->xAxis2->setTickLabels(false);
  plot_->yAxis2->setTickLabels(false);
  plot_->yAxis2->setRangeReversed(true);
  for (QCPAxis* axis : {plot_->xAxis2, plot_->yAxis2}) {
    axis->setSubTicks(false);
    axis->setTickLength(0, 4);
  }

  map_ = plotstyle::addCellMap(*plot_, &scale_);
  // The map and its colour bar share one cell of the top layout, so that the title row spans both and a
  // title is fitted to (and centred on) the whole width.
  auto* body = new QCPLayoutGrid;
  QCPAxisRect* rect = plot_->axisRect();
  plot_->plotLayout()->take(rect);
  plot_->plotLayout()->addElement(1, 0, body);
  body->addElement(0, 0, rect);
  body->addElement(0, 1, scale_);
  plotstyle::alignColorScale(*plot_, *scale_);

  connect(plot_, &QCustomPlot::mousePress, this, &HeadGridView::onMousePress);
  connect(plot_, &QCustomPlot::mouseMove, this, &HeadGridView::onMouseMove);

  menu_ = new QMenu(this);
  const std::pair<MenuAction, QString> entries[] = {
      {MenuAction::ZeroAblate, tr("Zero-ablate")},
      {MenuAction::MeanAblate, tr("Mean-ablate (corpus mean)")},
      {MenuAction::PatchFromClean, tr("Patch from clean run")},
      {MenuAction::AddToSteering, tr("Add to steering set")},
      {MenuAction::ShowPattern, tr("Show attention pattern")},
      {MenuAction::HeadCard, tr("Head card")},
  };
  for (const auto& [which, text] : entries) {
    QAction* action = menu_->addAction(text);
    if (which == MenuAction::ShowPattern) menu_->insertSeparator(action);
    actions_.push_back(action);
  }
  // Intervention actions act on the whole selection, or on the head under the menu when none is selected.
  auto targets = [this] {
    if (!selection_.empty() || !menuHead_) return selection_;
    return std::vector<HeadRef>{*menuHead_};
  };
  connect(menuAction(MenuAction::ZeroAblate), &QAction::triggered, this,
          [this, targets] { Q_EMIT zeroAblate(targets()); });
  connect(menuAction(MenuAction::MeanAblate), &QAction::triggered, this,
          [this, targets] { Q_EMIT meanAblate(targets()); });
  connect(menuAction(MenuAction::PatchFromClean), &QAction::triggered, this,
          [this, targets] { Q_EMIT patchFromClean(targets()); });
  connect(menuAction(MenuAction::AddToSteering), &QAction::triggered, this,
          [this, targets] { Q_EMIT addToSteering(targets()); });
  connect(menuAction(MenuAction::ShowPattern), &QAction::triggered, this, [this] {
    if (menuHead_) {
      Q_EMIT showPattern(*menuHead_);
    } else if (!selection_.empty()) {
      Q_EMIT showPattern(selection_.front());
    }
  });
  connect(menuAction(MenuAction::HeadCard), &QAction::triggered, this, [this] {
    if (menuHead_) {
      Q_EMIT headCardRequested(*menuHead_);
    } else if (!selection_.empty()) {
      Q_EMIT headCardRequested(selection_.front());
    }
  });
  updateMenuEnabled();
}

HeadGridView::~HeadGridView() = default;

void HeadGridView::setGrid(const HeadGrid& grid) {
  grid_ = grid;
  const int L = grid_.layers(), H = grid_.heads();
  title_->setText(titleText());
  scale_->axis()->setLabel(QString::fromStdString(grid_.unit));

  // QCPColorMap places cell i of n at key lower + i·(upper−lower)/(n−1), and needs n ≥ 2 to know the
  // cell width. Cells are centred on the integers 0..n−1; a single row/column is drawn as two
  // half-width copies centred on ±0.25 so that it still spans [−0.5, 0.5].
  const int nx = std::max(H, 1) == 1 ? 2 : H;
  const int ny = std::max(L, 1) == 1 ? 2 : L;
  const QCPRange kx = H <= 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, H - 1);
  const QCPRange ky = L <= 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, L - 1);
  map_->data()->setSize(nx, ny);
  map_->data()->setRange(kx, ky);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int i = 0; i < nx; ++i) {
    for (int j = 0; j < ny; ++j) {
      const double v = hasGrid() ? grid_.values(std::min(j, L - 1), std::min(i, H - 1)) : std::nan("");
      map_->data()->setCell(i, j, v);
      if (isFinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }

  // Both signs: diverging map with white at 0 (symmetric range). One sign: sequential over [min, max].
  diverging_ = lo < 0 && hi > 0;
  QCPRange range;
  if (!(lo <= hi)) {
    range = QCPRange(0, 1);  // nothing finite to show
  } else if (diverging_) {
    const double m = std::max(-lo, hi);
    range = QCPRange(-m, m);
  } else if (lo == hi) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    range = QCPRange(lo - pad, hi + pad);
  } else {
    range = QCPRange(lo, hi);
  }
  map_->setGradient(diverging_ ? plotstyle::divergingGradient() : plotstyle::sequentialGradient());
  map_->setDataRange(range);

  plot_->xAxis->setRange(-0.5, std::max(H, 1) - 0.5);
  plot_->yAxis->setRange(-0.5, std::max(L, 1) - 0.5);
  applyTicks();

  // Keep the selected heads that still exist.
  std::vector<HeadRef> kept;
  for (const HeadRef& h : selection_) {
    if (h.layer < L && h.head < H) kept.push_back(h);
  }
  menuHead_.reset();
  const bool changed = kept.size() != selection_.size();
  selection_ = std::move(kept);
  redrawSelection();
  redrawSilent();
  plotstyle::replotIfSized(*plot_);
  if (changed) Q_EMIT selectionChanged(selection_);
}

void HeadGridView::applyTicks() {
  // Text ticks at every step-th cell (the same thinning as the integer ticks), when given for this shape.
  auto textTicker = [](const QStringList& labels, int maxTicks) {
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const int step = plotstyle::integerTickStep(static_cast<int>(labels.size()), maxTicks);
    for (int i = 0; i < labels.size(); i += step)
      ticker->addTick(i, labels[i]);
    return ticker;
  };
  const bool xText = !xTicks_.isEmpty() && xTicks_.size() == grid_.heads();
  const bool yText = !yTicks_.isEmpty() && yTicks_.size() == grid_.layers();
  plot_->xAxis->setTicker(xText ? QSharedPointer<QCPAxisTicker>(textTicker(xTicks_, 12))
                                : plotstyle::integerTicker(grid_.heads()));
  plot_->yAxis->setTicker(yText ? QSharedPointer<QCPAxisTicker>(textTicker(yTicks_, 40))
                                : plotstyle::integerTicker(grid_.layers()));
  plot_->xAxis->setLabel(xLabel_.isEmpty() ? QStringLiteral("head") : xLabel_);
  plot_->yAxis->setLabel(yLabel_.isEmpty() ? QStringLiteral("layer") : yLabel_);
  plot_->xAxis2->setTicker(plot_->xAxis->ticker());
  plot_->yAxis2->setTicker(plot_->yAxis->ticker());
}

void HeadGridView::setTitleText(const QString& title) {
  titleOverride_ = title;
  title_->setText(titleText());
  plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
}

QString HeadGridView::titleText() const {
  if (!titleOverride_.isEmpty()) return titleOverride_;
  return QString::fromStdString(grid_.name.empty() ? grid_.id : grid_.name);
}

void HeadGridView::setAxisText(const QString& xLabel, const QStringList& xTicks, const QString& yLabel,
                               const QStringList& yTicks) {
  xLabel_ = xLabel;
  yLabel_ = yLabel;
  xTicks_ = xTicks;
  yTicks_ = yTicks;
  applyTicks();
  plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
}

void HeadGridView::setSelection(std::vector<HeadRef> heads) {
  std::vector<HeadRef> valid;
  for (const HeadRef& h : heads) {
    if (h.layer >= 0 && h.layer < grid_.layers() && h.head >= 0 && h.head < grid_.heads()) valid.push_back(h);
  }
  std::sort(valid.begin(), valid.end());
  valid.erase(std::unique(valid.begin(), valid.end()), valid.end());
  if (valid == selection_) return;
  selection_ = std::move(valid);
  redrawSelection();
  plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
  Q_EMIT selectionChanged(selection_);
}

HeadGrid HeadGridView::rankedGrid() const {
  HeadGrid g = grid_;
  if (!rankSilent_)
    for (const HeadRef& h : silent_)
      if (h.layer < g.layers() && h.head < g.heads()) g.values(h.layer, h.head) = std::nan("");
  return g;
}

void HeadGridView::setSilentHeads(const std::vector<HeadRef>& heads) {
  silent_ = heads;
  redrawSilent();
  plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
}

void HeadGridView::setRankSilentHeads(bool on) {
  rankSilent_ = on;
}

bool HeadGridView::isSilent(HeadRef head) const {
  return std::find(silent_.begin(), silent_.end(), head) != silent_.end();
}

void HeadGridView::redrawSilent() {
  for (QCPAbstractItem* item : hatches_)
    plot_->removeItem(item);
  hatches_.clear();
  for (const HeadRef& h : silent_) {
    if (h.layer >= grid_.layers() || h.head >= grid_.heads()) continue;
    auto* rect = new QCPItemRect(plot_);
    rect->topLeft->setCoords(h.head - 0.5, h.layer - 0.5);
    rect->bottomRight->setCoords(h.head + 0.5, h.layer + 0.5);
    rect->setPen(Qt::NoPen);
    rect->setBrush(QBrush(QColor(60, 60, 60), Qt::BDiagPattern));
    rect->setSelectable(false);
    hatches_.push_back(rect);
  }
}

void HeadGridView::selectTopK(int k) {
  setSelection(topHeads(rankedGrid(), std::max(k, 0)));
}

void HeadGridView::selectTopPercent(double percent) {
  if (!(percent > 0)) {
    clearSelection();
    return;
  }
  setSelection(topPercent(rankedGrid(), std::min(percent, 100.0)));
}

int HeadGridView::rankedCount() const {
  const HeadGrid g = rankedGrid();
  int n = 0;
  for (int l = 0; l < g.layers(); ++l) {
    for (int h = 0; h < g.heads(); ++h)
      n += isFinite(g.values(l, h)) ? 1 : 0;
  }
  return n;
}

std::optional<int> HeadGridView::rankOf(HeadRef head) const {
  if (head.layer < 0 || head.layer >= grid_.layers() || head.head < 0 || head.head >= grid_.heads()) {
    return std::nullopt;
  }
  const HeadGrid g = rankedGrid();
  if (!isFinite(g.values(head.layer, head.head))) return std::nullopt;
  return headRank(g, head);
}

std::optional<HeadRef> HeadGridView::headAt(const QPoint& plotPixel) const {
  if (!hasGrid() || !plot_->axisRect()->rect().contains(plotPixel)) return std::nullopt;
  // Cells are centred on integer coordinates: round to the nearest centre.
  const int h = static_cast<int>(std::floor(plot_->xAxis->pixelToCoord(plotPixel.x()) + 0.5));
  const int l = static_cast<int>(std::floor(plot_->yAxis->pixelToCoord(plotPixel.y()) + 0.5));
  if (h < 0 || h >= grid_.heads() || l < 0 || l >= grid_.layers()) return std::nullopt;
  return HeadRef{l, h};
}

QPoint HeadGridView::cellCenter(HeadRef head) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(head.head))),
                static_cast<int>(std::lround(plot_->yAxis->coordToPixel(head.layer))));
}

QString HeadGridView::tooltipText(HeadRef head) const {
  if (head.layer < 0 || head.layer >= grid_.layers() || head.head < 0 || head.head >= grid_.heads()) {
    return QString();
  }
  const double v = grid_.values(head.layer, head.head);
  if (cellText_) return cellText_(head, v);
  QString text = QStringLiteral("layer %1, head %2: ").arg(head.layer).arg(head.head);
  if (!isFinite(v)) return text + QStringLiteral("no value");
  text += QString::number(v, 'g', 4);
  // The head's standard error over the prompts, where the grid has one.
  if (grid_.hasSe() && std::isfinite(grid_.se(head.layer, head.head)))
    text += QStringLiteral(" ± %1").arg(grid_.se(head.layer, head.head), 0, 'g', 2);
  if (!grid_.unit.empty()) text += QLatin1Char(' ') + QString::fromStdString(grid_.unit);
  if (!rankOf(head)) return text + QStringLiteral(" (silent head: W_O is all zero; not ranked)");
  return text + QStringLiteral(" (rank %1 of %2)").arg(*rankOf(head)).arg(rankedCount());
}

QAction* HeadGridView::menuAction(MenuAction which) const {
  return actions_.at(static_cast<size_t>(which));
}

void HeadGridView::onMousePress(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (event->button() == Qt::RightButton) {
    openMenu(pos);
    return;
  }
  if (event->button() != Qt::LeftButton) return;
  const std::optional<HeadRef> head = headAt(pos);
  if (event->modifiers() & Qt::ControlModifier) {
    if (!head) return;
    std::vector<HeadRef> next = selection_;
    auto it = std::find(next.begin(), next.end(), *head);
    if (it != next.end()) {
      next.erase(it);
    } else {
      next.push_back(*head);
    }
    setSelection(std::move(next));
  } else {
    // A plain click outside the cells clears the selection.
    setSelection(head ? std::vector<HeadRef>{*head} : std::vector<HeadRef>{});
  }
}

void HeadGridView::onMouseMove(QMouseEvent* event) {
  const std::optional<HeadRef> head = headAt(event->position().toPoint());
  const QString text = head ? tooltipText(*head) : QString();
  plot_->setToolTip(text);
  if (text.isEmpty()) {
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
  }
}

void HeadGridView::openMenu(const QPoint& plotPixel) {
  if (!menuEnabled_) return;
  menuHead_ = headAt(plotPixel);
  // Right-clicking a head outside the selection acts on that head, as file managers do.
  if (menuHead_ && std::find(selection_.begin(), selection_.end(), *menuHead_) == selection_.end()) {
    setSelection({*menuHead_});
  }
  updateMenuEnabled();
  if (selection_.empty() && !menuHead_) return;
  // Views whose owner shows no head card offer none.
  menuAction(MenuAction::HeadCard)
      ->setVisible(isSignalConnected(QMetaMethod::fromSignal(&HeadGridView::headCardRequested)));
  menu_->popup(plot_->mapToGlobal(plotPixel));
}

void HeadGridView::updateMenuEnabled() {
  const bool any = !selection_.empty() || menuHead_.has_value();
  for (QAction* a : actions_)
    a->setEnabled(any);
}

void HeadGridView::redrawSelection() {
  for (QCPAbstractItem* item : outlines_)
    plot_->removeItem(item);
  outlines_.clear();
  // Two strokes (wide white under narrow black) keep the outline visible on dark and light cells.
  constexpr double inset = 0.06;
  for (const HeadRef& h : selection_) {
    for (const QPen& pen : {QPen(QColor(255, 255, 255), 4.0), QPen(QColor(0, 0, 0), 2.0)}) {
      auto* rect = new QCPItemRect(plot_);
      rect->topLeft->setCoords(h.head - 0.5 + inset, h.layer - 0.5 + inset);
      rect->bottomRight->setCoords(h.head + 0.5 - inset, h.layer + 0.5 - inset);
      rect->setPen(pen);
      rect->setBrush(Qt::NoBrush);
      rect->setSelectable(false);
      rect->setProperty(kScreenOnlyProperty, true);  // the selection is not part of an exported figure
      outlines_.push_back(rect);
    }
  }
  updateMenuEnabled();
}

}  // namespace hs
