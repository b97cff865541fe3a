#pragma once
// Attribution patching (docs/methods.md, "Activation patching"): the first-order estimate of the patching
// sweep for all heads from one clean forward and one corrupt forward + backward:
//   Δmetric(l, h) ≈ Σ_{p ∈ patched positions} (z_patch − z_corrupt)[p, h] · ∂metric/∂z[p, h]
// where z_patch is the clean run's z (FromClean), 0 (Zero) or mean_z (Mean), and the gradient is taken
// at the corrupt run. Exact when the metric is linear in z; shown beside the exact sweep with their
// rank correlation.
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/toolkit/patch_sweep.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

// Same spec and grid layout as patchingSweep (id "attrib.<mode>.<metric>"). Requires !spec.per_position.
// Turns autograd on for its own forward (callers may hold NoGrad / InferenceMode); weights stay frozen.
HeadGrid attributionPatching(const Transformer& model, const PatchSweepSpec& spec,
                             const AnalysisContext& ctx = {});

// One grid per position when spec.per_position (still one forward + backward), else the single grid.
std::vector<HeadGrid> attributionPatchingPositions(const Transformer& model, const PatchSweepSpec& spec,
                                                   const AnalysisContext& ctx = {});

}  // namespace hs
