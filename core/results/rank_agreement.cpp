#include "results/rank_agreement.h"

#include <algorithm>
#include <cmath>

#include "results/rank_stats.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double logChoose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

}  // namespace

HeadGrid withoutHeads(const HeadGrid& g, const std::vector<HeadRef>& drop) {
  HeadGrid out = g;
  for (const HeadRef& h : drop)
    if (h.layer >= 0 && h.layer < g.layers() && h.head >= 0 && h.head < g.heads())
      out.values(h.layer, h.head) = kNaN;
  return out;
}

LiveRank liveRank(const HeadGrid& g, HeadRef head, const std::vector<HeadRef>& silent) {
  LiveRank r;
  if (head.layer < 0 || head.layer >= g.layers() || head.head < 0 || head.head >= g.heads()) return r;
  const HeadGrid live = withoutHeads(g, silent);
  r.value = g.values(head.layer, head.head);
  for (int l = 0; l < live.layers(); ++l)
    for (int h = 0; h < live.heads(); ++h)
      r.of += std::isnan(live.values(l, h)) ? 0 : 1;
  if (std::isnan(live.values(head.layer, head.head))) return r;
  r.ranked = true;
  r.rank = headRank(live, head);
  return r;
}

double overlapProbability(int n, int k, int x) {
  if (n <= 0 || k < 0 || k > n || x < std::max(0, 2 * k - n) || x > k) return 0.0;
  return std::exp(logChoose(k, x) + logChoose(n - k, k - x) - logChoose(n, k));
}

RankAgreement rankAgreement(const HeadGrid& a, const HeadGrid& b, int k, const std::vector<HeadRef>& silent) {
  if (a.layers() != b.layers() || a.heads() != b.heads())
    fail("grids ", a.id, " [", a.layers(), " x ", a.heads(), "] and ", b.id, " [", b.layers(), " x ",
         b.heads(), "]: expected the same layers x heads shape");
  // One pool of heads for both sides: live, and with a number in both grids.
  std::vector<HeadRef> drop = silent;
  for (int l = 0; l < a.layers(); ++l)
    for (int h = 0; h < a.heads(); ++h)
      if (std::isnan(a.values(l, h)) || std::isnan(b.values(l, h))) drop.push_back({l, h});
  const HeadGrid la = withoutHeads(a, drop), lb = withoutHeads(b, drop);
  RankAgreement r;
  for (int l = 0; l < la.layers(); ++l)
    for (int h = 0; h < la.heads(); ++h)
      r.n += std::isnan(la.values(l, h)) ? 0 : 1;
  if (r.n == 0) return r;
  r.spearman = spearmanRho(la, lb);
  if (r.n >= 4 && std::isfinite(r.spearman)) {
    if (std::abs(r.spearman) >= 1.0) {
      r.spearman_lo = r.spearman_hi = r.spearman;
    } else {
      const double z = std::atanh(r.spearman), se = std::sqrt(1.06 / (r.n - 3));
      r.spearman_lo = std::tanh(z - 1.959963984540054 * se);
      r.spearman_hi = std::tanh(z + 1.959963984540054 * se);
    }
  }
  r.k = std::clamp(k, 1, r.n);
  const std::vector<HeadRef> ta = topHeads(la, r.k), tb = topHeads(lb, r.k);
  for (const HeadRef& h : ta)
    r.overlap += std::count(tb.begin(), tb.end(), h) > 0 ? 1 : 0;
  r.jaccard = jaccard(ta, tb);
  // The null's distribution of the overlap, its quantiles and tail.
  auto jaccardOf = [&r](int x) { return static_cast<double>(x) / static_cast<double>(2 * r.k - x); };
  double cumulative = 0, mean = 0, tail = 0;
  bool haveLo = false, haveHi = false;
  for (int x = 0; x <= r.k; ++x) {
    const double p = overlapProbability(r.n, r.k, x);
    mean += p * jaccardOf(x);
    if (x >= r.overlap) tail += p;
    cumulative += p;
    if (!haveLo && cumulative >= 0.025) {
      r.null_lo = jaccardOf(x);
      haveLo = true;
    }
    if (!haveHi && cumulative >= 0.975 - 1e-12) {
      r.null_hi = jaccardOf(x);
      haveHi = true;
    }
  }
  if (!haveHi) r.null_hi = 1.0;  // rounding left the cumulative sum short of 0.975
  r.null_mean = mean;
  r.p_value = std::min(1.0, tail);
  return r;
}

}  // namespace hs
