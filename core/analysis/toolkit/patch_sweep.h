#pragma once
// The activation patching sweep (docs/methods.md, "Activation patching"): the effect of patching one head's
// hook_z at chosen positions of the corrupt run, for every (layer, head), as a HeadGrid. The shared workhorse
// of the causal views (FV's AIE, token/concept copying scores, "patch from clean" in the Heads tab).
//
// Two implementations of the same numbers:
//  - naive: one full forward of the corrupt prompt per head (the oracle, and the benchmark baseline);
//  - fast: recomputes only what a patch can change. Layers below the patched one are identical to the
//    corrupt run, and a patch at positions ≥ p0 leaves every position before p0 untouched (causal
//    attention). So the variants of layer l start from the corrupt run's residual entering l at
//    positions p0.. (RunRequest::resid_in) and attend to the corrupt run's KV cache for positions
//    < p0. The variants of several consecutive layers share one batched forward (row = one patched
//    head; rows of a later layer recompute the corrupt run until their layer) so that each forward
//    holds about 48 row-positions: a last-position sweep of a 12 × 12 model is 3 forwards of
//    [batch = 48, pos = 1] from layers 0, 4 and 8; variants of many positions get one forward per layer.
// Both unembed only the last position (the metric reads the next-token distribution there).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

// Read at the last position of the prompt.
enum class PatchMetric {
  TargetProb,   // softmax(logits)[target]                  (grid unit "ΔP")
  TargetLogit,  // logits[target]                           (grid unit "Δlogit")
  LogitDiff,    // logits[target] − logits[distractor]      (grid unit "Δlogit diff")
};
// What a patched head's z becomes at the patched positions.
enum class PatchMode {
  FromClean,  // the clean run's z of the same head and position
  Zero,       // 0
  Mean,       // mean_z[layer, head] (e.g. the mean over many clean prompts: FV's AIE)
};

const char* toString(PatchMetric m);  // "target_prob", "target_logit", "logit_diff"
const char* toString(PatchMode m);    // "from_clean", "zero", "mean"
PatchMetric parsePatchMetric(const std::string& s);
PatchMode parsePatchMode(const std::string& s);

struct PatchSweepSpec {
  std::vector<int64_t> clean, corrupt;   // same length; clean is only read (and may be empty) for FromClean
  int64_t target = -1, distractor = -1;  // token ids; distractor only for LogitDiff
  PatchMetric metric = PatchMetric::TargetProb;
  PatchMode mode = PatchMode::FromClean;
  // Patched positions (negative = from the end). Default {last}. Without per_position all of them are
  // patched together (one grid); with per_position each is its own sweep (one grid per position;
  // empty = every position of the prompt).
  std::vector<int> positions;
  at::Tensor mean_z;          // Mean mode: [layers, heads, d_head] (head_toolkit.h meanZ)
  bool per_position = false;  // see positions
};

// Effect of patching each head's hook_z: metric(patched) − metric(corrupt baseline), values(l, h).
// The grid's provenance.options hold the spec (mode, metric, target, distractor, positions) and the
// baselines: "corrupt_metric" and (FromClean) "clean_metric". Progress is reported after each
// batched forward (naive: each layer); cancellation (hs::Cancelled) is checked between forwards.
// Requires !spec.per_position.
HeadGrid patchingSweep(const Transformer& model, const PatchSweepSpec& spec, const AnalysisContext& ctx = {});
HeadGrid patchingSweepNaive(const Transformer& model, const PatchSweepSpec& spec,
                            const AnalysisContext& ctx = {});

// One grid per patched position when spec.per_position (provenance.options["position"] = the absolute
// position), else the single grid of patchingSweep. `naive` selects the one-forward-per-head loop.
std::vector<HeadGrid> patchingSweepPositions(const Transformer& model, const PatchSweepSpec& spec,
                                             const AnalysisContext& ctx = {}, bool naive = false);

// Several (clean, corrupt) pairs (e.g. FV's shuffled-label prompts): the mean of their grids
// (patchingSweep each; all specs must share metric and mode, and not be per_position), with each head's
// standard error over the pairs (HeadGrid::se: sample sd / √n; none for one pair).
HeadGrid patchingSweepAverage(const Transformer& model, const std::vector<PatchSweepSpec>& specs,
                              const AnalysisContext& ctx = {});

// The metric of last-position logits [batch, vocab] → [batch] float64 (differentiable in the logits).
at::Tensor patchMetric(const at::Tensor& lastLogits, const PatchSweepSpec& spec);

}  // namespace hs
