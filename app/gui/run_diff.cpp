#include "run_diff.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/framework/registry.h"
#include "curve_view.h"
#include "head_grid_view.h"
#include "results/rank_stats.h"
#include "run_label.h"
#include "util/error.h"

namespace hs::gui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString valueText(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_number_float()) return QString::number(v.get<double>(), 'g', 6);
  return QString::fromStdString(v.dump());
}

QString gridLabel(const HeadGrid& g) {
  return QString::fromStdString(g.name.empty() ? g.id : g.name + " (" + g.id + ")");
}

// The series of `c` by label.
const std::vector<double>* seriesOf(const Curve& c, const std::string& label) {
  for (const auto& [l, ys] : c.series)
    if (l == label) return &ys;
  return nullptr;
}

}  // namespace

HeadGrid gridDifference(const HeadGrid& a, const HeadGrid& b) {
  if (a.layers() != b.layers() || a.heads() != b.heads())
    fail("grids ", a.id, " [", a.layers(), " x ", a.heads(), "] and ", b.id, " [", b.layers(), " x ",
         b.heads(), "]: A − B needs the same layers x heads shape");
  HeadGrid d;
  d.id = a.id + ".difference";
  d.name = "A − B: " + (a.name.empty() ? a.id : a.name);
  d.unit = a.unit.empty() ? std::string() : "Δ " + a.unit;
  d.values = a.values - b.values;  // NaN where either is NaN
  d.provenance = a.provenance;
  return d;
}

Curve curveOverlay(const Curve& a, const Curve& b) {
  Curve c;
  c.id = a.id;
  c.name = a.name.empty() ? a.id : a.name;
  c.x_label = a.x_label;
  c.y_label = a.y_label;
  std::set<double> xs(a.x.begin(), a.x.end());
  xs.insert(b.x.begin(), b.x.end());
  c.x.assign(xs.begin(), xs.end());
  for (const auto& [which, curve] : {std::pair<const char*, const Curve*>{"A", &a}, {"B", &b}})
    for (const auto& [label, ys] : curve->series) {
      std::vector<double> out(c.x.size(), kNaN);
      for (size_t i = 0; i < curve->x.size() && i < ys.size(); ++i)
        out[static_cast<size_t>(std::lower_bound(c.x.begin(), c.x.end(), curve->x[i]) - c.x.begin())] = ys[i];
      c.series.emplace_back(std::string(which) + ": " + label, out);
    }
  return c;
}

Curve curveDifference(const Curve& a, const Curve& b) {
  Curve d;
  d.id = a.id + ".difference";
  d.name = "A − B: " + (a.name.empty() ? a.id : a.name);
  d.x_label = a.x_label;
  d.y_label = a.y_label.empty() ? std::string("A − B") : "Δ " + a.y_label;
  std::map<double, size_t> inB;
  for (size_t i = 0; i < b.x.size(); ++i)
    inB.emplace(b.x[i], i);
  std::vector<std::pair<size_t, size_t>> at;  // (index in a, index in b) of the shared x values
  for (size_t i = 0; i < a.x.size(); ++i)
    if (auto it = inB.find(a.x[i]); it != inB.end()) {
      d.x.push_back(a.x[i]);
      at.emplace_back(i, it->second);
    }
  for (const auto& [label, ya] : a.series) {
    const std::vector<double>* yb = seriesOf(b, label);
    if (!yb) continue;
    std::vector<double> ys;
    for (const auto& [i, j] : at)
      ys.push_back(i < ya.size() && j < yb->size() ? ya[i] - (*yb)[j] : kNaN);
    d.series.emplace_back("A − B: " + label, ys);
  }
  return d;
}

std::vector<std::pair<QString, QString>> flatOptions(const AnalysisRun& run) {
  std::vector<std::pair<QString, QString>> out;
  out.emplace_back("method", QString::fromStdString(run.method));
  out.emplace_back("model", QString::fromStdString(run.provenance.model));
  if (!run.options.is_object() || !run.options.contains("seed"))  // the run's seed, where no option names it
    out.emplace_back("seed", QString::number(run.provenance.seed));
  if (!run.options.is_object()) return out;
  for (const auto& [key, v] : run.options.items()) {
    if (v.is_object()) {
      for (const auto& [k2, v2] : v.items())
        out.emplace_back(QString::fromStdString(key + "." + k2), valueText(v2));
    } else {
      out.emplace_back(QString::fromStdString(key), valueText(v));
    }
  }
  return out;
}

