#pragma once
// What the two sweep benchmarks (bench_patching: GPT-2 shape, bench_real_shapes: Llama-3.2-1B shape) share:
// the prompt pair, the heads the naive loop is timed on, and the naive loop's one patched forward per head.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/toolkit/patch_sweep.h"
#include "model/hooks.h"
#include "model/transformer.h"

namespace hs::bench {

// The benchmarks' prompt: t_i = (7919 i + 13) mod vocab.
inline std::vector<int64_t> benchTokens(int n, int64_t vocab) {
  std::vector<int64_t> t;
  for (int i = 0; i < n; ++i)
    t.push_back((7919LL * i + 13) % vocab);
  return t;
}

// Last-position FromClean patches of hook_z with the logit difference: clean = benchTokens(tokens), the
// corrupt prompt changes `changed` positions; target = the clean argmax, distractor = the corrupt argmax
// (the next token when they agree).
inline PatchSweepSpec sweepSpec(const Transformer& model, int tokens, const std::vector<int>& changed) {
  at::NoGradGuard noGrad;
  const int64_t vocab = model.config().vocab_size;
  PatchSweepSpec spec;
  spec.clean = benchTokens(tokens, vocab);
  spec.corrupt = spec.clean;
  for (int p : changed)
    spec.corrupt[static_cast<size_t>(p)] = (spec.corrupt[static_cast<size_t>(p)] + 12345) % vocab;
  spec.metric = PatchMetric::LogitDiff;
  spec.mode = PatchMode::FromClean;
  auto argmax = [&](const std::vector<int64_t>& ids) {
    RunRequest r;
    r.tokens = at::tensor(ids, at::kLong).view({1, -1});  // [1, pos]
    r.last_logits_only = true;
    return model.run(r).logits[0][0].argmax().item<int64_t>();
  };
  spec.target = argmax(spec.clean);
  spec.distractor = argmax(spec.corrupt);
  if (spec.distractor == spec.target) spec.distractor = (spec.target + 1) % vocab;
  return spec;
}

// k (layer, head) pairs spread over every layer with varied heads, for timing the naive loop on a subset.
inline std::vector<std::pair<int, int>> spreadHeads(int layers, int heads, int k) {
  const int all = layers * heads;
  std::vector<std::pair<int, int>> subset;
  for (int i = 0; i < k; ++i) {
    const int flat = static_cast<int>((int64_t(i) * all) / k);
    subset.push_back({flat / heads, (flat * 5 + i) % heads});
  }
  return subset;
}

// The naive loop: construction runs the clean prompt (capturing every layer's hook_z) and the corrupt one;
// effect() is one full corrupt forward with one head's last-position z from the clean run, minus the
// corrupt metric: what the sweep's grid holds for that head.
class NaivePatching {
 public:
  NaivePatching(const Transformer& model, const PatchSweepSpec& spec) : model_(model), spec_(spec) {
    at::NoGradGuard noGrad;
    corrupt_.tokens = at::tensor(spec.corrupt, at::kLong).view({1, -1});  // [1, pos]
    corrupt_.last_logits_only = true;
    RunRequest clean = corrupt_;
    clean.tokens = at::tensor(spec.clean, at::kLong).view({1, -1});  // [1, pos]
    const int L = model.config().n_layers;
    for (int l = 0; l < L; ++l)
      clean.capture.insert(attnZ(l));
    const RunResult r = model.run(clean);
    for (int l = 0; l < L; ++l)
      cleanZ_.push_back(r.cache.at(attnZ(l)));  // [1, pos, head, d_head]
    metric(r.logits);                           // the clean metric, as the sweep computes it
    base_ = metric(model.run(corrupt_).logits);
  }

  double effect(int layer, int head) const {
    at::NoGradGuard noGrad;
    RunRequest r = corrupt_;
    Intervention iv;
    iv.site = attnZ(layer);
    iv.heads = {head};
    iv.positions = {-1};
    iv.op = InterventionOp::Replace;
    iv.tensor = cleanZ_[static_cast<size_t>(layer)][0][-1].narrow(0, head, 1);  // [1, d_head]
    r.interventions = {iv};
    return metric(model_.run(r).logits) - base_;
  }

 private:
  double metric(const at::Tensor& logits) const {  // logits [1, 1, vocab]
    return patchMetric(logits.select(1, 0), spec_).item<double>();
  }

  const Transformer& model_;
  const PatchSweepSpec& spec_;
  RunRequest corrupt_;
  std::vector<at::Tensor> cleanZ_;  // per layer [1, pos, head, d_head]
  double base_ = 0;
};

}  // namespace hs::bench
