#include "attention_tab.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

#include "plot_style.h"
#include "qcustomplot_include.h"
#include "token_strip.h"

namespace hs::gui {

namespace {
const char* kPromptTabText = "the Prompt tab's text";

QString shortPiece(const QString& p) {
  QString s = p;
  s.replace("\n", "\\n");
  return s.size() > 12 ? s.left(11) + "…" : s;
}

// The outline of the query's row on a map: visible on the thermal map's black and its white.
QPen queryRowPen() {
  return QPen(QColor(0, 200, 255), 1.5);
}
}  // namespace

AttentionTab::AttentionTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Prompt"));
  picker_ = new QComboBox;
  picker_->addItem(kPromptTabText);
  picker_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  picker_->setMinimumContentsLength(16);
  picker_->setToolTip(
      "The prompt the patterns are computed on: the Prompt tab's text or one of the task's "
      "ICL prompts");
  bar->addWidget(picker_, 1);
  note_ = new QLabel("Select heads in the Heads tab (Ctrl-click: up to four side by side)");
  note_->setStyleSheet("color:#555");
  note_->setWordWrap(true);  // wraps instead of widening the window
  bar->addWidget(note_);
  layout->addLayout(bar);
  plot_ = new QCustomPlot;
  plotstyle::skipEmptyResizes(*plot_);
  plot_->plotLayout()->clear();
  plot_->setMouseTracking(true);
  // The maps above, the token strip below: the strip wraps its chips to the width and scrolls only down.
  strip_ = new hs::TokenStrip;
  strip_->setToolTip({});  // each chip has its own (the strip answers QEvent::ToolTip)
  stripScroll_ = new QScrollArea;
  stripScroll_->setWidget(strip_);
  stripScroll_->setWidgetResizable(true);
  stripScroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  stripScroll_->setMinimumHeight(QFontMetrics(font()).height() * 3 + 20);
  split_ = new QSplitter(Qt::Vertical);
  split_->addWidget(plot_);
  split_->addWidget(stripScroll_);
  split_->setCollapsible(0, false);
  split_->setStretchFactor(0, 7);
  split_->setStretchFactor(1, 3);
  split_->setSizes({700, 300});  // fitStrip sizes it to the chips once the tab has its height
  layout->addWidget(split_, 1);
  connect(split_, &QSplitter::splitterMoved, this, [this] { stripSized_ = true; });
  stripScroll_->viewport()->installEventFilter(this);
  connect(picker_, &QComboBox::currentIndexChanged, this, [this] { Q_EMIT promptChanged(); });
  connect(plot_, &QCustomPlot::mouseMove, this, &AttentionTab::onMouseMove);
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    int panel = 0, q = 0, k = 0;
    if (e->button() == Qt::LeftButton && cellAt(e->pos(), &panel, &q, &k)) chooseQuery(q);
  });
  connect(strip_, &hs::TokenStrip::queryChosen, this, &AttentionTab::chooseQuery);
  // Between layout and drawing: the panels' sizes are known, the ticks are not generated yet.
  connect(plot_, &QCustomPlot::afterLayout, this, &AttentionTab::applyTicks);
}

void AttentionTab::setHeads(const std::vector<HeadRef>& heads) {
  std::vector<HeadRef> h(heads.begin(), heads.begin() + std::min<size_t>(heads.size(), kMaxHeads));
  if (h == heads_) return;
  heads_ = h;
  std::vector<PatternView> keep;
  for (const HeadRef& head : heads_)
    if (const PatternView* p = patternOf(head)) keep.push_back(*p);
  patterns_ = keep;
  rebuild();
}

const PatternView* AttentionTab::patternOf(HeadRef head) const {
  for (const PatternView& p : patterns_)
    if (p.head == head) return &p;
  return nullptr;
}

void AttentionTab::setPattern(const PatternView& view) {
  if (std::find(heads_.begin(), heads_.end(), view.head) == heads_.end()) heads_ = {view.head};
  // Patterns of another prompt than the others are replaced as they arrive.
  std::vector<PatternView> next;
  for (const HeadRef& head : heads_) {
    if (head == view.head)
      next.push_back(view);
    else if (const PatternView* p = patternOf(head); p && p->pieces == view.pieces)
      next.push_back(*p);
  }
  patterns_ = next;
  rebuild();
}