RunDiffView::RunDiffView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  a_ = new QComboBox;
  b_ = new QComboBox;
  for (QComboBox* box : {a_, b_}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(20);
  }
  auto* swap = new QPushButton(tr("Swap"));
  swap->setToolTip(tr("Exchange A and B"));
  bar->addWidget(new QLabel(tr("Run A")));
  bar->addWidget(a_, 1);
  bar->addWidget(swap);
  bar->addWidget(new QLabel(tr("Run B")));
  bar->addWidget(b_, 1);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal);
  auto* left = new QWidget;
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  optionsNote_ = new QLabel;
  optionsNote_->setWordWrap(true);
  ll->addWidget(optionsNote_);
  options_ = new QTableWidget;
  options_->setColumnCount(3);
  options_->setHorizontalHeaderLabels({tr("Option"), tr("A"), tr("B")});
  options_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  options_->verticalHeader()->hide();
  options_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  options_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  options_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
  options_->setWordWrap(false);
  options_->setTextElideMode(Qt::ElideMiddle);
  ll->addWidget(options_, 1);
  split->addWidget(left);

  resultTabs_ = new QTabWidget;
  auto* gridPage = new QWidget;
  auto* gl = new QVBoxLayout(gridPage);
  auto* gbar = new QHBoxLayout;
  grid_ = new QComboBox;
  grid_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  grid_->setMinimumContentsLength(16);
  gbar->addWidget(new QLabel(tr("Grid")));
  gbar->addWidget(grid_, 1);
  gl->addLayout(gbar);
  gridNote_ = new QLabel;
  gridNote_->setWordWrap(true);
  gl->addWidget(gridNote_);
  diffView_ = new HeadGridView;
  diffView_->setMenuEnabled(false);
  gl->addWidget(diffView_, 1);
  resultTabs_->addTab(gridPage, tr("Grid A − B"));

  auto* curvePage = new QWidget;
  auto* cl = new QVBoxLayout(curvePage);
  auto* cbar = new QHBoxLayout;
  curve_ = new QComboBox;
  curve_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  curve_->setMinimumContentsLength(16);
  cbar->addWidget(new QLabel(tr("Curve")));
  cbar->addWidget(curve_, 1);
  cl->addLayout(cbar);
  curveNote_ = new QLabel;
  curveNote_->setWordWrap(true);
  cl->addWidget(curveNote_);
  auto* curves = new QSplitter(Qt::Vertical);
  overlayView_ = new CurveView;
  curveDiffView_ = new CurveView;
  curves->addWidget(overlayView_);
  curves->addWidget(curveDiffView_);
  cl->addWidget(curves, 1);
  resultTabs_->addTab(curvePage, tr("Curves A, B and A − B"));
  split->addWidget(resultTabs_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setSizes({2000, 3000});  // the options table gets two fifths of the width
  layout->addWidget(split, 1);

  connect(a_, &QComboBox::currentIndexChanged, this, &RunDiffView::pairChanged);
  connect(b_, &QComboBox::currentIndexChanged, this, &RunDiffView::pairChanged);
  connect(grid_, &QComboBox::currentIndexChanged, this, &RunDiffView::showGrid);
  connect(curve_, &QComboBox::currentIndexChanged, this, &RunDiffView::showCurve);
  connect(swap, &QPushButton::clicked, this, [this] { setPair(runB(), runA()); });
  for (QComboBox* box : {a_, b_})
    connect(box, &QComboBox::currentIndexChanged, box, [box] { box->setToolTip(box->currentText()); });
}

void RunDiffView::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keepA = runA(), keepB = runB();
  runs_ = runs;
  {
    const QSignalBlocker b1(a_), b2(b_);
    a_->clear();
    b_->clear();
    for (const AnalysisRun& r : runs_) {
      const QString label = QString::fromStdString(r.id) + " · " + runDisplayLabel(r);
      a_->addItem(label, QString::fromStdString(r.id));
      b_->addItem(label, QString::fromStdString(r.id));
    }
    const int ia = a_->findData(keepA), ib = b_->findData(keepB);
    a_->setCurrentIndex(ia >= 0 ? ia : std::max(0, a_->count() - 2));
    b_->setCurrentIndex(ib >= 0 ? ib : a_->count() - 1);
  }
  pairChanged();
}

