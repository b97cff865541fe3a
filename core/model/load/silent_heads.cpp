#include "model/load/silent_heads.h"

#include <ATen/ATen.h>

namespace hs {

std::vector<HeadRef> silentHeads(const ModelWeights& w, const ModelConfig& c) {
  std::vector<HeadRef> out;
  const int64_t dh = c.d_head;
  for (int l = 0; l < c.n_layers && l < static_cast<int>(w.layers.size()); ++l) {
    const at::Tensor& wo = w.layers[static_cast<size_t>(l)].wo;  // [d_model, n_heads * d_head]
    if (!wo.defined() || wo.size(1) != c.n_heads * dh) continue;
    const at::Tensor nonzero = wo.ne(0).reshape({wo.size(0), c.n_heads, dh}).any(2).any(0).cpu();  // [head]
    for (int h = 0; h < c.n_heads; ++h)
      if (!nonzero[h].item<bool>()) out.push_back({l, h});
  }
  return out;
}

}  // namespace hs
