#include "heads_tab.h"

#include <algorithm>
#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "analysis/framework/registry.h"
#include "eliding_label.h"
#include "gui_types.h"
#include "head_grid_view.h"
#include "plot_style.h"
#include "qcustomplot_include.h"
#include "run_label.h"
#include "scatter_compare.h"
#include "view_state_read.h"

namespace hs::gui {

namespace {
// A run's model as every view names it (registry.h shortName).
QString modelName(const AnalysisRun& run) {
  const std::string& m = run.provenance.model;
  return m.empty() ? QStringLiteral("model not recorded") : QString::fromStdString(shortName(m));
}

const char* modeKey(HeadsTab::CompareMode mode) {
  return mode == HeadsTab::CompareMode::SideBySide ? "side_by_side" : "scatter";
}
}  // namespace

HeadsTab::HeadsTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  metric_ = new QComboBox;
  // Run labels are long (method · model · task · seed · grid): the box keeps its width and elides.
  metric_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  metric_->setMinimumContentsLength(16);
  topK_ = new QSpinBox;
  topK_->setRange(1, 100000);
  topK_->setValue(3);
  auto* selectK = new QPushButton("Select top k");
  topPct_ = new QDoubleSpinBox;
  topPct_->setRange(0.1, 100);
  topPct_->setValue(5);
  topPct_->setSuffix(" %");
  auto* selectPct = new QPushButton("Select top %");
  bar->addWidget(new QLabel("Metric"));
  bar->addWidget(metric_, 1);
  auto* explain = new QPushButton("?");
  explain->setObjectName("GlossaryButton");
  explain->setFixedWidth(explain->fontMetrics().horizontalAdvance("  ?  ") + 8);
  explain->setToolTip("What this metric means (Help → Glossary of metrics)");
  connect(explain, &QPushButton::clicked, this, [this] { Q_EMIT glossaryRequested(currentMetric()); });
  bar->addWidget(explain);
  bar->addSpacing(12);
  bar->addWidget(topK_);
  bar->addWidget(selectK);
  bar->addWidget(topPct_);
  bar->addWidget(selectPct);
  layout->addLayout(bar);

  auto* bar2 = new QHBoxLayout;
  compare_ = new QCheckBox("Compare with");
  other_ = new QComboBox;
  other_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  other_->setMinimumContentsLength(16);
  mode_ = new QComboBox;
  mode_->addItem("Scatter", modeKey(CompareMode::Scatter));
  mode_->addItem("Side by side", modeKey(CompareMode::SideBySide));
  mode_->setToolTip(
      "Scatter: one point per head with Spearman, Kendall and Jaccard@k (grids of the same "
      "shape).\nSide by side: the compared grid as a second heatmap (any shape).");
  jaccardK_ = new QSpinBox;
  jaccardK_->setRange(0, 100000);
  jaccardK_->setSpecialValueText("k = 5 %");
  jaccardK_->setPrefix("k = ");
  jaccardK_->setToolTip("k of Jaccard@k (0: 5 % of the heads)");
  summary_ = new ElidedLabel;
  // Never widens the window: the run's first numbers are shown (elided with "…" when narrow), all of them
  // in the tooltip.
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  bar2->addWidget(compare_);
  bar2->addWidget(other_, 1);
  bar2->addWidget(mode_);
  bar2->addWidget(jaccardK_);
  bar2->addSpacing(12);
  bar2->addWidget(summary_, 1);
  layout->addLayout(bar2);

  split_ = new QSplitter(Qt::Horizontal);
  view_ = new HeadGridView;
  scatter_ = new ScatterCompare;
  message_ = new QLabel;
  message_->setObjectName("CompareMessage");
  message_->setAlignment(Qt::AlignCenter);
  message_->setWordWrap(true);
  message_->setMargin(12);
  secondView_ = new HeadGridView;
  secondView_->setMenuEnabled(false);  // it may be another model's grid: no interventions from it
  side_ = new QStackedWidget;
  side_->addWidget(scatter_);
  side_->addWidget(message_);
  side_->addWidget(secondView_);
  split_->addWidget(view_);
  split_->addWidget(side_);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 2);
  side_->hide();
  layout->addWidget(split_, 1);

  connect(metric_, &QComboBox::activated, this, [this] { otherChosen_ = !showsLoadedModel(); });
  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    showCurrent();
    Q_EMIT metricChanged(currentMetric());
  });
  connect(selectK, &QPushButton::clicked, this, [this] { view_->selectTopK(topK_->value()); });
  connect(selectPct, &QPushButton::clicked, this, [this] { view_->selectTopPercent(topPct_->value()); });
  connect(compare_, &QCheckBox::toggled, this, &HeadsTab::updateCompare);
  connect(other_, &QComboBox::currentIndexChanged, this, &HeadsTab::updateCompare);
  connect(mode_, &QComboBox::currentIndexChanged, this, &HeadsTab::updateCompare);
  // Labels are elided in the boxes: the whole label of the chosen grid is in the tooltip.
  for (QComboBox* box : {metric_, other_})
    connect(box, &QComboBox::currentIndexChanged, box, [box] { box->setToolTip(box->currentText()); });
  connect(jaccardK_, &QSpinBox::valueChanged, this, [this](int k) { scatter_->setK(k); });
}

