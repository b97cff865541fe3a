#pragma once
// Matrix products on the CPU through oneDNN (the library Debian's libtorch itself computes bf16 GEMMs with):
//  - bf16 × bf16 → float32: ATen's bf16 GEMM accumulates in float32 but rounds its result to bf16; the
//    float32 unembedding needs the unrounded result, and one oneDNN matmul with a float32 destination gives
//    it in the time of one bf16 GEMM (two compensating ATen GEMMs, the fallback, take twice that);
//  - float32 × float32: Debian's libtorch computes these with OpenBLAS, whose GEMM took 2.3-4.4× oneDNN's on
//    this project's AVX-512 machine (bench/ and docs/performance.md), most of all for products of few rows
//    (a patching sweep's variants). `affine` below routes a float32 model's projections through oneDNN.
#include <ATen/core/Tensor.h>

#include <string>

namespace hs {

// Whether this build has oneDNN (HEADSCOPE_ONEDNN; Debian's libtorch, libdnnl-dev) and it runs on this CPU.
bool onednnBf16GemmAvailable();

// x [rows, in] · wᵀ for w [out, in], both bf16 on the CPU, w's rows contiguous; the result [rows, out]
// float32, accumulated in float32 and never rounded to bf16. Requires onednnBf16GemmAvailable().
at::Tensor onednnLinearBf16ToFloat(const at::Tensor& x, const at::Tensor& w);

// Whether float32 products on the CPU go through oneDNN: the build has it, it runs here, and the environment
// does not say HEADSCOPE_GEMM=aten (which keeps ATen's BLAS, e.g. to compare the two).
bool onednnFloatGemmAvailable();

// x [rows, in] · wᵀ + b for w [out, in] and b [out] (or undefined), all float32 on the CPU, w's rows
// contiguous; [rows, out] float32. Requires onednnFloatGemmAvailable().
at::Tensor onednnLinearFloat(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

// at::linear(x, w, b) (x [..., in], w [out, in] → [..., out]), with a float32 product on the CPU through
// oneDNN when it is available and no gradient is wanted (autograd needs ATen's differentiable op).
at::Tensor affine(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = at::Tensor());

// at::matmul(a, b) for a [..., m, k] and b [..., k, n] of equal batch dims → [..., m, n], with a float32
// product on the CPU through oneDNN when it is available and no gradient is wanted: attention's q·kᵀ and
// pattern·v, which ATen's BLAS path computes as one small GEMM per batch entry, at about a third of oneDNN's
// speed on this project's machine. Tiny products (fewer than 400 multiply-adds per batch entry) stay with
// ATen's loop.
at::Tensor batchedMatmul(const at::Tensor& a, const at::Tensor& b);

// What computes float32 products on the CPU: "oneDNN 2.6.3 (avx512_core_bf16)" or "ATen (BLAS)"; the
// benchmarks and `info` report it.
std::string float32GemmBackend();

}  // namespace hs
