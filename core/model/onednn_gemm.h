#pragma once
// A bf16 × bf16 → float32 matrix product on the CPU through oneDNN (the library Debian's libtorch itself
// computes bf16 GEMMs with). ATen's bf16 GEMM accumulates in float32 but rounds its result to bf16; the
// float32 unembedding needs the unrounded result, and one oneDNN matmul with a float32 destination gives it
// in the time of one bf16 GEMM (two compensating ATen GEMMs, the fallback, take twice that).
#include <ATen/core/Tensor.h>

namespace hs {

// Whether this build has oneDNN (HEADSCOPE_ONEDNN; Debian's libtorch, libdnnl-dev) and it runs on this CPU.
bool onednnBf16GemmAvailable();

// x [rows, in] · wᵀ for w [out, in], both bf16 on the CPU, w's rows contiguous; the result [rows, out]
// float32, accumulated in float32 and never rounded to bf16. Requires onednnBf16GemmAvailable().
at::Tensor onednnLinearBf16ToFloat(const at::Tensor& x, const at::Tensor& w);

}  // namespace hs