void HeadsTab::setSilentHeads(const std::vector<HeadRef>& heads) {
  silent_ = heads;
  view_->setSilentHeads(showsLoadedModel() ? heads : std::vector<HeadRef>{});
  updateCompare();
}

void HeadsTab::setRuns(const std::vector<AnalysisRun>& runs, const std::vector<AnalysisRun>& otherRuns) {
  const QString keep = currentMetric(), keepOther = compareMetric();
  grids_.clear();
  titles_.clear();
  summaries_.clear();
  otherKeys_.clear();
  for (const AnalysisRun& run : runs) {
    summaries_[QString::fromStdString(run.id)] = summaryNumbers(run.summary);
  }
  {
    const QSignalBlocker b1(metric_), b2(other_);
    metric_->clear();
    other_->clear();
    for (const std::vector<AnalysisRun>* list : {&runs, &otherRuns})
      for (const AnalysisRun& run : *list)
        for (const HeadGrid& g : run.grids) {
          const QString key = QString::fromStdString(run.id + "/" + g.id);
          const QString name = QString::fromStdString(g.name.empty() ? g.id : g.name);
          // The grid's name first: the boxes elide what does not fit at their right end.
          const QString label = name + " · " + runDisplayLabel(run);
          grids_.emplace_back(key, g);
          titles_[key] = name + "\n" + modelName(run) + " · " + QString::fromStdString(run.id);
          if (list != &runs) otherKeys_ << key;
          metric_->addItem(list == &runs ? label : "[other model] " + label, key);
          other_->addItem(label, key);
        }
    int i = metric_->findData(keep);
    // Another model's grid stays shown only when it was chosen (a grid of the loaded model becomes another
    // model's when another model is loaded: the new model's grids take its place).
    if (i >= 0 && otherKeys_.contains(keep) && !otherChosen_) i = -1;
    if (i < 0 && !runs.empty() && !runs.back().grids.empty())
      i = metric_->findData(QString::fromStdString(runs.back().id + "/" + runs.back().grids.front().id));
    metric_->setCurrentIndex(i < 0 ? 0 : i);
    const int j = other_->findData(keepOther);
    other_->setCurrentIndex(j >= 0 ? j : (other_->count() > 1 ? 1 : 0));
  }
  showCurrent();
  Q_EMIT metricChanged(currentMetric());
}

QString HeadsTab::currentMetric() const {
  return metric_->currentData().toString();
}

bool HeadsTab::setCurrentMetric(const QString& key) {
  const int i = metric_->findData(key);
  if (i < 0) return false;
  otherChosen_ = otherKeys_.contains(key);
  metric_->setCurrentIndex(i);
  return true;
}

QStringList HeadsTab::metricKeys() const {
  QStringList out;
  for (int i = 0; i < metric_->count(); ++i)
    out << metric_->itemData(i).toString();
  return out;
}

QStringList HeadsTab::compareKeys() const {
  QStringList out;
  for (int i = 0; i < other_->count(); ++i)
    out << other_->itemData(i).toString();
  return out;
}

QString HeadsTab::gridTitle(const QString& key) const {
  return titles_.value(key);
}

const HeadGrid* HeadsTab::gridOf(const QString& key) const {
  for (const auto& [k, g] : grids_)
    if (k == key) return &g;
  return nullptr;
}

void HeadsTab::showCurrent() {
  // Another model's grid: its heads are not the loaded model's (no interventions, no silent heads).
  view_->setMenuEnabled(showsLoadedModel());
  view_->setSilentHeads(showsLoadedModel() ? silent_ : std::vector<HeadRef>{});
  if (const HeadGrid* g = gridOf(currentMetric())) view_->setGrid(*g);
  // The summary of the run the shown grid belongs to.
  const QString run = currentMetric().section('/', 0, 0);
  const QStringList numbers = summaries_.value(run);
  constexpr int kShown = 4;
  summary_->setText(numbers.isEmpty() ? QString()
                                      : run + ": " + numbers.mid(0, kShown).join(" · ") +
                                            (numbers.size() > kShown ? " · …" : ""));
  summary_->setToolTip(numbers.isEmpty() ? QString() : run + "\n" + numbers.join("\n"));
  updateCompare();
}