void AttentionTab::setTaskPrompts(const QStringList& prompts) {
  const QString shown = chosenPrompt();  // the prompt the patterns were asked for
  const QString chosen = pendingChoice_.isEmpty() ? shown : pendingChoice_;
  pendingChoice_.clear();
  const QSignalBlocker block(picker_);
  picker_->clear();
  picker_->addItem(kPromptTabText);
  for (int i = 0; i < prompts.size(); ++i) {
    QString label = QString("task prompt %1: %2").arg(i + 1).arg(prompts[i]);
    label.replace("\n", " ⏎ ");
    picker_->addItem(label, prompts[i]);
    picker_->setItemData(i + 1, prompts[i], Qt::ToolTipRole);
  }
  const int again = chosen.isEmpty() ? 0 : picker_->findData(chosen);
  picker_->setCurrentIndex(again < 0 ? 0 : again);
  // A choice restored before the list arrived, or one the new list no longer holds, changes the prompt.
  if (chosenPrompt() != shown) Q_EMIT promptChanged();
}

QString AttentionTab::chosenPrompt() const {
  return picker_->currentIndex() <= 0 ? QString() : picker_->currentData().toString();
}

void AttentionTab::choosePrompt(int i) {
  picker_->setCurrentIndex(i < 0 ? 0 : i + 1);
}

void AttentionTab::choosePromptText(const QString& text) {
  pendingChoice_.clear();
  const int i = text.isEmpty() ? 0 : picker_->findData(text);
  if (i >= 0)
    picker_->setCurrentIndex(i);
  else
    pendingChoice_ = text;
}

QSharedPointer<QCPAxisTickerText> AttentionTab::tokenTicker(const PatternView& v, int every) {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int t = 0; t < v.n; t += every)
    ticker->addTick(t, shortPiece(v.pieces[t]));
  return ticker;
}

void AttentionTab::applyTicks() {
  // Every label needs a line of the tick font: the x labels, rotated by 60°, a line / sin 60° of width.
  const int line = QFontMetrics(plotstyle::tickFont()).height() + 2;
  bool changed = false;
  for (int i = 0; i < plot_->plottableCount() && i < static_cast<int>(patterns_.size()); ++i) {
    const auto* map = qobject_cast<QCPColorMap*>(plot_->plottable(i));
    if (!map) continue;
    const PatternView& v = patterns_[static_cast<size_t>(i)];
    QCPAxisRect* rect = map->keyAxis()->axisRect();
    if (rect->width() < 10 || rect->height() < 10 || v.n == 0) continue;
    auto every = [&](int pixels, double pitch) {
      const int fit = std::max(1, static_cast<int>(pixels / pitch));
      return std::max(1, (v.n + fit - 1) / fit);
    };
    const int ex = every(rect->width(), line / 0.866), ey = every(rect->height(), line);
    QCPAxis* x = map->keyAxis();
    QCPAxis* y = map->valueAxis();
    if (x->property("every").toInt() != ex) {
      x->setTicker(tokenTicker(v, ex));
      x->setProperty("every", ex);
      changed = true;
    }
    if (y->property("every").toInt() != ey) {
      y->setTicker(tokenTicker(v, ey));
      y->setProperty("every", ey);
      changed = true;
    }
  }
  // This frame's ticks were made before its layout: the next frame draws the new ones (they change only
  // with the panels' sizes, so this settles at once).
  if (changed) plotstyle::replotIfSized(*plot_, QCustomPlot::rpQueuedReplot);
}

int AttentionTab::shownPositions() const {
  return patterns_.empty() ? 0 : patterns_.front().n;
}

int AttentionTab::queryPosition() const {
  const int n = shownPositions();
  if (followLast_) return n - 1;
  return n > 0 ? std::min(query_, n - 1) : query_;
}

