#pragma once
// Rotary position embeddings: inverse frequencies (with rope_scaling), cos/sin for given positions,
// and the rotation itself in both layouts (RotateHalf and Interleaved), with partial rotary.
#include <ATen/core/Tensor.h>

#include "model/config.h"

namespace hs {

// θ_i = 1 / theta^(2i / rotary_dim), i < rotary_dim/2, float32 as Hugging Face computes it, then
// rescaled by rope_scaling ("linear": θ/factor; "llama3": Llama-3.1 wavelength-dependent smoothing,
// exactly HF `_compute_llama3_parameters`). Throws hs::Error for an unknown scaling type.
// `kind` Sliding picks the sliding layers' own base and scaling (rope_local_theta, Gemma-3) when the
// config gives one; otherwise every layer uses rope_theta and rope_scaling.
at::Tensor ropeInverseFrequencies(const ModelConfig& config,
                                  LayerAttention kind = LayerAttention::Global);  // [rotary_dim / 2] float32

struct RopeAngles {
  at::Tensor cos, sin;  // [batch, pos, 1, rotary_dim / 2] float32
};

// Angles pos·θ_i (float32 product as in HF) for the position ids [batch, pos] (int64).
RopeAngles ropeAngles(const at::Tensor& invFreq, const at::Tensor& positionIds);

// Rotates the first rotary_dim dims of every head of x [batch, pos, head, d_head]; the rest pass
// through (GPT-NeoX partial rotary). The angles are cast to x's dtype as HF does.
at::Tensor applyRope(const at::Tensor& x, const RopeAngles& angles, RopeLayout layout, int rotaryDim);

}  // namespace hs
