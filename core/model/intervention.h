#pragma once
// Interventions are values, not callbacks. A forward takes a list of them; each reports how many
// (row, position[, head]) vectors it changed, and a run where one changed nothing is an error.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "model/hooks.h"

namespace hs {

enum class InterventionOp {
  Zero,         // x ← 0
  Mean,         // x ← tensor            (a mean activation, broadcast over the selection)
  Replace,      // x ← tensor            (patch from another run's cache)
  Add,          // x ← x + scale·tensor  (steering vector)
  Interpolate,  // x ← (1−α)·x + α·tensor, α = `alpha` (may require grad: SITE)
  Scale,        // x ← scale·x
};

const char* toString(InterventionOp op);
InterventionOp parseInterventionOp(const std::string& s);

// hits count (row, pos, head) vectors on per-head sites — for hook_pattern (row, head, q_pos),
// each a row of attention over keys — and (row, pos) vectors elsewhere.
struct Intervention {
  Site site;
  std::vector<int> heads;      // per-head sites only; empty = every head. Query-head indices (GQA too).
  std::vector<int> positions;  // absolute positions in the padded sequence; negative counts from the end
                               // (−1 = last); empty = every position of this forward
  std::vector<int> rows;       // batch rows; empty = every row
  InterventionOp op = InterventionOp::Zero;
  // The value for Mean / Replace / Add / Interpolate. Either the full site shape of this forward
  // (then it is indexed with the same selection — e.g. a clean run's cached hook_z) or any shape
  // that broadcasts to the selected slice [rows, positions, heads, ...] (e.g. [heads, d_head]).
  at::Tensor tensor;
  at::Tensor alpha;    // Interpolate: broadcasts like `tensor` (e.g. [heads, 1]); may require grad
  double scale = 1.0;  // Add, Scale
};

}  // namespace hs
