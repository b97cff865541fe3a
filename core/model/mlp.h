#pragma once
// A layer's MLP block as a function of its input: the forward (transformer.cpp) computes hook_mlp_out with
// it, and analyses apply it outside the forward (the LTV MLP-reconstruction control).
#include <ATen/core/Tensor.h>

#include <string>

#include "model/config.h"
#include "model/weights.h"

namespace hs {

// The MLP on its (normed) input x [..., d_model], as the forward applies it: W_down (act(W_gate x) ⊙ W_up x)
// for SwiGLU, W_down act(W_up x) otherwise, biases where the model has them (no pre-norm, no OLMo-2
// post-norm) → [..., d_model]: what hook_mlp_out holds for that input. x must be on the layer's device and
// in its dtype.
at::Tensor mlpForward(const ModelConfig& c, const LayerWeights& lw, const at::Tensor& x);

// Whether mlpForward knows the activation ("silu"/"swish", "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh"/
// "gelu_fast" (tanh approximation), "relu").
bool knownMlpActivation(const std::string& activation);

}  // namespace hs
