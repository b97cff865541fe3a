#pragma once
// 95 % intervals and spreads, the one place every method takes them from (docs/methods.md, "Intervals and
// seeds"). No torch: the widgets and the session code use them too.
//  - proportions (accuracy, TR ratio, shares of prompts): the Wilson score interval of k successes in n;
//  - means over prompts (scores, answer probabilities, per-layer geometry): a seeded percentile bootstrap
//    over the prompts, and the standard error sd / √n of a per-head mean;
//  - means over a few repeats (random head draws, seeds): mean, sample sd, min, max and the Student-t
//    interval of the mean.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/results.h"

namespace hs {

// The 95 % Wilson score interval of `k` successes in `n` trials ({NaN, NaN} when n is 0).
std::pair<double, double> wilsonInterval(int k, int n);
// The same for a rate measured on n trials (k = the nearest integer to rate · n; NaN rate: {NaN, NaN}).
std::pair<double, double> wilsonOfRate(double rate, int n);

// The 97.5 % quantile of Student's t with `df` degrees of freedom (df >= 1; NaN for df < 1).
double studentT975(int df);

// Mean, spread and the 95 % interval of the mean of a few repeats (draws, seeds). NaN entries are left
// out; sd, lo and hi are NaN with fewer than two values (lo = hi = mean would claim certainty).
struct Spread {
  int n = 0;
  double mean = 0, sd = 0, min = 0, max = 0;
  double lo = 0, hi = 0;  // mean ± t(0.975, n − 1) · sd / √n
};
Spread spreadOf(const std::vector<double>& values);
// {"n", "mean", "sd", "min", "max", "lo", "hi"} (non-finite values as results_json's doubleToJson writes
// them).
nlohmann::json spreadJson(const Spread& s);

// The standard error of the mean of `values`: sample sd / √n (NaN with fewer than two values).
double standardError(const std::vector<double>& values);

// The 95 % percentile bootstrap interval of the mean of `values` (resampled with replacement `resamples`
// times, mt19937_64 seeded with `seed`: the same numbers on every platform). {NaN, NaN} when empty.
std::pair<double, double> bootstrapMeanInterval(const std::vector<double>& values, uint64_t seed,
                                                int resamples = 2000);

// `n` indices drawn uniformly with replacement from 0..n−1 (a bootstrap resample; mt19937_64 seeded with
// `seed`, as bootstrapMeanInterval draws them: the same indices on every platform).
std::vector<size_t> bootstrapIndices(size_t n, uint64_t seed);

// The q-quantile of `values` by linear interpolation between order statistics (numpy's default).
double quantile(std::vector<double> values, double q);

// A series' 95 % intervals from each point's per-prompt values (perPoint [x][prompts]): a seeded bootstrap
// of the mean over the prompts.
SeriesInterval bootstrapSeriesInterval(const std::string& series,
                                       const std::vector<std::vector<double>>& perPoint, uint64_t seed);

// Wilson intervals for curve series that are rates over n prompts: `series` (all series when empty), each
// point's interval from its value and n (replacing an interval the series had).
void addWilsonIntervals(Curve& c, int n, const std::vector<std::string>& series = {});
// Columns "<column>_lo" and "<column>_hi" after the last column: each row's Wilson interval of the rate in
// `column` over the count in column `nColumn` (or over `n` prompts for every row when nColumn is empty).
// Cells that are not numbers get null.
void addWilsonColumns(Table& t, const std::string& column, const std::string& nColumn, int n = 0);
// A table cell: the number, or null when it is not finite (null reads back as null; JSON has no NaN).
nlohmann::json intervalCell(double v);

}  // namespace hs
