#include "model/mlp.h"

#include <ATen/ATen.h>

#include "model/onednn_gemm.h"

namespace hs {

namespace {

// The activations the forward knows (config validation rejects others); the same mapping as the forward's.
at::Tensor mlpActivation(const at::Tensor& x, const std::string& a) {
  if (a == "silu" || a == "swish") return at::silu(x);
  if (a == "gelu") return at::gelu(x);  // erf form
  if (a == "relu") return at::relu(x);
  return at::gelu(x, "tanh");  // gelu_new, gelu_pytorch_tanh, gelu_fast: the tanh approximation
}

}  // namespace

at::Tensor mlpForward(const ModelConfig& c, const LayerWeights& lw, const at::Tensor& x) {
  at::Tensor hidden = affine(x, lw.w_up, lw.b_up);  // [..., d_mlp]
  hidden = c.mlp == MlpKind::SwiGLU ? mlpActivation(affine(x, lw.w_gate), c.activation) * hidden
                                    : mlpActivation(hidden, c.activation);  // [..., d_mlp]
  return affine(hidden, lw.w_down, lw.b_down);                              // [..., d_model]
}

}  // namespace hs