bool RunDiffView::setPair(const QString& runA, const QString& runB) {
  const int ia = a_->findData(runA), ib = b_->findData(runB);
  if (ia < 0 || ib < 0) return false;
  {
    const QSignalBlocker b1(a_), b2(b_);
    a_->setCurrentIndex(ia);
    b_->setCurrentIndex(ib);
  }
  pairChanged();
  return true;
}

QString RunDiffView::runA() const {
  return a_->currentData().toString();
}
QString RunDiffView::runB() const {
  return b_->currentData().toString();
}

const AnalysisRun* RunDiffView::find(const QString& id) const {
  for (const AnalysisRun& r : runs_)
    if (QString::fromStdString(r.id) == id) return &r;
  return nullptr;
}

QStringList RunDiffView::commonGrids() const {
  QStringList out;
  const AnalysisRun *a = find(runA()), *b = find(runB());
  if (!a || !b) return out;
  for (const HeadGrid& ga : a->grids)
    for (const HeadGrid& gb : b->grids)
      if (ga.id == gb.id && ga.layers() == gb.layers() && ga.heads() == gb.heads())
        out << QString::fromStdString(ga.id);
  return out;
}

QStringList RunDiffView::commonCurves() const {
  QStringList out;
  const AnalysisRun *a = find(runA()), *b = find(runB());
  if (!a || !b) return out;
  for (const Curve& ca : a->curves)
    for (const Curve& cb : b->curves)
      if (ca.id == cb.id) out << QString::fromStdString(ca.id);
  return out;
}

bool RunDiffView::setGrid(const QString& id) {
  const int i = grid_->findData(id);
  if (i < 0) return false;
  grid_->setCurrentIndex(i);
  showGrid();
  return true;
}

bool RunDiffView::setCurve(const QString& id) {
  const int i = curve_->findData(id);
  if (i < 0) return false;
  curve_->setCurrentIndex(i);
  showCurve();
  return true;
}

QString RunDiffView::currentGrid() const {
  return grid_->currentData().toString();
}
QString RunDiffView::currentCurve() const {
  return curve_->currentData().toString();
}

QStringList RunDiffView::differingOptions() const {
  QStringList out;
  for (int r = 0; r < options_->rowCount(); ++r)
    if (options_->item(r, 0)->data(Qt::UserRole).toBool()) out << options_->item(r, 0)->text();
  return out;
}

void RunDiffView::pairChanged() {
  const AnalysisRun *a = find(runA()), *b = find(runB());
  options_->setRowCount(0);
  if (a && b) {
    // Every key of either run, in A's order, then B's own.
    std::vector<std::pair<QString, QString>> fa = flatOptions(*a), fb = flatOptions(*b);
    QStringList keys;
    for (const auto& [k, v] : fa)
      keys << k;
    for (const auto& [k, v] : fb)
      if (!keys.contains(k)) keys << k;
    auto valueOf = [](const std::vector<std::pair<QString, QString>>& f, const QString& k) -> QString {
      for (const auto& [key, v] : f)
        if (key == k) return v;
      return QStringLiteral("(absent)");
    };
    options_->setRowCount(static_cast<int>(keys.size()));
    for (int r = 0; r < keys.size(); ++r) {
      const QString va = valueOf(fa, keys[r]), vb = valueOf(fb, keys[r]);
      const bool differs = va != vb;
      auto* key = new QTableWidgetItem(keys[r]);
      key->setData(Qt::UserRole, differs);
      auto* ia = new QTableWidgetItem(va);
      auto* ib = new QTableWidgetItem(vb);
      ia->setToolTip(va);
      ib->setToolTip(vb);
      for (QTableWidgetItem* item : {key, ia, ib}) {
        if (!differs) continue;
        item->setBackground(QColor(255, 236, 179));
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
      }
      options_->setItem(r, 0, key);
      options_->setItem(r, 1, ia);
      options_->setItem(r, 2, ib);
    }
    options_->resizeRowsToContents();
  }
  const QStringList differ = differingOptions();
  optionsNote_->setText(!a || !b           ? QString()
                        : differ.isEmpty() ? tr("The %1 options are the same.").arg(options_->rowCount())
                                           : tr("%1 of %2 options differ: %3")
                                                 .arg(differ.size())
                                                 .arg(options_->rowCount())
                                                 .arg(differ.join(", ")));
  const QString keepGrid = currentGrid(), keepCurve = currentCurve();
  {
    const QSignalBlocker b1(grid_), b2(curve_);
    grid_->clear();
    curve_->clear();
    if (a)
      for (const QString& id : commonGrids())
        for (const HeadGrid& g : a->grids)
          if (QString::fromStdString(g.id) == id) grid_->addItem(gridLabel(g), id);
    if (a)
      for (const QString& id : commonCurves())
        for (const Curve& c : a->curves)
          if (QString::fromStdString(c.id) == id)
            curve_->addItem(QString::fromStdString(c.name.empty() ? c.id : c.name + " (" + c.id + ")"), id);
    grid_->setCurrentIndex(std::max(0, grid_->findData(keepGrid)));
    curve_->setCurrentIndex(std::max(0, curve_->findData(keepCurve)));
  }
  showGrid();
  showCurve();
}

