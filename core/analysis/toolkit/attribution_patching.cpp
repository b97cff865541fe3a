// Attribution patching: the clean and corrupt runs (one batched forward without gradients, as the fast
// exact sweep's), then the corrupt run's positions from the first patched one on (p0..), again, with a
// zero tensor that requires grad added at every layer's hook_z at the patched positions, and one backward.
// The gradient of the metric with respect to that zero tensor is ∂metric/∂z at the corrupt run. A z at
// positions ≥ p0 reaches the last position's logits only through positions ≥ p0 (causal attention), so the
// positions before p0 enter as the corrupt run's cached keys and values, constants: the graph and the
// backward are those of the fresh positions only (one position for a last-position sweep).
#include "analysis/toolkit/attribution_patching.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep_checks.h"
#include "util/error.h"

namespace hs {

std::vector<HeadGrid> attributionPatchingPositions(const Transformer& model, const PatchSweepSpec& spec,
                                                   const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  const patching::Prepared p = patching::prepare(model, spec, "attributionPatching");
  const std::vector<int>& positions = p.positions;  // every patched position
  const int64_t n = int64_t(positions.size());
  const at::Tensor idx = patching::stateIndex(model, p, positions);  // [n_pos] in the stored state

  c10::InferenceMode notInference(false);  // the backward needs a recorded graph
  ctx.checkCancelled();
  patching::BaseRuns base;
  {
    at::NoGradGuard noGrad;
    base = patching::baseRuns(model, p, spec, ctx);
  }
  const std::vector<at::Tensor>& cleanZ = base.cleanZ;  // per layer [1, pos − first, head, d_head]
  ctx.report(1.0 / 3, "attribution: clean and corrupt runs");
  ctx.checkCancelled();

  c10::AutoGradMode withGrad(true);
  const int64_t p0 = positions.front();
  RunRequest req;
  req.resid_in = base.corrupt.residPre[0];                   // [1, pos − p0, d_model] (p0 = first)
  KVCache prefix = patching::prefixOf(base.corrupt.kv, p0);  // the positions before p0, constants
  if (!prefix.empty()) {
    req.kv = &prefix;
    req.kv_read_only = true;
  }
  req.last_logits_only = true;
  const patching::LogitColumns columns = patching::logitColumns(spec);  // only the metric's logits
  req.logit_tokens = columns.tokens;
  // Per layer [n_pos, head, d_head] zeros (broadcast to the slice [1, n_pos, head, d_head]); their grad is
  // ∂metric/∂z.
  const ZGradientProbes zg = zGradientProbes(model, 0, positions, {n, H, c.d_head});
  const std::vector<at::Tensor>& probes = zg.probes;
  req.interventions.insert(req.interventions.end(), zg.interventions.begin(), zg.interventions.end());
  const RunResult r = model.run(req);
  const at::Tensor metric = patchMetric(r.logits.select(1, 0), columns.spec)[0];  // [] float64
  ctx.report(2.0 / 3, "attribution: corrupt run with gradients");
  ctx.checkCancelled();
  metric.backward();
  const double corruptMetric = base.corrupt.metric;

  // contrib[l] = (z_patch − z_corrupt) · ∂metric/∂z per (position, head).
  std::vector<at::Tensor> contrib;  // per layer [n_pos, head] float64 on the CPU
  {
    at::NoGradGuard noGrad;
    for (int l = 0; l < L; ++l) {
      const at::Tensor zCorrupt = base.corrupt.z[l][0].index_select(0, idx);  // [n_pos, head, d_head]
      const at::Tensor zPatch =
          patching::patchValues(model, spec, p, cleanZ, l, positions);  // [n_pos, head, d_head]
      const at::Tensor grad = probes[l].grad();                         // [n_pos, head, d_head]
      if (!grad.defined()) fail("attributionPatching: no gradient reached hook_z of layer ", l);
      contrib.push_back(
          ((zPatch - zCorrupt).to(at::kDouble) * grad.to(at::kDouble)).sum(-1).cpu());  // [n_pos, head]
    }
  }

  std::vector<HeadGrid> grids;
  const size_t nGrids = spec.per_position ? positions.size() : 1;
  for (size_t i = 0; i < nGrids; ++i) {
    const std::vector<int> set = spec.per_position ? std::vector<int>{positions[i]} : positions;
    HeadGrid g = patching::makeGrid(model, spec, "attrib", "Attribution patching", set, "attribution");
    g.provenance.method = "attribution";
    g.provenance.options["corrupt_metric"] = corruptMetric;
    for (int l = 0; l < L; ++l) {
      const at::Tensor v = spec.per_position ? contrib[l][int64_t(i)] : contrib[l].sum(0);  // [head]
      for (int h = 0; h < H; ++h)
        g.values(l, h) = v[h].item<double>();
    }
    if (spec.per_position) {
      g.provenance.options["position"] = positions[i];
      g.id += ".pos" + std::to_string(positions[i]);
      g.name += cat(" @ position ", positions[i]);
    }
    grids.push_back(std::move(g));
  }
  ctx.report(1.0, "attribution: done");
  return grids;
}

HeadGrid attributionPatching(const Transformer& model, const PatchSweepSpec& spec,
                             const AnalysisContext& ctx) {
  if (spec.per_position)
    fail("attributionPatching: per_position gives one grid per position; use attributionPatchingPositions");
  return attributionPatchingPositions(model, spec, ctx).front();
}

}  // namespace hs
