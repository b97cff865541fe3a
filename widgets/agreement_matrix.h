#pragma once
// The method-agreement matrix: every pair of head rankings of one model (grids of the same layer × head
// shape, whatever methods made them) as a cell, Spearman's ρ or Jaccard@k over the live heads, with a 95 %
// interval for ρ (Fisher's z) and the hypergeometric null's range and p-value for Jaccard@k in each cell's
// tooltip (results/rank_agreement.h). One view checks claims such as "the induction heads are a subset of
// the TR heads" or "the two copying routes use disjoint heads" on any model. Activating a cell asks to
// compare the two grids (the Heads tab's scatter).
#include <QString>
#include <QWidget>

#include <vector>

#include "results/rank_agreement.h"
#include "results/results.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace hs {

class AgreementMatrix : public QWidget {
  Q_OBJECT
 public:
  enum class Statistic { Spearman, Jaccard };
  // One ranking: its key (the Heads tab's "<run id>/<grid id>"), its row label and its grid.
  struct Entry {
    QString key, label;
    HeadGrid grid;
  };

  explicit AgreementMatrix(QWidget* parent = nullptr);

  // The rankings, in row order; grids of another shape than the first one's are left out (said in the
  // note). `silent` heads (all-zero W_O) are left out of every statistic.
  void setEntries(std::vector<Entry> entries, const std::vector<HeadRef>& silent = {});
  // k of Jaccard@k; 0: 5 % of the live heads (at least one).
  void setK(int k);
  int k() const;      // as set (0: automatic)
  int kUsed() const;  // the k the cells use
  int liveHeads() const { return live_; }
  void setStatistic(Statistic s);
  Statistic statistic() const;

  int count() const { return static_cast<int>(entries_.size()); }
  const Entry& entry(int i) const { return entries_.at(static_cast<size_t>(i)); }
  int indexOf(const QString& key) const;  // -1 when absent
  // The statistics of rows i and j (symmetric; the diagonal compares a grid with itself).
  const RankAgreement& agreement(int i, int j) const;
  QString cellText(int i, int j) const;
  QString cellToolTip(int i, int j) const;
  QString note() const;  // the line under the matrix: heads, k, what the intervals are
  QStringList leftOut() const { return leftOut_; }  // labels of grids of another shape

  QTableWidget* table() const { return table_; }
  QSize sizeHint() const override { return {760, 520}; }

 Q_SIGNALS:
  void compareRequested(const QString& keyA, const QString& keyB);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void recompute();
  void redraw();
  void fitRowLabels();

  std::vector<Entry> entries_;
  std::vector<HeadRef> silent_;
  std::vector<std::vector<RankAgreement>> stats_;
  QStringList leftOut_;
  int live_ = 0;
  QComboBox* statistic_ = nullptr;
  QSpinBox* k_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace hs
