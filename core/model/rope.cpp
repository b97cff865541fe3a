#include "model/rope.h"

#include <ATen/ATen.h>

#include <cmath>

#include "util/error.h"

namespace hs {

at::Tensor ropeInverseFrequencies(const ModelConfig& c, LayerAttention kind) {
  const int dim = c.rotary_dim > 0 ? c.rotary_dim : c.d_head;
  if (dim <= 0 || dim % 2 != 0 || dim > c.d_head)
    fail("rotary_dim ", dim, " must be even and in (0, d_head = ", c.d_head, "]");
  const bool local = kind == LayerAttention::Sliding && c.rope_local_theta > 0;
  const double theta = local ? c.rope_local_theta : c.rope_theta;
  if (!(theta > 0)) fail("RoPE base ", theta, " must be positive");
  // θ_i = 1 / base^(2i/dim) in float32, the exact op sequence of HF's default rope init.
  const at::Tensor exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / dim;  // [dim/2]
  at::Tensor invFreq = 1.0 / at::pow(theta, exponents);                                // [dim/2]

  const RopeScaling& s = local ? c.rope_local_scaling : c.rope_scaling;
  if (s.type.empty() || s.type == "default") return invFreq;
  if (s.type == "linear") return invFreq / s.factor;  // == HF dividing the positions by factor
  if (s.type == "llama3") {
    // Llama-3.1: keep high frequencies (short wavelengths), divide low frequencies by `factor`,
    // and interpolate smoothly in between, measured against the original training context.
    const double oldContext = s.original_max_position_embeddings;
    const double lowFreqWavelen = oldContext / s.low_freq_factor;
    const double highFreqWavelen = oldContext / s.high_freq_factor;
    const at::Tensor wavelen = 2 * M_PI / invFreq;  // [dim/2]
    at::Tensor scaled = at::where(wavelen > lowFreqWavelen, invFreq / s.factor, invFreq);
    const at::Tensor smooth =
        (oldContext / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    const at::Tensor isMedium = wavelen.ge(highFreqWavelen).logical_and(wavelen.le(lowFreqWavelen));
    return at::where(isMedium, smoothed, scaled);
  }
  fail("unsupported rope_scaling type \"", s.type, "\" (expected none, \"linear\" or \"llama3\")");
}

RopeAngles ropeAngles(const at::Tensor& invFreq, const at::Tensor& positionIds) {
  const at::Tensor freqs = positionIds.to(at::kFloat).unsqueeze(-1) * invFreq;  // [batch, pos, rot/2]
  const at::Tensor angles = freqs.unsqueeze(2);                                 // [batch, pos, 1, rot/2]
  return {angles.cos(), angles.sin()};
}

at::Tensor applyRope(const at::Tensor& x, const RopeAngles& a, RopeLayout layout, int rotaryDim) {
  if (layout == RopeLayout::None) return x;
  const int64_t dHead = x.size(-1);
  const int64_t half = rotaryDim / 2;
  const at::Tensor cos = a.cos.to(x.scalar_type());                             // [batch, pos, 1, rot/2]
  const at::Tensor sin = a.sin.to(x.scalar_type());                             // [batch, pos, 1, rot/2]
  const at::Tensor xRot = rotaryDim == dHead ? x : x.narrow(-1, 0, rotaryDim);  // [batch, pos, head, rot]

  at::Tensor rotated;  // [batch, pos, head, rot]
  if (layout == RopeLayout::RotateHalf) {
    // Pairs (i, i + rot/2): (x1, x2) → (x1 cos − x2 sin, x2 cos + x1 sin).
    const at::Tensor x1 = xRot.narrow(-1, 0, half);     // [batch, pos, head, rot/2]
    const at::Tensor x2 = xRot.narrow(-1, half, half);  // [batch, pos, head, rot/2]
    rotated = at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
  } else {
    // Pairs (2i, 2i+1), as llama2.c run.c and GGUF: the same rotation on adjacent dims.
    const at::Tensor pairs = xRot.unflatten(-1, {half, 2});  // [batch, pos, head, rot/2, 2]
    const at::Tensor x0 = pairs.select(-1, 0);               // [batch, pos, head, rot/2]
    const at::Tensor x1 = pairs.select(-1, 1);               // [batch, pos, head, rot/2]
    rotated = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, -1).flatten(-2);
  }
  if (rotaryDim == dHead) return rotated;
  return at::cat({rotated, x.narrow(-1, rotaryDim, dHead - rotaryDim)}, -1);  // [batch, pos, head, d_head]
}

}  // namespace hs
