#pragma once
// Rank statistics over head scores: how much two metrics agree on which heads matter
// (docs/methods.md, TSLA: overlap with induction heads, the "compare metrics" scatter, attribution vs exact).
// Torch-free: the widgets use them directly.
//
// Conventions
// - A grid is flattened layer-major: index = layer * heads + head.
// - "Top" means largest value first. NaN values are never selected and rank below every number.
// - Ties in top-k selection are broken layer-major (lower layer, then lower head, first), so a
//   selection is deterministic.
// - Correlations drop the pairs where either value is NaN (pairwise-complete); they return NaN
//   when fewer than two pairs remain or one side is constant (the coefficient is undefined).
#include <string>
#include <vector>

#include "results/results.h"

namespace hs {

// Ranks 1..n with ties given the average of the ranks they span ("fractional ranking", as
// scipy.stats.rankdata(method="average")); ascending: the smallest value gets rank 1.
// NaN is not allowed here (throws): drop it first.
std::vector<double> averageRanks(const std::vector<double>& v);

// Spearman's rho: Pearson correlation of the average ranks (ties handled exactly).
double spearmanRho(const std::vector<double>& a, const std::vector<double>& b);

// Kendall's tau-b: (concordant - discordant) / sqrt((n0 - n1) (n0 - n2)), n0 = n(n-1)/2,
// n1 / n2 = pairs tied in a / in b. O(n^2); fine for the few thousand heads of a model.
double kendallTauB(const std::vector<double>& a, const std::vector<double>& b);

// |A ∩ B| / |A ∪ B| of two head sets (duplicates ignored); 1 when both are empty.
double jaccard(const std::vector<HeadRef>& a, const std::vector<HeadRef>& b);

// Grid versions: the two grids must have the same shape (throws naming both ids otherwise).
std::vector<double> flatten(const HeadGrid& g);  // layer-major
double spearmanRho(const HeadGrid& a, const HeadGrid& b);
double kendallTauB(const HeadGrid& a, const HeadGrid& b);
double jaccardAtK(const HeadGrid& a, const HeadGrid& b, int k);  // Jaccard of the two top-k sets

// The k heads with the largest values, best first (k is clamped to the number of non-NaN heads;
// k < 0 throws).
std::vector<HeadRef> topHeads(const HeadGrid& g, int k);
// The top `percent` % of all heads, rounded up, at least one head (3 % of 1024 heads = 31 heads,
// 3 % of 40 heads = 2 heads). percent in (0, 100], throws otherwise.
std::vector<HeadRef> topPercent(const HeadGrid& g, double percent);
// How many heads a percentage selects for a grid of n heads (the rule of topPercent).
int topPercentCount(int nHeads, double percent);

// 1-based rank of a head, largest value = 1; tied heads share the best rank of their group
// ("1224" competition ranking), so a tooltip never shows two different ranks for equal values.
// A NaN head ranks after every number. Throws when the head is outside the grid.
int headRank(const HeadGrid& g, HeadRef head);

}  // namespace hs
