#pragma once
// Internal to the forward: an Intervention checked against one run (layer, heads, rows and
// positions resolved to index tensors) and its differentiable application at its site.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "model/config.h"
#include "model/intervention.h"

namespace hs {

// The extent of one forward, needed to check selections.
struct RunExtent {
  int64_t batch = 0;
  int64_t cached = 0;  // positions already in the KV cache
  int64_t fresh = 0;   // positions of this forward
};

struct ResolvedIntervention {
  const Intervention* iv = nullptr;
  size_t index = 0;         // position in RunRequest::interventions (for messages and hits)
  at::Tensor rows;          // [n_rows] int64 batch rows
  at::Tensor positions;     // [n_pos] int64 positions local to this forward
  at::Tensor heads;         // [n_heads] int64 query heads (per-head sites only)
  bool selectsAll = false;  // every row, position (and head): no indexing needed
  int64_t vectors = 0;      // (row, pos[, head]) vectors the selection covers
};

// "intervention 2 (zero at blocks.3.attn.hook_z)" — the prefix of every message about it.
std::string describeIntervention(const Intervention& iv, size_t index);

// Checks everything that can be checked before the forward: layer, heads, rows and positions in
// range, no duplicates, the tensors the op needs. Throws hs::Error naming the intervention and the
// valid range.
ResolvedIntervention resolveIntervention(const Intervention& iv, size_t index, const ModelConfig& config,
                                         const RunExtent& extent, const at::Device& device);

// x at the intervention's site (site layout, see hooks.h) → the modified value, out of place and
// differentiable in x, tensor and alpha. `x` may be modified in place only when `owned` is true
// (a tensor this forward created for the purpose); returns whether the result is owned.
at::Tensor applyIntervention(const ResolvedIntervention& r, const at::Tensor& x, bool& owned);

}  // namespace hs
