#pragma once
// Repeating a method across seeds (docs/methods.md, "Intervals and seeds"). The registry gives every method
// that has something seeded (a task, or an option named "seed" or "*_seed") two options:
//   seeds        S ≥ 1: the run is repeated S times with the task's seed and every seed option advanced by
//                0, 1, …, S − 1; the output is the first repetition's run plus what holds across them;
//   seeds_top_k  k of the top-k overlap (0: 5 % of the heads, at least 4);
// and, when S > 1, two tables and a summary entry:
//   "<method>.seeds"         one row per headline number (every non-integer number of the summary, by its
//                            path "a.b.c"): n, mean, sd, min, max, the 95 % t interval of the mean, each
//                            seed's value;
//   "<method>.seed_overlap"  one row per grid: k, the mean and smallest pairwise Jaccard@k of the seeds'
//   top-k
//                            heads, the mean pairwise Spearman ρ, the heads in every seed's top k, each
//                            seed's top k;
//   summary["seeds"]         {"n", "task_seeds", "option_seeds", "numbers": {path: spread}, "overlap": {grid:
//   ...}}.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/framework/registry.h"

namespace hs {

// Whether `m` repeats across seeds: a computed method with a task or an option "seed" / "*_seed".
bool acceptsSeeds(const MethodInfo& m);
// The option keys advanced with the seed: "seed" and every "*_seed" option of `m`.
std::vector<std::string> seedOptionKeys(const MethodInfo& m);
// Adds the seeds options and the two tables to a record that accepts seeds (and has none yet).
void addSeedDeclarations(MethodInfo& m);
// The k of the overlap: `requested` when positive, else 5 % of `heads`, at least 4 (at most `heads`).
int seedOverlapK(int requested, int heads);

// The repetitions of `m.run` over `seeds` seeds (`options`: the method's resolved options without the seeds
// options) and the across-seed tables and summary added to the first repetition's output.
AnalysisOutput runAcrossSeeds(const MethodInfo& m, const MethodInputs& in, const nlohmann::json& options,
                              int seeds, int topK, const AnalysisContext& ctx);

// The across-seed tables and summary entry of `runs` (each one repetition's run), seeds `seedValues`.
struct SeedReport {
  Table numbers, overlap;
  nlohmann::json summary;
};
SeedReport seedReport(const std::string& method, const std::vector<AnalysisRun>& runs,
                      const std::vector<uint64_t>& seedValues, int topK);

}  // namespace hs