void RunDiffView::setSilentHeads(const std::vector<HeadRef>& silent, const QStringList& modelRuns) {
  silent_ = silent;
  modelRuns_ = modelRuns;
  showGrid();
}

void RunDiffView::showGrid() {
  const AnalysisRun *a = find(runA()), *b = find(runB());
  const HeadGrid *ga = nullptr, *gb = nullptr;
  const std::string id = currentGrid().toStdString();
  if (a && b)
    for (const HeadGrid& g : a->grids)
      if (g.id == id) ga = &g;
  if (a && b)
    for (const HeadGrid& g : b->grids)
      if (g.id == id) gb = &g;
  if (!ga || !gb) {
    difference_ = HeadGrid{};
    diffView_->hide();
    gridNote_->setText(a && b ? tr("The two runs hold no grid of the same id and shape.") : QString());
    return;
  }
  difference_ = gridDifference(*ga, *gb);
  diffView_->show();
  const bool bothModel = modelRuns_.contains(runA()) && modelRuns_.contains(runB());
  diffView_->setSilentHeads(bothModel ? silent_ : std::vector<HeadRef>{});
  diffView_->setGrid(difference_);
  diffView_->setTitleText(QString::fromStdString(difference_.name) + "  (" + runA() + " − " + runB() + ")");
  double maxAbs = 0;
  for (int l = 0; l < difference_.layers(); ++l)
    for (int h = 0; h < difference_.heads(); ++h)
      if (std::isfinite(difference_.values(l, h)))
        maxAbs = std::max(maxAbs, std::abs(difference_.values(l, h)));
  gridNote_->setText(tr("max |A − B| = %1 · Spearman ρ(A, B) = %2 · Jaccard@5 = %3")
                         .arg(maxAbs, 0, 'g', 4)
                         .arg(spearmanRho(*ga, *gb), 0, 'f', 3)
                         .arg(jaccardAtK(*ga, *gb, 5), 0, 'f', 2));
}

void RunDiffView::showCurve() {
  const AnalysisRun *a = find(runA()), *b = find(runB());
  const Curve *ca = nullptr, *cb = nullptr;
  const std::string id = currentCurve().toStdString();
  if (a && b)
    for (const Curve& c : a->curves)
      if (c.id == id) ca = &c;
  if (a && b)
    for (const Curve& c : b->curves)
      if (c.id == id) cb = &c;
  if (!ca || !cb) {
    overlay_ = Curve{};
    curveDiff_ = Curve{};
    overlayView_->hide();
    curveDiffView_->hide();
    curveNote_->setText(a && b ? tr("The two runs hold no curve of the same id.") : QString());
    return;
  }
  overlay_ = curveOverlay(*ca, *cb);
  curveDiff_ = curveDifference(*ca, *cb);
  overlayView_->show();
  curveDiffView_->show();
  overlayView_->setCurve(overlay_);
  curveDiffView_->setCurve(curveDiff_);
  curveNote_->setText(tr("Above: both runs' series (A: %1, B: %2); below: A − B at the x values both have.")
                          .arg(runA(), runB()));
}

RunDiffDialog::RunDiffDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("HeadScope — compare runs"));
  setAttribute(Qt::WA_DeleteOnClose);
  auto* layout = new QVBoxLayout(this);
  view_ = new RunDiffView;
  layout->addWidget(view_, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
  layout->addWidget(buttons);
  resize(1200, 760);
}

}  // namespace hs::gui
