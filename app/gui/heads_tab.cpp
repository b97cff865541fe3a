#include "heads_tab.h"

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
#include <QVBoxLayout>

#include "analysis/registry.h"
#include "head_grid_view.h"
#include "qcustomplot_include.h"
#include "scatter_compare.h"

namespace hs::gui {

namespace {
// A one-line label that ends in "…" instead of being cut off when its text is wider than the label.
class ElidingLabel : public QLabel {
 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(contentsRect(), Qt::AlignLeft | Qt::AlignVCenter,
               fontMetrics().elidedText(text(), Qt::ElideRight, contentsRect().width()));
  }
};
}  // namespace

HeadsTab::HeadsTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  metric_ = new QComboBox;
  // Run labels are long (method · model · task · seed · grid): the box keeps its width and elides.
  metric_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  metric_->setMinimumContentsLength(28);
  metric_->setMinimumContentsLength(30);
  metric_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
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
  other_->setMinimumContentsLength(20);
  other_->setMinimumContentsLength(30);
  other_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  jaccardK_ = new QSpinBox;
  jaccardK_->setRange(0, 100000);
  jaccardK_->setSpecialValueText("k = 5 %");
  jaccardK_->setPrefix("k = ");
  jaccardK_->setToolTip("k of Jaccard@k (0: 5 % of the heads)");
  summary_ = new ElidingLabel;
  // Never widens the window: the run's first numbers are shown (elided with "…" when narrow), all of them
  // in the tooltip.
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  bar2->addWidget(compare_);
  bar2->addWidget(other_, 1);
  bar2->addWidget(jaccardK_);
  bar2->addSpacing(12);
  bar2->addWidget(summary_, 1);
  layout->addLayout(bar2);

  split_ = new QSplitter(Qt::Horizontal);
  view_ = new HeadGridView;
  scatter_ = new ScatterCompare;
  split_->addWidget(view_);
  split_->addWidget(scatter_);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 2);
  scatter_->hide();
  layout->addWidget(split_, 1);

  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    showCurrent();
    Q_EMIT metricChanged(currentMetric());
  });
  connect(selectK, &QPushButton::clicked, this, [this] { view_->selectTopK(topK_->value()); });
  connect(selectPct, &QPushButton::clicked, this, [this] { view_->selectTopPercent(topPct_->value()); });
  connect(compare_, &QCheckBox::toggled, this, &HeadsTab::updateCompare);
  connect(other_, &QComboBox::currentIndexChanged, this, &HeadsTab::updateCompare);
  connect(jaccardK_, &QSpinBox::valueChanged, this, [this](int k) { scatter_->setK(k); });
}

void HeadsTab::setSilentHeads(const std::vector<HeadRef>& heads) {
  view_->setSilentHeads(heads);
}

void HeadsTab::setRuns(const std::vector<AnalysisRun>& runs) {
  const QString keep = currentMetric(), keepOther = compareMetric();
  grids_.clear();
  summaries_.clear();
  for (const AnalysisRun& run : runs) {
    QStringList numbers;
    if (run.summary.is_object())
      for (auto it = run.summary.begin(); it != run.summary.end(); ++it)
        if (it->is_number())
          numbers << QString("%1 %2").arg(QString::fromStdString(it.key())).arg(it->get<double>(), 0, 'g', 4);
    summaries_[QString::fromStdString(run.id)] = numbers;
  }
  {
    const QSignalBlocker b1(metric_), b2(other_);
    metric_->clear();
    other_->clear();
    for (const AnalysisRun& run : runs)
      for (const HeadGrid& g : run.grids) {
        const QString key = QString::fromStdString(run.id + "/" + g.id);
        const QString label =
            QString::fromStdString(runLabel(run) + " · " + (g.name.empty() ? g.id : g.name));
        grids_.emplace_back(key, g);
        metric_->addItem(label, key);
        other_->addItem(label, key);
      }
    int i = metric_->findData(keep);
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
  metric_->setCurrentIndex(i);
  return true;
}

QStringList HeadsTab::metricKeys() const {
  QStringList out;
  for (const auto& [key, g] : grids_)
    out << key;
  return out;
}

const HeadGrid* HeadsTab::gridOf(const QString& key) const {
  for (const auto& [k, g] : grids_)
    if (k == key) return &g;
  return nullptr;
}

void HeadsTab::showCurrent() {
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

void HeadsTab::updateCompare() {
  const HeadGrid* a = gridOf(currentMetric());
  const HeadGrid* b = gridOf(compareMetric());
  const bool on = compare_->isChecked() && a && b;
  scatter_->setVisible(on);
  if (on) scatter_->setGrids(*a, *b, jaccardK_->value());
}

nlohmann::json HeadsTab::viewState() const {
  const QCPRange r = view_->colorMap()->dataRange();
  return {{"metric", currentMetric().toStdString()},
          {"compare", comparing()},
          {"compare_metric", compareMetric().toStdString()},
          {"jaccard_k", jaccardK_->value()},
          {"top_k", topK_->value()},
          {"top_percent", topPct_->value()},
          {"color_range", {r.lower, r.upper}}};
}

void HeadsTab::restoreViewState(const nlohmann::json& j) {
  if (!j.is_object()) return;
  topK_->setValue(j.value("top_k", topK_->value()));
  topPct_->setValue(j.value("top_percent", topPct_->value()));
  jaccardK_->setValue(j.value("jaccard_k", 0));
  setCurrentMetric(QString::fromStdString(j.value("metric", std::string())));
  setCompare(j.value("compare", false), QString::fromStdString(j.value("compare_metric", std::string())));
  if (j.contains("color_range") && j["color_range"].is_array() && j["color_range"].size() == 2 &&
      j["color_range"][0].is_number() && j["color_range"][1].is_number()) {
    view_->colorMap()->setDataRange(
        QCPRange(j["color_range"][0].get<double>(), j["color_range"][1].get<double>()));
    view_->plot()->replot();
  }
}

}  // namespace hs::gui
