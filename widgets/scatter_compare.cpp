#include "scatter_compare.h"

#include <QMouseEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <set>

#include "qcustomplot_include.h"

#include "plot_style.h"
#include "results/rank_stats.h"

namespace hs {

namespace {

QString displayName(const HeadGrid& g) {
  QString s = QString::fromStdString(g.name.empty() ? g.id : g.name);
  if (!g.unit.empty()) s += QStringLiteral(" [%1]").arg(QString::fromStdString(g.unit));
  return s;
}

QString fmt(double v) {
  return std::isfinite(v) ? QString::number(v, 'f', 3) : QStringLiteral("n/a");
}

}  // namespace

ScatterCompare::ScatterCompare(QWidget* parent) : QWidget(parent) {
  plot_ = plotstyle::addPlot(*this);
  plot_->setMouseTracking(true);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->insertRow(1);
  title_ = new QCPTextElement(plot_, QString(), plotstyle::titleFont());
  stats_ = new QCPTextElement(plot_, QString(), plotstyle::labelFont());
  plot_->plotLayout()->addElement(0, 0, title_);
  plotstyle::keepTextFitting(*plot_, *title_);
  plot_->plotLayout()->addElement(1, 0, stats_);
  plotstyle::keepTextFitting(*plot_, *stats_);
  // The legend sits below the axis rect, in two columns: inside it, even in its emptiest corner, it covered
  // the top heads whenever every corner held points.
  plot_->legend->setVisible(true);
  plot_->legend->setFont(plotstyle::tickFont());
  plot_->legend->setBrush(Qt::NoBrush);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->addElement(3, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(3, 0.001);
  plot_->legend->setWrap(2);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setMargins(QMargins(4, 0, 4, 2));
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    axis->grid()->setPen(QPen(QColor(225, 225, 225)));
  connect(plot_, &QCustomPlot::mouseMove, this, &ScatterCompare::onMouseMove);
  connect(plot_, &QCustomPlot::beforeReplot, this, &ScatterCompare::fitToWidth);
}

void ScatterCompare::fitToWidth() {
  QCPLegend& legend = *plot_->legend;
  plotstyle::wrapLegendToRoom(legend, QCPLayoutGrid::foColumnsFirst,
                              plot_->width() - legend.margins().left() - legend.margins().right(), 2);
  // The axes' lengths come from the layout with the legend as it now is (what replot computes next: the
  // labels' length along their axes does not change it).
  plot_->xAxis->setLabel(displayName(a_));  // a label's thickness is in its axis's margin
  plot_->yAxis->setLabel(displayName(b_));
  for (auto phase :
       {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
    plot_->plotLayout()->update(phase);
  const QRect axes = plot_->axisRect()->rect();
  const QFontMetrics label(plot_->xAxis->labelFont());
  plot_->xAxis->setLabel(label.elidedText(displayName(a_), Qt::ElideRight, std::max(40, axes.width())));
  plot_->yAxis->setLabel(label.elidedText(displayName(b_), Qt::ElideRight, std::max(40, axes.height())));
}

void ScatterCompare::setGrids(const HeadGrid& a, const HeadGrid& b, int k) {
  a_ = a;
  b_ = b;
  kRequested_ = k;
  rebuild();
}

void ScatterCompare::setK(int k) {
  kRequested_ = k;
  rebuild();
}

QString ScatterCompare::statsText() const {
  return QStringLiteral("Spearman ρ = %1    Kendall τ = %2    Jaccard@%3 = %4")
      .arg(fmt(spearman_), fmt(kendall_))
      .arg(kEffective_)
      .arg(fmt(jaccard_));
}

void ScatterCompare::rebuild() {
  plot_->clearGraphs();
  hasData_ = false;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  spearman_ = kendall_ = jaccard_ = nan;
  // Two lines: grid names are long ("Task recognition ‖P a‖ [norm]") and the scatter shares its row.
  title_->setText(displayName(a_) + QStringLiteral("\nvs  ") + displayName(b_));

  const int n = a_.layers() * a_.heads();
  if (a_.layers() != b_.layers() || a_.heads() != b_.heads() || n == 0) {
    stats_->setText(n == 0 && a_.values.size() == b_.values.size()
                        ? QStringLiteral("no heads to compare")
                        : QStringLiteral("cannot compare: grids of %1×%2 and %3×%4 heads")
                              .arg(a_.layers())
                              .arg(a_.heads())
                              .arg(b_.layers())
                              .arg(b_.heads()));
    plotstyle::replotIfSized(*plot_);
    return;
  }
  kEffective_ = kRequested_ > 0 ? std::min(kRequested_, n) : topPercentCount(n, 5.0);
  try {
    spearman_ = spearmanRho(a_, b_);
    kendall_ = kendallTauB(a_, b_);
    jaccard_ = hs::jaccardAtK(a_, b_, kEffective_);
  } catch (const std::exception& e) {
    stats_->setText(QString::fromUtf8(e.what()));
    plotstyle::replotIfSized(*plot_);
    return;
  }
  hasData_ = true;
  stats_->setText(statsText());

  // Four groups by top-k membership, drawn least interesting first so the top heads stay on top.
  const std::vector<HeadRef> topA = topHeads(a_, kEffective_), topB = topHeads(b_, kEffective_);
  const std::set<HeadRef> inA(topA.begin(), topA.end()), inB(topB.begin(), topB.end());
  struct Group {
    QString name;
    QColor color;
    QVector<double> x, y;
  };
  Group groups[4] = {{QStringLiteral("other heads"), QColor(150, 150, 150), {}, {}},
                     {QStringLiteral("top-%1 of x only").arg(kEffective_), plotstyle::seriesColor(0), {}, {}},
                     {QStringLiteral("top-%1 of y only").arg(kEffective_), plotstyle::seriesColor(1), {}, {}},
                     {QStringLiteral("top-%1 of both").arg(kEffective_), plotstyle::seriesColor(3), {}, {}}};
  for (int l = 0; l < a_.layers(); ++l) {
    for (int h = 0; h < a_.heads(); ++h) {
      const double x = a_.values(l, h), y = b_.values(l, h);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const int g = (inA.count({l, h}) ? 1 : 0) + (inB.count({l, h}) ? 2 : 0);
      groups[g].x.push_back(x);
      groups[g].y.push_back(y);
    }
  }
  for (Group& g : groups) {
    QCPGraph* graph = plot_->addGraph();
    graph->setName(g.name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, g.color, g.color, 6));
    graph->setData(g.x, g.y, /*alreadySorted=*/false);
    if (g.x.isEmpty()) graph->removeFromLegend();
  }
  plot_->rescaleAxes();
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    plotstyle::padAxisRange(*axis, 0.06);
  plotstyle::replotIfSized(*plot_);
}

std::optional<HeadRef> ScatterCompare::headNear(const QPoint& p, double radius) const {
  if (!hasData_) return std::nullopt;
  std::optional<HeadRef> best;
  double bestD2 = radius * radius;
  for (int l = 0; l < a_.layers(); ++l) {
    for (int h = 0; h < a_.heads(); ++h) {
      const double x = a_.values(l, h), y = b_.values(l, h);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const double dx = plot_->xAxis->coordToPixel(x) - p.x(), dy = plot_->yAxis->coordToPixel(y) - p.y();
      if (dx * dx + dy * dy <= bestD2) {
        bestD2 = dx * dx + dy * dy;
        best = HeadRef{l, h};
      }
    }
  }
  return best;
}

QPoint ScatterCompare::pointCenter(HeadRef head) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(a_.values(head.layer, head.head)))),
                static_cast<int>(std::lround(plot_->yAxis->coordToPixel(b_.values(head.layer, head.head)))));
}

void ScatterCompare::onMouseMove(QMouseEvent* event) {
  const std::optional<HeadRef> head = headNear(event->position().toPoint());
  if (!head) {
    plot_->setToolTip(QString());
    QToolTip::hideText();
    return;
  }
  const QString text = QStringLiteral("layer %1, head %2: x = %3, y = %4")
                           .arg(head->layer)
                           .arg(head->head)
                           .arg(a_.values(head->layer, head->head), 0, 'g', 4)
                           .arg(b_.values(head->layer, head->head), 0, 'g', 4);
  plot_->setToolTip(text);
  QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

}  // namespace hs
