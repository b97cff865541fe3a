#include "model/mlp.h"

#include <ATen/ATen.h>

#include "model/onednn_gemm.h"

namespace hs {

namespace {

// Callers validate the name with knownMlpActivation (the forward refuses a config with any other).
at::Tensor mlpActivation(const at::Tensor& x, const std::string& a) {
  if (a == "silu" || a == "swish") return at::silu(x);
  if (a == "gelu") return at::gelu(x);  // erf form
  if (a == "relu") return at::relu(x);
  return at::gelu(x, "tanh");  // gelu_new, gelu_pytorch_tanh, gelu_fast: the tanh approximation
}

}  // namespace

bool knownMlpActivation(const std::string& a) {
  return a == "silu" || a == "swish" || a == "gelu" || a == "gelu_new" || a == "gelu_pytorch_tanh" ||
         a == "gelu_fast" || a == "relu";
}

at::Tensor mlpForward(const ModelConfig& c, const LayerWeights& lw, const at::Tensor& x) {
  at::Tensor hidden = affine(x, lw.w_up, lw.b_up);  // [..., d_mlp]
  hidden = c.mlp == MlpKind::SwiGLU ? mlpActivation(affine(x, lw.w_gate), c.activation) * hidden
                                    : mlpActivation(hidden, c.activation);  // [..., d_mlp]
  return affine(hidden, lw.w_down, lw.b_down);                              // [..., d_model]
}

}  // namespace hs
