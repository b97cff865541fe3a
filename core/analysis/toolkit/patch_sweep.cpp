// The activation patching sweep: the naive oracle (one full forward per head) and the fast path
// (only the layers and positions a patch can change, the heads of a layer batched). See patch_sweep.h.
#include "analysis/toolkit/patch_sweep.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>

#include "analysis/toolkit/patch_sweep_checks.h"
#include "util/error.h"

namespace hs {

namespace {

using patching::BaseRuns;
using patching::CorruptRun;
using patching::Prepared;

// Fast path: the most row-positions one batched forward holds. A last-position sweep of a 12 × 12 or a
// 16 × 32 model is one forward (each layer's weights read once, the largest matrix products); variants of
// many positions get a layer or two per forward, which bounds the activations' memory.
constexpr int64_t kRowPositions = 1024;
// and at most this much float32 attention (scores, masked scores, pattern: 3 × heads × key positions × 4
// bytes per row-position), which bounds a long prompt's forwards.
constexpr int64_t kAttentionBytes = int64_t(256) << 20;

// The intervention that patches head h of layer l at `positions` in batch row `row` (−1 = all rows);
// `values` [n_pos, head, d_head] from patchValues.
Intervention headPatch(const PatchSweepSpec& spec, int layer, int head, const std::vector<int>& positions,
                       const at::Tensor& values, int row) {
  Intervention iv;
  iv.site = attnZ(layer);
  iv.heads = {head};
  iv.positions = positions;
  if (row >= 0) iv.rows = {row};
  if (spec.mode == PatchMode::Zero) {
    iv.op = InterventionOp::Zero;
  } else {
    iv.op = spec.mode == PatchMode::Mean ? InterventionOp::Mean : InterventionOp::Replace;
    iv.tensor =
        values.narrow(1, head, 1);  // [n_pos, 1, d_head]: broadcasts to the slice [1, n_pos, 1, d_head]
  }
  return iv;
}

// One sweep over every (layer, head) for one set of patched positions. `progress0`/`progressSpan`
// place its per-layer progress inside a larger job (per-position mode).
HeadGrid sweepOnce(const Transformer& model, const PatchSweepSpec& spec, const Prepared& p,
                   const std::vector<at::Tensor>& cleanZ, const CorruptRun& corrupt,
                   const std::vector<int>& positions, bool naive, const AnalysisContext& ctx,
                   double progress0, double progressSpan) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  HeadGrid g =
      patching::makeGrid(model, spec, "patch", "Activation patching", positions, naive ? "naive" : "fast");
  g.provenance.options["corrupt_metric"] = corrupt.metric;

  // Fast path: a patch at positions ≥ p0 reuses the corrupt run for positions < p0 (the KV prefix)
  // and restarts at the patched layer from the corrupt residual at positions p0...
  const int64_t p0 = positions.front();
  const int64_t fresh = p.pos - p0;  // positions each variant recomputes
  const KVCache prefix = naive ? KVCache{} : patching::prefixOf(corrupt.kv, p0);

  if (naive) {
    for (int l = 0; l < L; ++l) {
      const at::Tensor values =
          patching::patchValues(model, spec, p, cleanZ, l, positions);  // [n_pos, head, d_head]
      for (int h = 0; h < H; ++h) {
        ctx.checkCancelled();
        RunRequest req;
        req.tokens = p.corrupt;
        req.last_logits_only = true;
        req.interventions.push_back(headPatch(spec, l, h, positions, values, -1));
        const RunResult r = model.run(req);
        g.values(l, h) = patchMetric(r.logits.select(1, 0), spec).item<double>() - corrupt.metric;
      }
      ctx.report(progress0 + progressSpan * double(l + 1) / L,
                 cat("patching layer ", l + 1, "/", L, " (naive)"));
    }
    return g;
  }