void HeadsTab::setCompare(bool on, const QString& otherKey) {
  if (!otherKey.isEmpty()) {
    const int i = other_->findData(otherKey);
    if (i >= 0) other_->setCurrentIndex(i);
  }
  compare_->setChecked(on);
  updateCompare();
}

bool HeadsTab::comparing() const {
  return compare_->isChecked();
}

QString HeadsTab::compareMetric() const {
  return other_->currentData().toString();
}

void HeadsTab::setCompareMode(CompareMode mode) {
  mode_->setCurrentIndex(mode_->findData(modeKey(mode)));
  updateCompare();
}

HeadsTab::CompareMode HeadsTab::compareMode() const {
  return mode_->currentData().toString() == modeKey(CompareMode::SideBySide) ? CompareMode::SideBySide
                                                                             : CompareMode::Scatter;
}

QString HeadsTab::compareMessage() const {
  return message_->text();
}

bool HeadsTab::compareMessageShown() const {
  return !side_->isHidden() && side_->currentWidget() == message_;
}

void HeadsTab::updateCompare() {
  const HeadGrid* a = gridOf(currentMetric());
  const HeadGrid* b = gridOf(compareMetric());
  const bool on = compare_->isChecked() && a && b;
  const CompareMode mode = compareMode();
  jaccardK_->setVisible(mode == CompareMode::Scatter);
  const bool sideBySide = on && mode == CompareMode::SideBySide;
  view_->setTitleText(sideBySide ? gridTitle(currentMetric()) : QString());
  message_->clear();
  side_->setVisible(on);
  if (!on) return;
  if (sideBySide) {
    secondView_->setGrid(*b);
    secondView_->setTitleText(gridTitle(compareMetric()));
    // The loaded model's silent heads mean nothing on another model's grid.
    secondView_->setSilentHeads(!otherKeys_.contains(compareMetric()) ? silent_ : std::vector<HeadRef>{});
    side_->setCurrentWidget(secondView_);
  } else if (a->layers() != b->layers() || a->heads() != b->heads()) {
    message_->setText(QString("No scatter: %1 has %2 × %3 heads and %4 has %5 × %6; a scatter pairs equal "
                              "heads (Side by side shows both).")
                          .arg(gridTitle(currentMetric()).section('\n', 1))
                          .arg(a->layers())
                          .arg(a->heads())
                          .arg(gridTitle(compareMetric()).section('\n', 1))
                          .arg(b->layers())
                          .arg(b->heads()));
    side_->setCurrentWidget(message_);
  } else {
    scatter_->setGrids(*a, *b, jaccardK_->value());
    side_->setCurrentWidget(scatter_);
  }
  // Two heatmaps share the width equally; the scatter takes two fifths.
  if (mode != shownMode_) {
    shownMode_ = mode;
    const int w = std::max(split_->width(), 10);
    split_->setSizes(mode == CompareMode::SideBySide ? QList<int>{w / 2, w - w / 2}
                                                     : QList<int>{w * 3 / 5, w - w * 3 / 5});
  }
}

nlohmann::json HeadsTab::viewState() const {
  const QCPRange r = view_->colorMap()->dataRange();
  return {{"metric", currentMetric().toStdString()},
          {"compare", comparing()},
          {"compare_metric", compareMetric().toStdString()},
          {"compare_mode", modeKey(compareMode())},
          {"jaccard_k", jaccardK_->value()},
          {"top_k", topK_->value()},
          {"top_percent", topPct_->value()},
          {"color_range", {r.lower, r.upper}}};
}

void HeadsTab::restoreViewState(const nlohmann::json& j) {
  if (!j.is_object()) return;
  const ViewStateReader r(j);
  topK_->setValue(r.integer("top_k", topK_->value()));
  topPct_->setValue(r.number("top_percent", topPct_->value()));
  jaccardK_->setValue(r.integer("jaccard_k", 0));
  setCurrentMetric(r.text("metric"));
  setCompareMode(r.text("compare_mode") == modeKey(CompareMode::SideBySide) ? CompareMode::SideBySide
                                                                            : CompareMode::Scatter);
  setCompare(r.flag("compare"), r.text("compare_metric"));
  if (j.contains("color_range") && j["color_range"].is_array() && j["color_range"].size() == 2 &&
      j["color_range"][0].is_number() && j["color_range"][1].is_number() &&
      std::isfinite(j["color_range"][0].get<double>()) && std::isfinite(j["color_range"][1].get<double>())) {
    view_->colorMap()->setDataRange(
        QCPRange(j["color_range"][0].get<double>(), j["color_range"][1].get<double>()));
    plotstyle::replotIfSized(*view_->plot());
  }
}

}  // namespace hs::gui