void AttentionTab::setQueryPosition(int position) {
  followLast_ = false;
  query_ = std::max(position, -1);
  showQuery();
}

void AttentionTab::chooseQuery(int position) {
  if (!followLast_ && query_ == position) return;
  setQueryPosition(position);
  Q_EMIT queryChanged(queryPosition());
}

void AttentionTab::showQuery() {
  const int q = queryPosition();
  strip_->setQuery(q);
  for (int i = 0; i < plot_->itemCount(); ++i)
    if (auto* mark = qobject_cast<QCPItemRect*>(plot_->item(i))) {
      mark->setVisible(q >= 0);
      const double right = mark->bottomRight->coords().x();
      mark->topLeft->setCoords(-0.5, q - 0.5);
      mark->bottomRight->setCoords(right, q + 0.5);
    }
  plotstyle::replotIfSized(*plot_);
}

void AttentionTab::fitStrip() {
  const int total = split_->height() - split_->handleWidth();
  if (stripSized_ || total <= 0) return;
  const int frame = 2 * stripScroll_->frameWidth();
  const int need = strip_->heightForWidth(stripScroll_->viewport()->width()) + frame;
  const int room = std::min(static_cast<int>(total * kMaxStripShare), total - kMinMapsHeight);
  const int strip =
      room < stripScroll_->minimumHeight() ? 0 : std::clamp(need, stripScroll_->minimumHeight(), room);
  split_->setSizes({total - strip, strip});
}

void AttentionTab::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);  // the layout has given the splitter its new size
  fitStrip();
}

bool AttentionTab::eventFilter(QObject* watched, QEvent* event) {
  // A new width wraps the chips onto another number of lines (a tab laid out while hidden gets its real
  // width only when shown); sized after this resize, outside the layout pass that sent it.
  if (watched == stripScroll_->viewport() && event->type() == QEvent::Resize &&
      static_cast<QResizeEvent*>(event)->oldSize().width() !=
          static_cast<QResizeEvent*>(event)->size().width())
    QMetaObject::invokeMethod(this, &AttentionTab::fitStrip, Qt::QueuedConnection);
  return QWidget::eventFilter(watched, event);
}

void AttentionTab::rebuild() {
  plot_->clearItems();  // the row outlines live on the panels' axes, which clear() deletes
  plot_->clearPlottables();
  plot_->plotLayout()->clear();
  const int n = static_cast<int>(patterns_.size());
  std::vector<hs::TokenStripHead> stripHeads;
  for (const PatternView& v : patterns_)
    stripHeads.push_back({QString("L%1.H%2").arg(v.head.layer).arg(v.head.head), v.weights});
  strip_->setData(n > 0 ? patterns_.front().pieces : QStringList(), stripHeads);
  strip_->setQuery(queryPosition());
  fitStrip();
  if (n == 0) {
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, "Select a head in the Heads tab"));
    plotstyle::replotIfSized(*plot_);
    return;
  }
  QCPColorScale* scale = new QCPColorScale(plot_);
  scale->axis()->setLabel("attention");
  scale->setDataRange(QCPRange(0, 1));
  scale->setGradient(QCPColorGradient::gpThermal);
  for (int i = 0; i < n; ++i) {
    const PatternView& v = patterns_[static_cast<size_t>(i)];
    auto* title = new QCPTextElement(
        plot_,
        QString("L%1.H%2%3").arg(v.head.layer).arg(v.head.head).arg(v.interventions ? " (intervened)" : ""),
        plotstyle::titleFont());
    plot_->plotLayout()->addElement(0, i, title);
    auto* rect = new QCPAxisRect(plot_);
    plot_->plotLayout()->addElement(1, i, rect);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    auto* map = new QCPColorMap(x, y);
    map->setInterpolate(false);  // one crisp cell per query × key
    map->setTightBoundary(false);
    map->data()->setSize(v.n, v.n);
    map->data()->setRange(QCPRange(0, v.n - 1), QCPRange(0, v.n - 1));
    for (int q = 0; q < v.n; ++q)
      for (int k = 0; k < v.n; ++k)
        map->data()->setCell(k, q, v.weights[static_cast<size_t>(q * v.n + k)]);
    map->setColorScale(scale);
    map->setGradient(QCPColorGradient::gpThermal);
    map->setDataRange(QCPRange(0, 1));
    // A first guess of how many token labels fit; applyTicks thins them to the panel's size once it is laid
    // out.
    const int every = std::max(1, v.n / (n > 1 ? 20 : 40));
    x->setTicker(tokenTicker(v, every));
    y->setTicker(tokenTicker(v, every));
    x->setTickLabelRotation(60);
    x->setTickLabelFont(plotstyle::tickFont());
    y->setTickLabelFont(plotstyle::tickFont());
    x->setLabel("key token");
    if (i == 0) y->setLabel("query token");
    y->setRangeReversed(true);
    x->setRange(-0.5, v.n - 0.5);
    y->setRange(-0.5, v.n - 0.5);
    // The query's row, outlined (showQuery moves it).
    auto* mark = new QCPItemRect(plot_);
    mark->setClipAxisRect(rect);
    for (QCPItemPosition* corner : {mark->topLeft, mark->bottomRight})
      corner->setAxes(x, y);
    const int q = queryPosition();
    mark->topLeft->setCoords(-0.5, q - 0.5);
    mark->bottomRight->setCoords(v.n - 0.5, q + 0.5);
    mark->setPen(queryRowPen());
    mark->setBrush(Qt::NoBrush);
    mark->setSelectable(false);
    mark->setVisible(q >= 0);
  }
  plot_->plotLayout()->addElement(1, n, scale);
  scale->setMinimumSize(60, 10);
  plot_->plotLayout()->setRowStretchFactor(0, 0.01);
  plotstyle::replotIfSized(*plot_);
  note_->setText(n > 1 ? QString("%1 heads side by side").arg(n)
                       : QString("Ctrl-click heads to compare up to four"));
}

