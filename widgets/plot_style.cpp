#include "plot_style.h"

#include <QFontMetrics>
#include <QResizeEvent>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>

namespace hs::plotstyle {

QCPColorGradient sequentialGradient() {
  // viridis sampled at 9 evenly spaced points.
  static const std::array<const char*, 9> stops = {"#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c",
                                                   "#28ae80", "#5ec962", "#addc30", "#fde725"};
  QCPColorGradient g;
  g.clearColorStops();
  for (size_t i = 0; i < stops.size(); ++i)
    g.setColorStopAt(double(i) / double(stops.size() - 1), QColor(stops[i]));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(QColor(200, 200, 200));
  return g;
}

QCPColorGradient divergingGradient() {
  static const std::array<const char*, 9> stops = {"#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7",
                                                   "#fddbc7", "#f4a582", "#d6604d", "#b2182b"};
  QCPColorGradient g;
  g.clearColorStops();
  for (size_t i = 0; i < stops.size(); ++i)
    g.setColorStopAt(double(i) / double(stops.size() - 1), QColor(stops[i]));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(QColor(200, 200, 200));
  return g;
}

QColor seriesColor(int i) {
  static const std::array<const char*, 10> tab10 = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return QColor(tab10[static_cast<size_t>(std::max(i, 0)) % tab10.size()]);
}

int integerTickStep(int count, int maxTicks) {
  maxTicks = std::max(maxTicks, 1);
  for (int decade = 1;; decade *= 10) {
    for (int m : {1, 2, 5}) {
      const int step = m * decade;
      if ((count + step - 1) / step <= maxTicks) return step;
    }
  }
}

QSharedPointer<QCPAxisTicker> integerTicker(int count, int maxTicks) {
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(integerTickStep(count, maxTicks));
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssNone);
  ticker->setTickOrigin(0);
  return ticker;
}

QFont titleFont() {
  QFont f;
  f.setPointSizeF(11);
  f.setBold(true);
  return f;
}

QFont labelFont() {
  QFont f;
  f.setPointSizeF(10);
  return f;
}

QFont tickFont() {
  QFont f;
  f.setPointSizeF(9);
  return f;
}

namespace {
// Swallows a plot's resize to an empty size, whose handler would replot into an empty buffer.
class EmptyResizeFilter : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject*, QEvent* event) override {
    return event->type() == QEvent::Resize && static_cast<QResizeEvent*>(event)->size().isEmpty();
  }
};
}  // namespace

void skipEmptyResizes(QCustomPlot& plot) {
  plot.installEventFilter(new EmptyResizeFilter(&plot));
}

void applyBaseStyle(QCustomPlot& plot) {
  for (QCPAxis* axis : plot.axisRect()->axes()) {
    axis->setLabelFont(labelFont());
    axis->setTickLabelFont(tickFont());
  }
  plot.setBackground(Qt::white);
  skipEmptyResizes(plot);
}

QCustomPlot* addPlot(QWidget& host) {
  auto* plot = new QCustomPlot(&host);
  auto* layout = new QVBoxLayout(&host);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot);
  applyBaseStyle(*plot);
  return plot;
}

QCPTextElement* addTitle(QCustomPlot& plot) {
  plot.plotLayout()->insertRow(0);
  auto* title = new QCPTextElement(&plot, QString(), titleFont());
  plot.plotLayout()->addElement(0, 0, title);
  keepTextFitting(plot, *title, kTitleLines);
  return title;
}

void styleCellAxis(QCPAxis& axis) {
  axis.grid()->setVisible(false);  // grid lines would cut through the cells
  axis.setSubTicks(false);
  axis.setTickLength(0, 4);
}

QCPColorMap* addCellMap(QCustomPlot& plot, QCPColorScale** scale) {
  auto* map = new QCPColorMap(plot.xAxis, plot.yAxis);
  map->setInterpolate(false);  // one crisp cell per coordinate
  map->setTightBoundary(false);
  auto* bar = new QCPColorScale(&plot);
  bar->setType(QCPAxis::atRight);
  bar->setBarWidth(14);
  bar->axis()->setLabelFont(labelFont());
  bar->axis()->setTickLabelFont(tickFont());
  map->setColorScale(bar);
  *scale = bar;
  return map;
}

void alignColorScale(QCustomPlot& plot, QCPColorScale& scale) {
  auto* group = new QCPMarginGroup(&plot);
  plot.axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale.setMarginGroup(QCP::msTop | QCP::msBottom, group);
}

void padAxisRange(QCPAxis& axis, double fraction) {
  const QCPRange r = axis.range();
  const double pad = r.size() > 0 ? r.size() * fraction : std::max(std::abs(r.center()) * 0.1, 0.5);
  axis.setRange(r.lower - pad, r.upper + pad);
}

