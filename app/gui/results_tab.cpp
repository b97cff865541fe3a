#include "results_tab.h"

#include "eliding_label.h"

#include <QGridLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "analysis/framework/registry.h"
#include "curve_view.h"
#include "head_grid_view.h"
#include "plot_style.h"
#include "qcustomplot_include.h"
#include "results/table_columns.h"
#include "run_label.h"

namespace hs::gui {

namespace {
// The colour a class label names ("green", "Gray", "light blue"), invalid for any other label.
QColor labelColor(const QString& label) {
  QString name = label.trimmed().toLower();
  name.remove(' ');
  return QColor::isValidColorName(name) && !name.startsWith('#') ? QColor::fromString(name) : QColor();
}

// The first of `names` the table has as a column, or -1.
int columnOf(const Table& t, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const int c = columnIndex(t, n); c >= 0) return c;
  return -1;
}
}  // namespace

ProjectionView::ProjectionView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot;
  plotstyle::applyBaseStyle(*plot_);
  // One legend entry per label word (up to a dozen): beside the axis rect, where it hides no point.
  plot_->legend->setVisible(true);
  // Top-aligned: an empty element below the legend takes the column's spare height.
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  auto* side = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(0, 1, side);
  plot_->plotLayout()->setColumnStretchFactor(1, 0.001);
  side->addElement(0, 0, plot_->legend);
  side->addElement(1, 0, new QCPLayoutElement(plot_));
  side->setRowStretchFactor(0, 0.001);
  side->setMargins(QMargins(4, 8, 8, 8));
  plot_->legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
  // In a short panel the entries go into more columns rather than be squeezed (their text cut).
  connect(plot_, &QCustomPlot::beforeReplot, this, [this] {
    QCPLegend& legend = *plot_->legend;
    if (plot_->height() > 0)
      plotstyle::wrapLegendToRoom(legend, QCPLayoutGrid::foRowsFirst,
                                  plot_->height() - 16 - legend.margins().top() - legend.margins().bottom());
  });
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  layout->addWidget(plot_);
}

bool ProjectionView::setTable(const Table& t) {
  plot_->clearGraphs();
  const int cx = columnOf(t, {"x", "pc1", "component_1"}), cy = columnOf(t, {"y", "pc2", "component_2"});
  const int cl = columnOf(t, {"gold_word", "label", "gold", "gold_label"});
  if (cx < 0 || cy < 0) return false;
  // One graph per gold label so each gets its own colour and legend entry.
  std::map<std::string, std::pair<QVector<double>, QVector<double>>> byLabel;
  for (const auto& row : t.rows) {
    if (static_cast<int>(row.size()) <= std::max(cx, cy) || !row[cx].is_number() || !row[cy].is_number())
      continue;
    std::string label = "all";
    if (cl >= 0 && cl < static_cast<int>(row.size()))
      label = row[cl].is_string() ? row[cl].get<std::string>() : row[cl].dump();
    byLabel[label].first.push_back(row[cx].get<double>());
    byLabel[label].second.push_back(row[cy].get<double>());
  }
  int i = 0;
  for (const auto& [label, xy] : byLabel) {
    QCPGraph* g = plot_->addGraph();
    const QString name = QString::fromStdString(label);
    g->setName(name);
    g->setLineStyle(QCPGraph::lsNone);
    // A class named after a colour ("green", "gray") is drawn in that colour, with a darker rim so that light
    // ones ("white", "yellow") stay visible; other classes take the series colours in turn.
    const QColor named = labelColor(name);
    const QColor fill = named.isValid() ? named : plotstyle::seriesColor(i++);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QPen(fill.darker(140)), QBrush(fill), 7));
    g->setData(xy.first, xy.second);
  }
  plot_->xAxis->setLabel(QString::fromStdString(t.columns[static_cast<size_t>(cx)]));
  plot_->yAxis->setLabel(QString::fromStdString(t.columns[static_cast<size_t>(cy)]));
  plot_->rescaleAxes();
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    plotstyle::padAxisRange(*axis, 0.05);
  plotstyle::replotIfSized(*plot_);
  return true;
}

ResultsTab::ResultsTab(std::vector<Panel> panels, int columns, QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  for (size_t i = 0; i < panels.size(); ++i) {
    Slot s;
    s.panel = panels[i];
    auto* box = new QWidget;
    auto* bl = new QVBoxLayout(box);
    bl->setContentsMargins(4, 4, 4, 4);
    s.title = new ElidedLabel;
    QFont bold = s.title->font();
    bold.setBold(true);
    s.title->setFont(bold);
    setTitle(s, QString::fromStdString(s.panel.id));
    bl->addWidget(s.title);
    s.stack = new QStackedWidget;
    s.placeholder = new QLabel(s.panel.placeholder);
    s.placeholder->setAlignment(Qt::AlignCenter);
    s.placeholder->setWordWrap(true);
    s.placeholder->setStyleSheet("color:#777; border:1px dashed #bbb; font-size:13px");
    s.stack->addWidget(s.placeholder);
    QCustomPlot* plot = nullptr;
    if (s.panel.kind == Kind::Curve) {
      s.curve = new CurveView;
      s.stack->addWidget(s.curve);
      plot = s.curve->plot();
    } else if (s.panel.kind == Kind::Grid) {
      s.grid = new HeadGridView;
      s.stack->addWidget(s.grid);
      plot = s.grid->plot();
    } else {
      s.projection = new ProjectionView;
      s.stack->addWidget(s.projection);
      plot = s.projection->plot();
    }
    connect(plot, &QCustomPlot::mousePress, this, [this, i] { focused_ = static_cast<int>(i); });
    bl->addWidget(s.stack, 1);
    grid->addWidget(box, static_cast<int>(i) / columns, static_cast<int>(i) % columns);
    panels_.push_back(s);
  }
}

