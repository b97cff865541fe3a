#include "results/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "util/error.h"

namespace hs {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Pairs where both values are numbers (NaN pairs carry no ordering information).
void completePairs(const std::vector<double>& a, const std::vector<double>& b, const char* what,
                   std::vector<double>& x, std::vector<double>& y) {
  if (a.size() != b.size())
    fail(what, ": the two vectors have ", a.size(), " and ", b.size(), " values, expected equal sizes");
  for (size_t i = 0; i < a.size(); ++i)
    if (!std::isnan(a[i]) && !std::isnan(b[i])) {
      x.push_back(a[i]);
      y.push_back(b[i]);
    }
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return kNaN;  // a constant side: correlation undefined
  return sxy / std::sqrt(sxx * syy);
}

void requireSameShape(const HeadGrid& a, const HeadGrid& b) {
  if (a.layers() != b.layers() || a.heads() != b.heads())
    fail("grids ", a.id, " [", a.layers(), " x ", a.heads(), "] and ", b.id, " [", b.layers(), " x ",
         b.heads(), "]: expected the same layers x heads shape");
}

// Head indices (layer-major) ordered best first: larger value first, NaN last, ties layer-major.
std::vector<int> orderBestFirst(const std::vector<double>& v) {
  std::vector<int> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int i, int j) {
    const bool ni = std::isnan(v[i]), nj = std::isnan(v[j]);
    if (ni != nj) return nj;  // numbers before NaN
    if (ni) return false;
    return v[i] > v[j];
  });
  return idx;
}

}  // namespace

std::vector<double> averageRanks(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isnan(v[i])) fail("averageRanks: value ", i, " is NaN, expected numbers (drop NaN first)");
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
  std::vector<double> r(v.size());
  // A run of equal values at sorted positions [s, e) gets the mean of ranks s+1 .. e.
  for (size_t s = 0; s < idx.size();) {
    size_t e = s + 1;
    while (e < idx.size() && v[idx[e]] == v[idx[s]])
      ++e;
    const double avg = 0.5 * static_cast<double>(s + 1 + e);
    for (size_t k = s; k < e; ++k)
      r[idx[k]] = avg;
    s = e;
  }
  return r;
}

double spearmanRho(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> x, y;
  completePairs(a, b, "spearmanRho", x, y);
  if (x.size() < 2) return kNaN;
  return pearson(averageRanks(x), averageRanks(y));
}

double kendallTauB(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> x, y;
  completePairs(a, b, "kendallTauB", x, y);
  const size_t n = x.size();
  if (n < 2) return kNaN;
  // Integer counts: exact for any realistic head count (n^2/2 fits easily in int64).
  int64_t concordant = 0, discordant = 0, tiedX = 0, tiedY = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const int sx = (x[i] > x[j]) - (x[i] < x[j]);
      const int sy = (y[i] > y[j]) - (y[i] < y[j]);
      if (sx == 0) ++tiedX;
      if (sy == 0) ++tiedY;
      if (sx * sy > 0) ++concordant;
      if (sx * sy < 0) ++discordant;
    }
  const double n0 = 0.5 * static_cast<double>(n) * static_cast<double>(n - 1);
  const double denom = std::sqrt((n0 - static_cast<double>(tiedX)) * (n0 - static_cast<double>(tiedY)));
  if (denom == 0) return kNaN;
  return static_cast<double>(concordant - discordant) / denom;
}

double jaccard(const std::vector<HeadRef>& a, const std::vector<HeadRef>& b) {
  const std::set<HeadRef> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  if (sa.empty() && sb.empty()) return 1.0;
  size_t inter = 0;
  for (const auto& h : sa)
    inter += sb.count(h);
  const size_t uni = sa.size() + sb.size() - inter;
  return static_cast<double>(inter) / static_cast<double>(uni);
}

std::vector<double> flatten(const HeadGrid& g) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(g.values.size()));
  for (int l = 0; l < g.layers(); ++l)
    for (int h = 0; h < g.heads(); ++h)
      v.push_back(g.values(l, h));
  return v;
}

double spearmanRho(const HeadGrid& a, const HeadGrid& b) {
  requireSameShape(a, b);
  return spearmanRho(flatten(a), flatten(b));
}

double kendallTauB(const HeadGrid& a, const HeadGrid& b) {
  requireSameShape(a, b);
  return kendallTauB(flatten(a), flatten(b));
}

double jaccardAtK(const HeadGrid& a, const HeadGrid& b, int k) {
  requireSameShape(a, b);
  return jaccard(topHeads(a, k), topHeads(b, k));
}

std::vector<HeadRef> topHeads(const HeadGrid& g, int k) {
  if (k < 0) fail("topHeads: grid ", g.id, ": k = ", k, ", expected k >= 0");
  const std::vector<double> v = flatten(g);
  const std::vector<int> order = orderBestFirst(v);
  std::vector<HeadRef> out;
  for (int i : order) {
    if (static_cast<int>(out.size()) >= k || std::isnan(v[i])) break;
    out.push_back({i / g.heads(), i % g.heads()});
  }
  return out;
}

int topPercentCount(int nHeads, double percent) {
  if (!(percent > 0 && percent <= 100))
    fail("topPercent: ", percent, " %, expected a percentage in (0, 100]");
  // The small tolerance keeps 3 % of 100 heads at 3 (3.0000000000000004 must not round up to 4).
  const double exact = percent * static_cast<double>(nHeads) / 100.0;
  const int k = static_cast<int>(std::ceil(exact - 1e-9));
  return std::min(nHeads, std::max(1, k));
}

std::vector<HeadRef> topPercent(const HeadGrid& g, double percent) {
  return topHeads(g, topPercentCount(g.layers() * g.heads(), percent));
}

int headRank(const HeadGrid& g, HeadRef head) {
  if (head.layer < 0 || head.layer >= g.layers() || head.head < 0 || head.head >= g.heads())
    fail("headRank: grid ", g.id, " [", g.layers(), " x ", g.heads(), "] has no head (", head.layer, ", ",
         head.head, ")");
  const double x = g.values(head.layer, head.head);
  int better = 0;
  for (int l = 0; l < g.layers(); ++l)
    for (int h = 0; h < g.heads(); ++h) {
      const double y = g.values(l, h);
      if (std::isnan(x) ? !std::isnan(y) : (!std::isnan(y) && y > x)) ++better;
    }
  return better + 1;
}

}  // namespace hs
