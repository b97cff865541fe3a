#include "agreement_matrix.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "plot_style.h"
#include "results/rank_stats.h"

namespace hs {

namespace {

QString fmt(double v, int decimals = 2) {
  return std::isfinite(v) ? QString::number(v, 'f', decimals) : QStringLiteral("n/a");
}

QString pText(double p) {
  if (!std::isfinite(p)) return QStringLiteral("n/a");
  return p < 0.001 ? QStringLiteral("< 0.001") : QString::number(p, 'g', 2);
}

constexpr int kMinRowLabelWidth = 220, kMaxRowLabelWidth = 560;  // pixels of a row's label

// Jaccard 0 → white, 1 → a saturated green.
QColor jaccardColor(double j) {
  if (!std::isfinite(j)) return QColor(235, 235, 235);
  const double t = std::clamp(j, 0.0, 1.0);
  const QColor lo(255, 255, 255), hi(49, 163, 84);
  return QColor::fromRgbF(lo.redF() + t * (hi.redF() - lo.redF()),
                          lo.greenF() + t * (hi.greenF() - lo.greenF()),
                          lo.blueF() + t * (hi.blueF() - lo.blueF()));
}

}  // namespace

AgreementMatrix::AgreementMatrix(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  statistic_ = new QComboBox;
  statistic_->addItem(tr("Spearman ρ (95 % interval)"));
  statistic_->addItem(tr("Jaccard@k (vs. chance overlap)"));
  statistic_->setToolTip(
      tr("Spearman ρ: rank correlation over the live heads.\nJaccard@k: overlap of the two top-k head sets, "
         "|A ∩ B| / |A ∪ B|."));
  k_ = new QSpinBox;
  k_->setRange(0, 100000);
  k_->setPrefix(tr("k = "));
  k_->setSpecialValueText(tr("k = 5 %"));
  k_->setToolTip(tr("k of Jaccard@k (0: 5 % of the live heads, at least one)"));
  bar->addWidget(new QLabel(tr("Statistic")));
  bar->addWidget(statistic_);
  bar->addSpacing(12);
  bar->addWidget(k_);
  bar->addStretch(1);
  layout->addLayout(bar);
  table_ = new QTableWidget;
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  // Columns as narrow as a cell's number (its grid is named by the row of the same number).
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table_->horizontalHeader()->setDefaultSectionSize(table_->fontMetrics().horizontalAdvance("-0.00") + 14);
  table_->horizontalHeader()->setMinimumSectionSize(12);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  layout->addWidget(table_, 1);
  note_ = new QLabel;
  note_->setWordWrap(true);
  note_->setObjectName("AgreementNote");
  layout->addWidget(note_);
  connect(statistic_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
  connect(k_, &QSpinBox::valueChanged, this, [this] {
    recompute();
    redraw();
  });
  connect(table_, &QTableWidget::cellActivated, this, [this](int i, int j) {
    if (i != j) Q_EMIT compareRequested(entry(i).key, entry(j).key);
  });
}

void AgreementMatrix::setEntries(std::vector<Entry> entries, const std::vector<HeadRef>& silent) {
  entries_.clear();
  leftOut_.clear();
  silent_ = silent;
  for (Entry& e : entries) {
    if (!entries_.empty() && (e.grid.layers() != entries_.front().grid.layers() ||
                              e.grid.heads() != entries_.front().grid.heads())) {
      leftOut_ << e.label;
      continue;
    }
    entries_.push_back(std::move(e));
  }
  recompute();
  redraw();
}

void AgreementMatrix::setK(int k) {
  k_->setValue(k);  // recomputes through valueChanged (when it changes)
}

int AgreementMatrix::k() const {
  return k_->value();
}

int AgreementMatrix::kUsed() const {
  if (live_ <= 0) return 0;
  return k_->value() > 0 ? std::min(k_->value(), live_) : topPercentCount(live_, 5.0);
}

void AgreementMatrix::setStatistic(Statistic s) {
  statistic_->setCurrentIndex(s == Statistic::Jaccard ? 1 : 0);
}

AgreementMatrix::Statistic AgreementMatrix::statistic() const {
  return statistic_->currentIndex() == 1 ? Statistic::Jaccard : Statistic::Spearman;
}

int AgreementMatrix::indexOf(const QString& key) const {
  for (int i = 0; i < count(); ++i)
    if (entries_[static_cast<size_t>(i)].key == key) return i;
  return -1;
}

const RankAgreement& AgreementMatrix::agreement(int i, int j) const {
  return stats_.at(static_cast<size_t>(i)).at(static_cast<size_t>(j));
}

void AgreementMatrix::recompute() {
  const size_t n = entries_.size();
  live_ = 0;
  if (n > 0) {
    const HeadGrid live = withoutHeads(entries_.front().grid, silent_);
    live_ = live.layers() * live.heads();
    for (const HeadRef& h : silent_)
      if (h.layer >= 0 && h.layer < live.layers() && h.head >= 0 && h.head < live.heads()) --live_;
  }
  const int k = kUsed();
  stats_.assign(n, std::vector<RankAgreement>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j) {
      stats_[i][j] = rankAgreement(entries_[i].grid, entries_[j].grid, k, silent_);
      stats_[j][i] = stats_[i][j];
    }
}

QString AgreementMatrix::cellText(int i, int j) const {
  if (i == j) return QStringLiteral("—");
  const RankAgreement& a = agreement(i, j);
  return fmt(statistic() == Statistic::Spearman ? a.spearman : a.jaccard);
}

QString AgreementMatrix::cellToolTip(int i, int j) const {
  const RankAgreement& a = agreement(i, j);
  QString s = QStringLiteral("<b>%1</b><br>vs <b>%2</b><br>")
                  .arg(entry(i).label.toHtmlEscaped(), entry(j).label.toHtmlEscaped());
  s += tr("Spearman ρ = %1 over %2 live heads, 95 % interval [%3, %4] (Fisher's z, variance 1.06 / (n − 3))")
           .arg(fmt(a.spearman, 3))
           .arg(a.n)
           .arg(fmt(a.spearman_lo, 3), fmt(a.spearman_hi, 3));
  s += "<br>" +
       tr("Jaccard@%1 = %2: %3 of the %1 top heads shared").arg(a.k).arg(fmt(a.jaccard, 3)).arg(a.overlap);
  s += "<br>" +
       tr("chance (hypergeometric null: two random %1-sets of the %2 live heads): Jaccard %3, 95 % range "
          "[%4, %5]; P(overlap ≥ %6) = %7")
           .arg(a.k)
           .arg(a.n)
           .arg(fmt(a.null_mean, 3), fmt(a.null_lo, 3), fmt(a.null_hi, 3))
           .arg(a.overlap)
           .arg(pText(a.p_value));
  if (i != j) s += "<br><i>" + tr("double-click: compare the two grids on the Heads tab") + "</i>";
  return s;
}

QString AgreementMatrix::note() const {
  QString s = tr("%1 rankings over %2 live heads").arg(count()).arg(live_);
  if (!silent_.empty()) s += tr(" (%1 silent heads left out)").arg(silent_.size());
  s += statistic() == Statistic::Spearman
           ? tr(". Cell: Spearman ρ; bold where its 95 % interval (Fisher's z with variance 1.06 / (n − 3)) "
                "excludes 0.")
           : tr(". Cell: Jaccard@%1; bold where the overlap is larger than chance (hypergeometric null, "
                "P(overlap ≥ observed) < 0.05).")
                 .arg(kUsed());
  s += tr(" Hover a cell for both statistics with their intervals; double-click to compare the two grids.");
  if (!leftOut_.isEmpty()) s += tr(" Left out (another layer × head shape): %1.").arg(leftOut_.join(", "));
  return s;
}

void AgreementMatrix::redraw() {
  const int n = count();
  table_->clear();
  table_->setRowCount(n);
  table_->setColumnCount(n);
  const bool rho = statistic() == Statistic::Spearman;
  QCPColorGradient diverging = plotstyle::divergingGradient();  // color() is not const
  for (int i = 0; i < n; ++i) {
    auto* row = new QTableWidgetItem;
    row->setToolTip(entry(i).label);
    table_->setVerticalHeaderItem(i, row);
    auto* col = new QTableWidgetItem(QString::number(i + 1));
    col->setToolTip(entry(i).label);
    table_->setHorizontalHeaderItem(i, col);
    for (int j = 0; j < n; ++j) {
      const RankAgreement& a = agreement(i, j);
      auto* item = new QTableWidgetItem(cellText(i, j));
      item->setTextAlignment(Qt::AlignCenter);
      item->setToolTip(cellToolTip(i, j));
      if (i == j) {
        item->setBackground(QColor(235, 235, 235));
      } else {
        const double v = rho ? a.spearman : a.jaccard;
        item->setBackground(rho ? (std::isfinite(v) ? QColor(diverging.color(v, QCPRange(-1.25, 1.25)))
                                                    : QColor(235, 235, 235))
                                : jaccardColor(v));
        item->setForeground(Qt::black);
        const bool notable = rho ? (std::isfinite(a.spearman_lo) && (a.spearman_lo > 0 || a.spearman_hi < 0))
                                 : (std::isfinite(a.p_value) && a.p_value < 0.05);
        if (notable) {
          QFont f = item->font();
          f.setBold(true);
          item->setFont(f);
        }
      }
      table_->setItem(i, j, item);
    }
  }
  note_->setText(note());
  fitRowLabels();
}

void AgreementMatrix::fitRowLabels() {
  // Long grid names are shortened in the middle (whole in the tooltip) to the room the columns leave.
  const int columns = count() * table_->horizontalHeader()->defaultSectionSize();
  const int room = std::clamp(table_->width() - columns - 60, kMinRowLabelWidth, kMaxRowLabelWidth);
  for (int i = 0; i < count(); ++i)
    if (QTableWidgetItem* row = table_->verticalHeaderItem(i))
      row->setText(QStringLiteral("%1  %2").arg(i + 1).arg(
          table_->fontMetrics().elidedText(entry(i).label, Qt::ElideMiddle, room)));
}

void AgreementMatrix::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitRowLabels();
}

}  // namespace hs
