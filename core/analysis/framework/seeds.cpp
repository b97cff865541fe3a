// Repeating a method across seeds. See seeds.h.
#include "analysis/framework/seeds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "results/intervals.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {

namespace {

bool isSeedKey(const std::string& key) {
  return key == "seed" || (key.size() > 5 && key.compare(key.size() - 5, 5, "_seed") == 0);
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Every non-integer number of a summary by its path ("ablation.zero.tr.accuracy"); arrays (head lists,
// per-prompt values) and a number's own interval or spread ("…_lo", "…_hi", "…_sd") are skipped.
void headlineNumbers(const nlohmann::json& j, const std::string& path, std::map<std::string, double>& out) {
  if (endsWith(path, "_lo") || endsWith(path, "_hi") || endsWith(path, "_sd")) return;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      headlineNumbers(v, path.empty() ? k : path + "." + k, out);
  } else if (j.is_number_float()) {
    out[path] = j.get<double>();
  } else if (j.is_string() && (j == "NaN" || j == "Infinity" || j == "-Infinity")) {
    out[path] = doubleFromJson(j, path);
  }
}

nlohmann::json cellOf(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Table "<method>.seeds" and summary["numbers"].
Table numbersTable(const std::string& method, const std::vector<AnalysisRun>& runs,
                   const std::vector<uint64_t>& seedValues, nlohmann::json& numbers) {
  std::vector<std::map<std::string, double>> perSeed(runs.size());
  std::set<std::string> paths;
  for (size_t i = 0; i < runs.size(); ++i) {
    headlineNumbers(runs[i].summary, "", perSeed[i]);
    for (const auto& [p, v] : perSeed[i])
      paths.insert(p);
  }
  Table t;
  t.id = method + ".seeds";
  t.name = "Headline numbers across seeds: mean, spread and the 95 % interval of the mean";
  t.columns = {"quantity", "n", "mean", "sd", "min", "max", "mean_lo", "mean_hi"};
  for (uint64_t s : seedValues)
    t.columns.push_back("seed " + std::to_string(s));
  numbers = nlohmann::json::object();
  for (const std::string& p : paths) {
    std::vector<double> v;
    std::vector<nlohmann::json> cells;
    for (const auto& seed : perSeed) {
      const auto it = seed.find(p);
      v.push_back(it == seed.end() ? std::nan("") : it->second);
      cells.push_back(cellOf(v.back()));
    }
    const Spread s = spreadOf(v);
    std::vector<nlohmann::json> row = {
        p, s.n, cellOf(s.mean), cellOf(s.sd), cellOf(s.min), cellOf(s.max), cellOf(s.lo), cellOf(s.hi)};
    row.insert(row.end(), cells.begin(), cells.end());
    t.rows.push_back(row);
    numbers[p] = spreadJson(s);
  }
  return t;
}

// Table "<method>.seed_overlap" and summary["overlap"]: the grids every repetition has, by id.
Table overlapTable(const std::string& method, const std::vector<AnalysisRun>& runs,
                   const std::vector<uint64_t>& seedValues, int topK, nlohmann::json& overlap) {
  Table t;
  t.id = method + ".seed_overlap";
  t.name = "Top-k heads across seeds: pairwise Jaccard@k, Spearman ρ and the heads in every seed's top k";
  t.columns = {"grid",          "k",
               "seeds",         "mean_jaccard",
               "min_jaccard",   "mean_spearman",
               "in_every_seed", "heads_in_every_seed"};
  for (uint64_t s : seedValues)
    t.columns.push_back("top_k seed " + std::to_string(s));
  overlap = nlohmann::json::object();
  for (const HeadGrid& g0 : runs.front().grids) {
    std::vector<const HeadGrid*> grids;
    for (const AnalysisRun& r : runs)
      for (const HeadGrid& g : r.grids)
        if (g.id == g0.id && g.layers() == g0.layers() && g.heads() == g0.heads()) grids.push_back(&g);
    if (grids.size() != runs.size()) continue;
    const int k = seedOverlapK(topK, g0.layers() * g0.heads());
    std::vector<std::vector<HeadRef>> tops;
    for (const HeadGrid* g : grids)
      tops.push_back(topHeads(*g, k));
    std::vector<double> jac, rho;
    for (size_t a = 0; a < grids.size(); ++a)
      for (size_t b = a + 1; b < grids.size(); ++b) {
        jac.push_back(jaccard(tops[a], tops[b]));
        rho.push_back(spearmanRho(*grids[a], *grids[b]));
      }
    std::vector<HeadRef> common = tops.front();
    for (const std::vector<HeadRef>& top : tops)
      common.erase(
          std::remove_if(common.begin(), common.end(),
                         [&](const HeadRef& h) { return std::find(top.begin(), top.end(), h) == top.end(); }),
          common.end());
    const Spread j = spreadOf(jac), r = spreadOf(rho);
    std::vector<nlohmann::json> row = {g0.id,
                                       k,
                                       static_cast<int>(grids.size()),
                                       cellOf(j.mean),
                                       cellOf(j.min),
                                       cellOf(r.mean),
                                       static_cast<int>(common.size()),
                                       headsText(common)};
    for (const std::vector<HeadRef>& top : tops)
      row.push_back(headsText(top));
    t.rows.push_back(row);
    overlap[g0.id] = {{"k", k},
                      {"mean_jaccard", doubleToJson(j.mean)},
                      {"min_jaccard", doubleToJson(j.min)},
                      {"mean_spearman", doubleToJson(r.mean)},
                      {"in_every_seed", common},
                      {"top_k", tops}};
  }
  return t;
}

}  // namespace

std::vector<std::string> seedOptionKeys(const MethodInfo& m) {
  std::vector<std::string> keys;
  for (const OptionSpec& o : m.options)
    if (isSeedKey(o.key) && o.type == OptionType::Int) keys.push_back(o.key);
  return keys;
}

bool acceptsSeeds(const MethodInfo& m) {
  return !m.imported && m.run && (m.takesTask() || !seedOptionKeys(m).empty());
}

void addSeedDeclarations(MethodInfo& m) {
  if (!acceptsSeeds(m) || m.option("seeds")) return;
  OptionSpec seeds;
  seeds.key = "seeds";
  seeds.type = OptionType::Int;
  seeds.default_value = 1;
  seeds.check = OptionCheck::range(1, 100);
  seeds.help =
      "repeat the run with the task's seed and every seed option advanced by 0, 1, ..., seeds - 1 and report "
      "across seeds: each headline number's mean, sd and 95 % interval, each grid's top-k overlap";
  m.options.push_back(seeds);
  OptionSpec topK;
  topK.key = "seeds_top_k";
  topK.type = OptionType::Int;
  topK.default_value = 0;
  topK.check = OptionCheck::atLeast(0);
  topK.help = "k of the top-k head overlap across seeds (0: 5 % of the heads, at least 4)";
  m.options.push_back(topK);
  m.outputs.push_back({OutputSpec::Kind::Table, m.name + ".seeds", "mean, sd, 95 % interval",
                       "headline numbers across seeds (seeds > 1)"});
  m.outputs.push_back({OutputSpec::Kind::Table, m.name + ".seed_overlap", "Jaccard@k",
                       "the top-k heads of every grid across seeds (seeds > 1)"});
}

int seedOverlapK(int requested, int heads) {
  const int k = requested > 0 ? requested : std::max(4, static_cast<int>(std::lround(0.05 * heads)));
  return std::max(1, std::min(k, heads));
}

SeedReport seedReport(const std::string& method, const std::vector<AnalysisRun>& runs,
                      const std::vector<uint64_t>& seedValues, int topK) {
  if (runs.empty()) fail(method, ": no runs to report across seeds");
  SeedReport r;
  nlohmann::json numbers, overlap;
  r.numbers = numbersTable(method, runs, seedValues, numbers);
  r.overlap = overlapTable(method, runs, seedValues, topK, overlap);
  r.summary = {{"n", runs.size()}, {"seeds", seedValues}, {"numbers", numbers}, {"overlap", overlap}};
  return r;
}

AnalysisOutput runAcrossSeeds(const MethodInfo& m, const MethodInputs& in, const nlohmann::json& options,
                              int seeds, int topK, const AnalysisContext& ctx) {
  const std::vector<std::string> keys = seedOptionKeys(m);
  std::vector<AnalysisRun> runs;
  std::vector<uint64_t> seedValues;
  AnalysisOutput first;
  for (int i = 0; i < seeds; ++i) {
    MethodInputs repeat{in.model, in.tokenizer, in.task};
    repeat.task.seed = in.task.seed + static_cast<uint64_t>(i);
    nlohmann::json o = options;
    for (const std::string& k : keys)
      if (o.contains(k) && o[k].is_number_integer()) o[k] = o[k].get<int64_t>() + i;
    const uint64_t shown = m.takesTask()  ? repeat.task.seed
                           : keys.empty() ? static_cast<uint64_t>(i)
                                          : o[keys.front()].get<uint64_t>();
    seedValues.push_back(shown);
    const AnalysisContext sub =
        subContext(ctx, double(i) / seeds, double(i + 1) / seeds, cat("seed ", i + 1, "/", seeds));
    AnalysisOutput out = m.run(repeat, o, sub);
    runs.push_back(out.run);
    if (i == 0) first = std::move(out);
  }
  SeedReport report = seedReport(m.name, runs, seedValues, topK);
  first.run.tables.push_back(report.numbers);
  first.run.tables.push_back(report.overlap);
  report.summary["task_seeds"] = m.takesTask();
  report.summary["option_seeds"] = keys;
  first.run.summary["seeds"] = report.summary;
  return first;
}

}  // namespace hs
