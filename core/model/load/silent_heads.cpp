#include "model/load/silent_heads.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>

namespace hs {

namespace {

// Whether the CPU weight `wo` ([d_model, n_heads * d_head], contiguous, float32 / bf16 / float16) has a
// value other than ±0 in columns [c0, c0 + dh), as wo.ne(0) counts (NaN is not zero), reading its rows from
// the first until one has one: a head that writes something nearly always shows it in its first row, so a
// model costs a few values per head where ne/any over every W_O read and wrote 2 x 268 MB at the 1B shape.
template <typename Bits>
bool writesSomething(const at::Tensor& wo, int64_t c0, int64_t dh) {
  const Bits magnitude = Bits(~Bits(0)) >> 1;  // every bit but the sign
  const auto* p = static_cast<const uint8_t*>(wo.data_ptr());
  const int64_t rows = wo.size(0), cols = wo.size(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = c0; c < c0 + dh; ++c) {
      Bits b;
      std::memcpy(&b, p + (r * cols + c) * int64_t(sizeof(Bits)), sizeof(Bits));
      if (b & magnitude) return true;
    }
  return false;
}

}  // namespace

std::vector<HeadRef> silentHeads(const ModelWeights& w, const ModelConfig& c) {
  std::vector<HeadRef> out;
  const int64_t dh = c.d_head;
  for (int l = 0; l < c.n_layers && l < static_cast<int>(w.layers.size()); ++l) {
    const at::Tensor& wo = w.layers[static_cast<size_t>(l)].wo;  // [d_model, n_heads * d_head]
    if (!wo.defined() || wo.size(1) != c.n_heads * dh) continue;
    const at::ScalarType t = wo.scalar_type();
    if (wo.device().is_cpu() && wo.is_contiguous() &&
        (t == at::kFloat || t == at::kBFloat16 || t == at::kHalf)) {
      for (int h = 0; h < c.n_heads; ++h)
        if (!(t == at::kFloat ? writesSomething<uint32_t>(wo, h * dh, dh)
                              : writesSomething<uint16_t>(wo, h * dh, dh)))
          out.push_back({l, h});
      continue;
    }
    const at::Tensor nonzero = wo.ne(0).reshape({wo.size(0), c.n_heads, dh}).any(2).any(0).cpu();  // [head]
    for (int h = 0; h < c.n_heads; ++h)
      if (!nonzero[h].item<bool>()) out.push_back({l, h});
  }
  return out;
}

}  // namespace hs