  // The variants of consecutive layers [l0, l1) share one forward that starts at l0: row (m − l0)·H + h
  // patches head h of layer m, and the rows of layer m join the batch as it enters m (resid_join), from
  // the corrupt residual at the fresh positions. Every row attends to the same cached keys/values of the
  // corrupt run before p0 (a shared read-only cache, not copied per row). A forward holds as many layers'
  // rows as fit kRowPositions row-positions and kAttentionBytes of attention.
  const int64_t rowPositions =
      std::min(kRowPositions, kAttentionBytes / (int64_t(3) * H * p.pos * int64_t(sizeof(float))));
  const int span = int(std::max<int64_t>(1, std::min<int64_t>(L, rowPositions / (H * fresh))));
  const patching::LogitColumns columns = patching::logitColumns(spec);  // only the metric's logits
  for (int l0 = 0; l0 < L; l0 += span) {
    ctx.checkCancelled();
    const int l1 = std::min(L, l0 + span);
    auto variantsOf = [&](int m) {  // [heads, fresh, d_model]: the corrupt residual entering layer m
      return corrupt.residPre[m].narrow(1, p0 - p.first, fresh).expand({H, fresh, c.d_model});
    };
    RunRequest req;
    req.start_layer = l0;
    req.resid_in = variantsOf(l0);
    for (int m = l0 + 1; m < l1; ++m)
      req.resid_join[m] = variantsOf(m);
    KVCache kv = prefix;  // [1, kv_head, p0, d_head] views of the corrupt run's K/V, shared by every row
    if (!kv.empty()) {
      req.kv = &kv;
      req.kv_read_only = true;
    }
    req.last_logits_only = true;
    req.logit_tokens = columns.tokens;
    for (int m = l0; m < l1; ++m) {
      const at::Tensor values =
          patching::patchValues(model, spec, p, cleanZ, m, positions);  // [n_pos, head, d_head]
      for (int h = 0; h < H; ++h)
        req.interventions.push_back(headPatch(spec, m, h, positions, values, (m - l0) * H + h));
    }
    const RunResult r = model.run(req);
    const at::Tensor metric =
        patchMetric(r.logits.select(1, 0), columns.spec).cpu().contiguous();  // [variant rows] float64
    const double* v = metric.data_ptr<double>();
    for (int m = l0; m < l1; ++m)
      for (int h = 0; h < H; ++h)
        g.values(m, h) = v[(m - l0) * H + h] - corrupt.metric;
    ctx.report(progress0 + progressSpan * double(l1) / L, cat("patching layers ", l0 + 1, "-", l1, "/", L));
  }
  return g;
}

std::vector<HeadGrid> sweep(const Transformer& model, const PatchSweepSpec& spec, const AnalysisContext& ctx,
                            bool naive, const std::string& who) {
  const Prepared p = patching::prepare(model, spec, who);
  ctx.checkCancelled();
  // The naive oracle runs clean and corrupt prompts on their own; the fast path batches them.
  BaseRuns base;
  if (naive) {
    base.cleanZ =
        patching::cleanHeadOutputs(model, p, spec, &base.cleanMetric);  // [1, pos − first, head, d_head]
    ctx.checkCancelled();
    base.corrupt = patching::corruptRun(model, p, spec, false);
  } else {
    base = patching::baseRuns(model, p, spec, ctx);
  }
  const std::vector<at::Tensor>& cleanZ = base.cleanZ;
  const CorruptRun& corrupt = base.corrupt;
  const double cleanMetric = base.cleanMetric;

  std::vector<std::vector<int>> sets;  // the position sets, one sweep each
  if (spec.per_position) {
    for (int q : p.positions)
      sets.push_back({q});
  } else {
    sets.push_back(p.positions);
  }
  std::vector<HeadGrid> grids;
  for (size_t i = 0; i < sets.size(); ++i) {
    HeadGrid g = sweepOnce(model, spec, p, cleanZ, corrupt, sets[i], naive, ctx, double(i) / sets.size(),
                           1.0 / sets.size());
    if (spec.mode == PatchMode::FromClean) g.provenance.options["clean_metric"] = cleanMetric;
    if (spec.per_position) {
      g.provenance.options["position"] = sets[i].front();
      g.id += ".pos" + std::to_string(sets[i].front());
      g.name += cat(" @ position ", sets[i].front());
    }
    grids.push_back(std::move(g));
  }
  return grids;
}

}  // namespace

std::vector<HeadGrid> patchingSweepPositions(const Transformer& model, const PatchSweepSpec& spec,
                                             const AnalysisContext& ctx, bool naive) {
  at::NoGradGuard noGrad;  // a sweep never needs gradients
  return sweep(model, spec, ctx, naive, naive ? "patchingSweepNaive" : "patchingSweep");
}

HeadGrid patchingSweep(const Transformer& model, const PatchSweepSpec& spec, const AnalysisContext& ctx) {
  if (spec.per_position)
    fail("patchingSweep: per_position gives one grid per position; use patchingSweepPositions");
  return patchingSweepPositions(model, spec, ctx, false).front();
}

HeadGrid patchingSweepNaive(const Transformer& model, const PatchSweepSpec& spec,
                            const AnalysisContext& ctx) {
  if (spec.per_position)
    fail("patchingSweepNaive: per_position gives one grid per position; use patchingSweepPositions");
  return patchingSweepPositions(model, spec, ctx, true).front();
}

HeadGrid patchingSweepAverage(const Transformer& model, const std::vector<PatchSweepSpec>& specs,
                              const AnalysisContext& ctx) {
  if (specs.empty()) fail("patchingSweepAverage: no prompt pairs given");
  HeadGrid mean;
  Eigen::MatrixXd squares;  // Σ values² per head, for the standard error
  for (size_t i = 0; i < specs.size(); ++i) {
    const PatchSweepSpec& s = specs[i];
    if (s.metric != specs[0].metric || s.mode != specs[0].mode)
      fail("patchingSweepAverage: pair ", i, " has metric ", toString(s.metric), " and mode ",
           toString(s.mode), ", pair 0 ", toString(specs[0].metric), " and ", toString(specs[0].mode),
           " (they must agree)");
    AnalysisContext inner;
    inner.cancelled = ctx.cancelled;
    inner.progress = [&](double f, const std::string& msg) {
      ctx.report((double(i) + f) / specs.size(), cat("pair ", i + 1, "/", specs.size(), ": ", msg));
    };
    HeadGrid g;
    try {
      g = patchingSweep(model, s, inner);
    } catch (const Error& e) {
      fail("patchingSweepAverage: pair ", i, ": ", e.what());
    }
    if (i == 0) {
      squares = g.values.cwiseProduct(g.values);
      mean = std::move(g);
      mean.provenance.options.erase("positions");
      mean.provenance.options.erase("target");
      mean.provenance.options.erase("distractor");
      mean.provenance.options.erase("corrupt_metric");
      mean.provenance.options.erase("clean_metric");
    } else {
      mean.values += g.values;
      squares += g.values.cwiseProduct(g.values);
    }
  }
  const double n = double(specs.size());
  mean.values /= n;
  // se = sd / √n with the sample variance (Σx² − n·mean²) / (n − 1); none for a single pair.
  if (specs.size() > 1)
    mean.se = ((squares - n * mean.values.cwiseProduct(mean.values)) / (n - 1)).cwiseMax(0.0).cwiseSqrt() /
              std::sqrt(n);
  mean.provenance.n_prompts = int(specs.size());
  mean.id += ".mean";
  mean.name += cat(" (mean of ", specs.size(), " pairs)");
  return mean;
}

}  // namespace hs