bool placeLegendInEmptiestCorner(QCustomPlot& plot) {
  // The legend's share of the axis rect, from its size hint; at least a fifth in each direction.
  const QRect area = plot.axisRect()->rect();
  const QSize legend = plot.legend->minimumOuterSizeHint();
  // Before the first layout the rect is meaningless: assume a typical legend of 40 % × 30 %.
  const bool laidOut = area.width() > 50 && area.height() > 50;
  const double fw = laidOut ? std::clamp(double(legend.width() + 10) / area.width(), 0.2, 1.0) : 0.4;
  const double fh = laidOut ? std::clamp(double(legend.height() + 10) / area.height(), 0.2, 1.0) : 0.3;
  const QCPRange xr = plot.xAxis->range();
  const Qt::Alignment corners[4] = {Qt::AlignTop | Qt::AlignRight, Qt::AlignTop | Qt::AlignLeft,
                                    Qt::AlignBottom | Qt::AlignRight, Qt::AlignBottom | Qt::AlignLeft};
  int counts[4] = {0, 0, 0, 0};
  for (int g = 0; g < plot.graphCount(); ++g) {
    const QCPRange yr = plot.graph(g)->valueAxis()->range();  // yAxis or yAxis2
    for (auto it = plot.graph(g)->data()->constBegin(); it != plot.graph(g)->data()->constEnd(); ++it) {
      if (!std::isfinite(it->key) || !std::isfinite(it->value)) continue;
      // Position in the axis rect as fractions: u from the left, v from the top.
      const double u = (it->key - xr.lower) / xr.size();
      const double v = 1.0 - (it->value - yr.lower) / yr.size();
      for (int c = 0; c < 4; ++c) {
        const bool right = corners[c] & Qt::AlignRight, top = corners[c] & Qt::AlignTop;
        const bool inU = right ? u >= 1.0 - fw : u <= fw;
        const bool inV = top ? v <= fh : v >= 1.0 - fh;
        counts[c] += (inU && inV) ? 1 : 0;
      }
    }
  }
  const int best = static_cast<int>(std::min_element(counts, counts + 4) - counts);
  QCPLayoutInset* inset = plot.axisRect()->insetLayout();
  if (inset->insetAlignment(0) == corners[best]) return false;
  inset->setInsetAlignment(0, corners[best]);
  return true;
}

void keepLegendInEmptiestCorner(QCustomPlot& plot) {
  // afterLayout comes between layout and drawing: re-laying out just the inset layout moves the legend
  // in the frame being drawn.
  QObject::connect(&plot, &QCustomPlot::afterLayout, &plot, [p = &plot] {
    if (p->legend->visible() && placeLegendInEmptiestCorner(*p)) {
      p->axisRect()->insetLayout()->update(QCPLayoutElement::upLayout);
    }
  });
}

void wrapLegendToRoom(QCPLegend& legend, QCPLayoutGrid::FillOrder order, int room, int maxLines) {
  const bool columns = order == QCPLayoutGrid::foColumnsFirst;
  // The grid's cells, some of them empty once the items have been wrapped.
  int items = 0, largest = 0;
  for (int i = 0; i < legend.elementCount(); ++i)
    if (const QCPAbstractLegendItem* item = legend.item(i)) {
      ++items;
      const QSize size = item->minimumOuterSizeHint();
      largest = std::max(largest, columns ? size.width() : size.height());
    }
  if (items == 0) return;
  const int spacing = columns ? legend.columnSpacing() : legend.rowSpacing();
  const int lines =
      std::clamp(std::max(1, room) / std::max(1, largest + spacing), 1, std::min(maxLines, items));
  if (legend.wrap() == lines && (columns ? legend.columnCount() : legend.rowCount()) <= lines) return;
  legend.setWrap(lines);
  legend.setFillOrder(order, true);  // re-flows the items into the lines
}

QString fitText(const QString& text, const QFont& font, int width) {
  const QFontMetrics fm(font);
  auto fits = [&](const QString& s) { return fm.horizontalAdvance(s) <= width; };
  QStringList out;
  for (const QString& line : text.split('\n')) {
    if (fits(line)) {
      out << line;
      continue;
    }
    // The coarsest separator that splits the line; pieces are joined greedily while they fit.
    QString sep;
    for (const char* s : {"    ", " · ", ", ", " "})
      if (line.contains(QString::fromUtf8(s))) {
        sep = QString::fromUtf8(s);
        break;
      }
    const QStringList pieces = sep.isEmpty() ? QStringList{line} : line.split(sep);
    QString current;
    const QString joiner = sep.trimmed().isEmpty() ? QStringLiteral(" ") : sep;
    for (const QString& piece : pieces) {
      const QString candidate = current.isEmpty() ? piece : current + joiner + piece;
      if (current.isEmpty() || fits(candidate)) {
        current = candidate;
      } else {
        out << fm.elidedText(current, Qt::ElideRight, width);
        current = piece;
      }
    }
    out << fm.elidedText(current, Qt::ElideRight, width);
  }
  return out.join('\n');
}

void keepTextFitting(QCustomPlot& plot, QCPTextElement& element, int maxLines) {
  QObject::connect(&plot, &QCustomPlot::beforeReplot, &element, [p = &plot, e = &element, maxLines] {
    const QString shown = e->text();
    if (shown != e->property("hsFitted").toString()) e->setProperty("hsFull", shown);  // set by the owner
    const QString full = e->property("hsFull").toString();
    const int width = std::max(40, p->width() - 12);
    QString fitted = fitText(full, e->font(), width);
    QStringList lines = fitted.split('\n');
    if (maxLines > 0 && lines.size() > maxLines) {  // the rest joins the last line, elided
      const QString rest = lines.mid(maxLines - 1).join(' ');
      lines = lines.mid(0, maxLines - 1);
      lines << QFontMetrics(e->font()).elidedText(rest, Qt::ElideRight, width);
      fitted = lines.join('\n');
    }
    e->setProperty("hsFitted", fitted);
    if (fitted != shown) e->setText(fitted);
  });
}

void replotIfSized(QCustomPlot& plot, QCustomPlot::RefreshPriority priority) {
  if (plot.width() > 0 && plot.height() > 0) plot.replot(priority);
}

}  // namespace hs::plotstyle