bool AttentionTab::cellAt(const QPoint& pixel, int* panel, int* q, int* k) const {
  for (int i = 0; i < static_cast<int>(patterns_.size()) && i < plot_->plottableCount(); ++i) {
    const auto* map = qobject_cast<QCPColorMap*>(plot_->plottable(i));
    if (!map || !map->keyAxis()->axisRect()->rect().contains(pixel)) continue;
    const int n = patterns_[static_cast<size_t>(i)].n;
    *panel = i;
    *k = static_cast<int>(std::lround(map->keyAxis()->pixelToCoord(pixel.x())));
    *q = static_cast<int>(std::lround(map->valueAxis()->pixelToCoord(pixel.y())));
    return *q >= 0 && *k >= 0 && *q < n && *k < n;
  }
  return false;
}

QString AttentionTab::hoverText(const QPoint& pixel) const {
  int panel = 0, q = 0, k = 0;
  if (!cellAt(pixel, &panel, &q, &k)) return {};
  const PatternView& v = patterns_[static_cast<size_t>(panel)];
  return QString("L%1.H%2  query '%3' (%4) → key '%5' (%6): %7")
      .arg(v.head.layer)
      .arg(v.head.head)
      .arg(v.pieces[q])
      .arg(q)
      .arg(v.pieces[k])
      .arg(k)
      .arg(v.weights[static_cast<size_t>(q * v.n + k)], 0, 'f', 3);
}

QPoint AttentionTab::cellCenter(int panel, int q, int k) const {
  const auto* map = qobject_cast<QCPColorMap*>(plot_->plottable(panel));
  if (!map) return {};
  return {static_cast<int>(map->keyAxis()->coordToPixel(k)),
          static_cast<int>(map->valueAxis()->coordToPixel(q))};
}

bool AttentionTab::smoothed() const {
  for (int i = 0; i < plot_->plottableCount(); ++i)
    if (const auto* map = qobject_cast<QCPColorMap*>(plot_->plottable(i)); map && map->interpolate())
      return true;
  return false;
}

void AttentionTab::onMouseMove(QMouseEvent* event) {
  const QString text = hoverText(event->pos());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

}  // namespace hs::gui
