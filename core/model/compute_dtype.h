#pragma once
// Which compute dtypes this libtorch can run the forward in, per device. libtorch 1.13 has no float16
// matrix multiply on the CPU ("addmm_impl_cpu_" not implemented for 'Half'); newer builds do. Rather than
// assume either, the check runs the forward's kernels once on tiny tensors and remembers the answer.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>

namespace hs {

// "" when the forward's kernels (linear, batched matmul, the activations, embedding lookup) run in
// `dtype` on `device`; otherwise the first kernel that failed and libtorch's reason.
std::string computeDtypeProblem(at::ScalarType dtype, at::Device device);

// Whether a bf16/f16 GEMM on `device` adds β·C inside its float32 accumulator before rounding, so that
// round(x·wᵀ − round(x·wᵀ)) recovers the rounding of x·wᵀ (the float32 unembedding relies on it; oneDNN,
// ATen's own CPU kernels and cuBLAS do). Checked once per dtype and device on a small product.
bool compensatedGemmWorks(at::ScalarType dtype, at::Device device);

// Throws hs::Error naming the dtype, the device and the way out when computeDtypeProblem finds one.
void requireComputeDtype(at::ScalarType dtype, at::Device device);

}  // namespace hs
