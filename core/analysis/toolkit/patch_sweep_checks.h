#pragma once
// Internal to patch_sweep.cpp and attribution_patching.cpp: the checked form of a PatchSweepSpec, the values
// a patch writes, and the grids both fill.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "analysis/toolkit/patch_sweep.h"

namespace hs::patching {

struct Prepared {
  at::Tensor corrupt;          // [1, pos] int64
  at::Tensor clean;            // [1, pos] int64 (FromClean only; else undefined)
  int64_t pos = 0;             // prompt length
  std::vector<int> positions;  // absolute, ascending, distinct: the patched set (each its own sweep
                               // when per_position; every position when per_position and none given)
  int64_t first = 0;           // positions.front(): the runs' per-position state starts there (a patch
                               // changes nothing before it)
};

// Checks the spec against the model (lengths, token ids, target/distractor, positions, mean_z shape);
// errors name the field and the valid range.
Prepared prepare(const Transformer& model, const PatchSweepSpec& spec, const std::string& who);

// The clean run's hook_z of every layer from the first patched position on, [1, pos − first, head, d_head]
// each (FromClean only; else empty), and its metric in *cleanMetric when given.
std::vector<at::Tensor> cleanHeadOutputs(const Transformer& model, const Prepared& p,
                                         const PatchSweepSpec& spec, double* cleanMetric = nullptr);

// The corrupt run every sweep compares against: its metric, and (with its state) the residual entering
// every layer and the head outputs from the first patched position on, and the keys/values of every layer.
struct CorruptRun {
  double metric = 0;
  std::vector<at::Tensor> residPre;  // per layer [1, pos − first, d_model]
  std::vector<at::Tensor> z;         // per layer [1, pos − first, head, d_head]
  KVCache kv;                        // [1, kv_head, pos, d_head] per layer
};
CorruptRun corruptRun(const Transformer& model, const Prepared& p, const PatchSweepSpec& spec,
                      bool keepState);

// The clean and corrupt runs of the fast paths (exact sweep, attribution) in one batched forward (row 0
// clean, row 1 corrupt): the results of cleanHeadOutputs and of corruptRun with its state, reading the
// weights once; the last layer computes only the positions a patch can change (last_layer_from). (A prefix
// both prompts share is computed for both: running it once, as a forward of its own or as fewer rows of
// each matrix product, cost more than it saved on this project's machine.) Checks ctx for cancellation
// before it runs.
struct BaseRuns {
  std::vector<at::Tensor> cleanZ;  // per layer [1, pos − first, head, d_head] (FromClean only)
  double cleanMetric = 0;
  CorruptRun corrupt;
};
BaseRuns baseRuns(const Transformer& model, const Prepared& p, const PatchSweepSpec& spec,
                  const AnalysisContext& ctx);

// The logit metrics read one or two vocabulary entries (target, distractor): a run can unembed only those
// (RunRequest::logit_tokens) and compute the metric with `spec`, whose target and distractor index them.
// TargetProb needs the whole vocabulary: no tokens, the spec unchanged.
struct LogitColumns {
  std::vector<int64_t> tokens;
  PatchSweepSpec spec;
};
LogitColumns logitColumns(const PatchSweepSpec& spec);

// The first `n` cached positions of a cache (views): what a patch at positions ≥ n cannot change.
KVCache prefixOf(const KVCache& kv, int64_t n);

// Where absolute `positions` (≥ p.first) sit in the stored per-position state, which starts at p.first:
// [n_pos] int64 on the model's device.
at::Tensor stateIndex(const Transformer& model, const Prepared& p, const std::vector<int>& positions);

// What layer l's heads become at `positions` (absolute, ≥ p.first): [n_pos, head, d_head] (clean z, zeros
// or mean_z).
at::Tensor patchValues(const Transformer& model, const PatchSweepSpec& spec, const Prepared& p,
                       const std::vector<at::Tensor>& cleanZ, int layer, const std::vector<int>& positions);

// An empty layers × heads grid with id, name, unit and provenance (method, spec options).
HeadGrid makeGrid(const Transformer& model, const PatchSweepSpec& spec, const std::string& idPrefix,
                  const std::string& namePrefix, const std::vector<int>& positions, const std::string& path);

}  // namespace hs::patching
