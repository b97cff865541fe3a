#pragma once
// How far two head rankings of one model agree, on its live heads only (the GUI's Agreement tab and head
// card, docs/architecture.md): Spearman's ρ with a 95 % interval, Jaccard@k of the two top-k sets beside
// the overlap two random k-sets would have (the hypergeometric null), and one head's rank among the live
// heads. Built on rank_stats.h (its conventions: layer-major, NaN never ranked, ties layer-major).
// Torch-free: the widgets use it directly.
#include <limits>
#include <vector>

#include "results/results.h"

namespace hs {

// `g` with the heads of `drop` (silent heads: model/load/silent_heads.h) set to NaN, so that rank_stats
// leaves them out of ranks, top-k sets and correlations. Heads outside the grid are ignored.
HeadGrid withoutHeads(const HeadGrid& g, const std::vector<HeadRef>& drop);

// A head's rank among the numbers of a grid without the heads of `silent`: 1 = the largest value, tied
// heads share the best rank of their group (headRank's "1224" ranking), `of` = how many heads have a
// number. Not ranked when the head is silent, outside the grid or has no number.
struct LiveRank {
  bool ranked = false;
  int rank = 0, of = 0;
  double value = std::numeric_limits<double>::quiet_NaN();
};
LiveRank liveRank(const HeadGrid& g, HeadRef head, const std::vector<HeadRef>& silent = {});

// The agreement of two grids of the same shape over the heads with a number in both that are not in
// `silent` (n of them).
struct RankAgreement {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int n = 0;
  // Spearman's ρ (rank_stats' spearmanRho on those heads) and its 95 % interval from Fisher's z with the
  // variance 1.06 / (n − 3) of Fieller, Hartley and Pearson (1957); NaN when n < 4 or ρ is undefined.
  double spearman = kNaN, spearman_lo = kNaN, spearman_hi = kNaN;
  // Jaccard@k (rank_stats' jaccardAtK on those heads): k is clamped to [1, n]; overlap = |A ∩ B|, so
  // jaccard = overlap / (2k − overlap).
  int k = 0, overlap = 0;
  double jaccard = kNaN;
  // The hypergeometric null: A and B two independent uniformly random k-sets of the n heads, so the
  // overlap X ~ Hypergeometric(n, k, k). The central 95 % range of the Jaccard it gives (2.5 % and 97.5 %
  // quantiles of X), its mean, and p = P(X ≥ overlap), one-sided: how often chance overlaps this much.
  double null_lo = kNaN, null_hi = kNaN, null_mean = kNaN, p_value = kNaN;
};
// Throws (naming both ids) when the shapes differ; k ≤ 0 is 1.
RankAgreement rankAgreement(const HeadGrid& a, const HeadGrid& b, int k,
                            const std::vector<HeadRef>& silent = {});

// P(X = x) for the overlap X of two independent uniformly random k-subsets of n items.
double overlapProbability(int n, int k, int x);

}  // namespace hs
