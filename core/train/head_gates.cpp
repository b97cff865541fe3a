#include "train/head_gates.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "util/error.h"

namespace hs {

at::Tensor hardConcreteSample(const at::Tensor& logAlpha, const at::Tensor& u) {
  const at::Tensor s = at::sigmoid((at::log(u) - at::log1p(-u) + logAlpha) / HardConcrete::kBeta);
  return at::clamp(s * (HardConcrete::kZeta - HardConcrete::kGamma) + HardConcrete::kGamma, 0.0, 1.0);
}

at::Tensor hardConcreteOpenProbability(const at::Tensor& logAlpha) {
  return at::sigmoid(logAlpha - HardConcrete::kBeta * std::log(-HardConcrete::kGamma / HardConcrete::kZeta));
}

at::Tensor hardConcreteDeterministic(const at::Tensor& logAlpha) {
  return at::clamp(
      at::sigmoid(logAlpha) * (HardConcrete::kZeta - HardConcrete::kGamma) + HardConcrete::kGamma, 0.0, 1.0);
}

std::vector<HeadRef> foldHeadGates(ModelWeights& w, const ModelConfig& c, const at::Tensor& gates) {
  if (gates.dim() != 2 || gates.size(0) != c.n_layers || gates.size(1) != c.n_heads)
    fail("head gates: shape ", gates.sizes(), ", expected [", c.n_layers, ", ", c.n_heads, "]");
  const at::Tensor g = gates.detach().to(at::kDouble).cpu();
  const bool ownKv = c.n_kv_heads == c.n_heads;
  const int64_t dh = c.d_head;
  std::vector<HeadRef> removed;
  at::NoGradGuard noGrad;
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    for (int h = 0; h < c.n_heads; ++h) {
      const double gate = g[l][h].item<double>();
      L.wo.narrow(1, h * dh, dh).mul_(gate);  // [d_model, d_head]
      if (gate != 0.0) continue;
      removed.push_back({l, h});
      L.wq.narrow(0, h * dh, dh).zero_();  // [d_head, d_model]
      if (L.bq.defined()) L.bq.narrow(0, h * dh, dh).zero_();
      if (!ownKv) continue;
      for (at::Tensor* t : {&L.wk, &L.wv, &L.bk, &L.bv})
        if (t->defined()) t->narrow(0, h * dh, dh).zero_();
    }
  }
  return removed;
}

}  // namespace hs
