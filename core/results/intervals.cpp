// Wilson, Student-t and bootstrap intervals. See intervals.h.
#include "results/intervals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "results/results_json.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kZ975 = 1.959963984540054;  // the 97.5 % normal quantile

std::vector<double> finiteOnly(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v)
    if (std::isfinite(x)) out.push_back(x);
  return out;
}

}  // namespace

std::pair<double, double> wilsonInterval(int k, int n) {
  if (n <= 0) return {kNaN, kNaN};
  const double z = kZ975;
  const double p = static_cast<double>(k) / n, z2n = z * z / n;
  const double centre = (p + z2n / 2) / (1 + z2n);
  const double half = z * std::sqrt(p * (1 - p) / n + z2n / (4.0 * n)) / (1 + z2n);
  return {k <= 0 ? 0.0 : std::max(0.0, centre - half), k >= n ? 1.0 : std::min(1.0, centre + half)};
}

std::pair<double, double> wilsonOfRate(double rate, int n) {
  if (!std::isfinite(rate)) return {kNaN, kNaN};
  return wilsonInterval(static_cast<int>(std::lround(rate * n)), n);
}

double studentT975(int df) {
  // Exact to the printed digits for df <= 30; beyond, the Cornish–Fisher expansion in 1/df (error < 1e-5).
  static const double kTable[] = {
      12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252, 2.306004135,
      2.262157163,  2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546, 2.119905299,
      2.109815578,  2.100922040, 2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
      2.059538553,  2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456};
  if (df < 1) return kNaN;
  if (df <= 30) return kTable[df - 1];
  const double z = kZ975, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, d = df;
  return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * d * d * d);
}

Spread spreadOf(const std::vector<double>& values) {
  const std::vector<double> v = finiteOnly(values);
  Spread s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.mean = s.sd = s.min = s.max = s.lo = s.hi = kNaN;
    return s;
  }
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / s.n;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  if (s.n < 2) {
    s.sd = s.lo = s.hi = kNaN;
    return s;
  }
  double ss = 0;
  for (double x : v)
    ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  const double half = studentT975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
  s.lo = s.mean - half;
  s.hi = s.mean + half;
  return s;
}

nlohmann::json spreadJson(const Spread& s) {
  return {{"n", s.n},
          {"mean", doubleToJson(s.mean)},
          {"sd", doubleToJson(s.sd)},
          {"min", doubleToJson(s.min)},
          {"max", doubleToJson(s.max)},
          {"lo", doubleToJson(s.lo)},
          {"hi", doubleToJson(s.hi)}};
}

double standardError(const std::vector<double>& values) {
  const Spread s = spreadOf(values);
  return s.n < 2 ? kNaN : s.sd / std::sqrt(static_cast<double>(s.n));
}

std::pair<double, double> bootstrapMeanInterval(const std::vector<double>& values, uint64_t seed,
                                                int resamples) {
  const std::vector<double> v = finiteOnly(values);
  if (v.empty() || resamples < 1) return {kNaN, kNaN};
  std::mt19937_64 rng(seed);
  const uint64_t n = v.size();
  std::vector<double> means(static_cast<size_t>(resamples));
  for (double& m : means) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i)
      sum += v[rng() % n];
    m = sum / static_cast<double>(n);
  }
  return {quantile(means, 0.025), quantile(means, 0.975)};
}

std::vector<size_t> bootstrapIndices(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> idx(n);
  for (size_t& i : idx)
    i = static_cast<size_t>(rng() % n);
  return idx;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (pos - static_cast<double>(i)) * (v[j] - v[i]);
}

SeriesInterval bootstrapSeriesInterval(const std::string& series,
                                       const std::vector<std::vector<double>>& perPoint, uint64_t seed) {
  SeriesInterval iv{series, {}, {}};
  for (const std::vector<double>& v : perPoint) {
    const auto [lo, hi] = bootstrapMeanInterval(v, seed);
    iv.lo.push_back(lo);
    iv.hi.push_back(hi);
  }
  return iv;
}

void addWilsonIntervals(Curve& c, int n, const std::vector<std::string>& series) {
  for (const auto& [id, y] : c.series) {
    if (!series.empty() && std::find(series.begin(), series.end(), id) == series.end()) continue;
    SeriesInterval iv{id, {}, {}};
    for (double v : y) {
      const auto [lo, hi] = wilsonOfRate(v, n);
      iv.lo.push_back(lo);
      iv.hi.push_back(hi);
    }
    c.intervals.erase(std::remove_if(c.intervals.begin(), c.intervals.end(),
                                     [&](const SeriesInterval& i) { return i.series == id; }),
                      c.intervals.end());
    c.intervals.push_back(std::move(iv));
  }
}

void addWilsonColumns(Table& t, const std::string& column, const std::string& nColumn, int n) {
  auto indexOf = [&](const std::string& name) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end()) fail("table ", t.id, " has no column ", name);
    return static_cast<size_t>(it - t.columns.begin());
  };
  const size_t col = indexOf(column);
  const size_t nCol = nColumn.empty() ? 0 : indexOf(nColumn);
  t.columns.push_back(column + "_lo");
  t.columns.push_back(column + "_hi");
  for (std::vector<nlohmann::json>& row : t.rows) {
    const int count = nColumn.empty() ? n : row.at(nCol).is_number() ? row.at(nCol).get<int>() : 0;
    const bool number = row.at(col).is_number();
    const auto [lo, hi] =
        number ? wilsonOfRate(row.at(col).get<double>(), count) : std::pair<double, double>{kNaN, kNaN};
    row.push_back(intervalCell(lo));
    row.push_back(intervalCell(hi));
  }
}

nlohmann::json intervalCell(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace hs