void ResultsTab::addLivePoint(const std::string& panelId, const QString& curve, int step, double value) {
  const std::string id = curve.toStdString();
  if (live_.series.empty() || live_.series.front().first != id ||
      (!live_.x.empty() && step <= live_.x.back())) {
    live_ = Curve{};
    live_.id = "live";
    live_.name = "Training loss (live): " + id;
    live_.x_label = "step";
    live_.y_label = "loss";
    live_.series = {{id, {}}};
  }
  livePanel_ = panelId;
  live_.x.push_back(step);
  live_.series.front().second.push_back(value);
  if (!liveTimer_) {
    liveTimer_ = new QTimer(this);
    liveTimer_->setSingleShot(true);
    liveTimer_->setInterval(150);
    connect(liveTimer_, &QTimer::timeout, this, &ResultsTab::drawLive);
  }
  if (!liveTimer_->isActive()) liveTimer_->start();
}

void ResultsTab::drawLive() {
  for (Slot& s : panels_)
    if (s.panel.id == livePanel_ && s.curve) {
      s.curve->setCurve(live_);
      s.stack->setCurrentIndex(1);
      setTitle(s, QString("live · %1 · step %2")
                      .arg(QString::fromStdString(live_.series.front().first))
                      .arg(live_.x.empty() ? 0 : static_cast<int>(live_.x.back())));
    }
}

void ResultsTab::setTitle(Slot& s, const QString& source) {
  s.title->setFullText(s.panel.title + "  ·  " + source);
}

void ResultsTab::setRuns(const std::vector<AnalysisRun>& runs) {
  for (Slot& s : panels_) {
    s.filled = false;
    const Provenance* from = nullptr;
    const AnalysisRun* fromRun = nullptr;
    for (auto run = runs.rbegin(); run != runs.rend() && !s.filled; ++run) {
      if (s.panel.kind == Kind::Curve) {
        for (const Curve& c : run->curves)
          if (c.id == s.panel.id) {
            s.curve->setCurve(c);
            s.filled = true;
            from = &c.provenance;
            break;
          }
      } else if (s.panel.kind == Kind::Grid) {
        for (const HeadGrid& g : run->grids)
          if (g.id == s.panel.id) {
            s.grid->setGrid(g);
            s.filled = true;
            from = &g.provenance;
            break;
          }
      } else {
        for (const Table& t : run->tables)
          if (t.id == s.panel.id && s.projection->setTable(t)) {
            s.filled = true;
            from = &t.provenance;
            break;
          }
      }
      if (s.filled) fromRun = &*run;
    }
    // Which run and task the panel shows: the task-vector views may run on another task than the dock's.
    QString source = QString::fromStdString(s.panel.id);
    if (s.filled) {
      source = runDisplayLabel(*fromRun);
      if (from && from->n_prompts > 0) source += QString(" · %1 prompts").arg(from->n_prompts);
    }
    setTitle(s, source);
    s.stack->setCurrentIndex(s.filled ? 1 : 0);
  }
}

bool ResultsTab::isFilled(int panel) const {
  return panel >= 0 && panel < panelCount() && panels_[static_cast<size_t>(panel)].filled;
}

QCustomPlot* ResultsTab::plotOf(int panel) const {
  if (!isFilled(panel)) return nullptr;
  const Slot& s = panels_[static_cast<size_t>(panel)];
  return s.curve ? s.curve->plot() : s.grid ? s.grid->plot() : s.projection->plot();
}

QCustomPlot* ResultsTab::currentPlot() const {
  if (QCustomPlot* p = plotOf(focused_)) return p;
  for (int i = 0; i < panelCount(); ++i)
    if (QCustomPlot* p = plotOf(i)) return p;
  return nullptr;
}

int ResultsTab::panelIndex(const std::string& id) const {
  for (size_t i = 0; i < panels_.size(); ++i)
    if (panels_[i].panel.id == id) return static_cast<int>(i);
  return -1;
}

ResultsTab* makePanelTab(const std::string& tab) {
  std::vector<ResultsTab::Panel> panels;
  for (const MethodInfo& m : methods())
    for (const OutputSpec& o : m.outputs) {
      if (o.panel != tab) continue;
      const ResultsTab::Kind kind = o.kind == OutputSpec::Kind::Grid    ? ResultsTab::Kind::Grid
                                    : o.kind == OutputSpec::Kind::Curve ? ResultsTab::Kind::Curve
                                                                        : ResultsTab::Kind::Projection;
      const QString title = QString::fromStdString(o.panel_title.empty() ? o.id : o.panel_title);
      panels.push_back({o.id, kind, title,
                        QString("Run %1 to fill this:\n%2")
                            .arg(QString::fromStdString(m.title), QString::fromStdString(o.meaning))});
    }
  return new ResultsTab(std::move(panels));
}

ResultsTab* makeGeometryTab() {
  return makePanelTab("Geometry");
}

ResultsTab* makeTaskVectorsTab() {
  return makePanelTab("Task vectors");
}

}  // namespace hs::gui
