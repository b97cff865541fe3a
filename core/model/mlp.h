#pragma once
// A layer's MLP block as a function of its input, for analyses that apply it outside the forward (the LTV
// MLP-reconstruction control). It mirrors the forward's MLP in transformer.cpp; test_ltv checks that it
// reproduces hook_mlp_out for a SwiGLU and a GELU model.
#include <ATen/core/Tensor.h>

#include "model/config.h"
#include "model/weights.h"

namespace hs {

// The MLP on its (normed) input x [..., d_model], as the forward applies it: W_down (act(W_gate x) ⊙ W_up x)
// for SwiGLU, W_down act(W_up x) otherwise, biases where the model has them (no pre-norm, no OLMo-2
// post-norm) → [..., d_model]: what hook_mlp_out holds for that input. x must be on the layer's device and
// in its dtype.
at::Tensor mlpForward(const ModelConfig& c, const LayerWeights& lw, const at::Tensor& x);

}  // namespace hs
