#pragma once
// Which numeric kernels this process computes with. Training is deterministic for a seed on one machine, but
// the bits depend on the kernels libtorch and OpenBLAS pick for the CPU: ATen's vectorised CPU path
// (DEFAULT / AVX2 / AVX512, ATEN_CPU_CAPABILITY overrides it) and OpenBLAS's core-specific GEMM
// (OPENBLAS_CORETYPE overrides it, in a DYNAMIC_ARCH build such as Debian's), and the number of threads
// OpenBLAS splits a GEMM over (useThreads below pins it). Two machines that pick
// different kernels round differently from the first step on, and a long schedule can end elsewhere
// (docs/toy-model.md, "Reproducibility"). The trainer records this with every run so such a difference can be
// seen and, on a CPU that has the instructions, undone by setting the two variables.
#include <nlohmann/json.hpp>

namespace hs {

// {"aten_cpu_capability": "AVX2", "blas": "OpenBLAS 0.3.21 ... Haswell ...", "blas_core": "Haswell",
//  "blas_threads": 1, "cpu": "<model name>", "intra_op_threads": 1}. "blas"/"blas_core" are "unknown" and
// "blas_threads" is -1 when the process's BLAS is not OpenBLAS (it is found at run time, so another BLAS
// still links).
nlohmann::json numericKernels();

// Computes on `threads` threads: libtorch's intra-op pool and OpenBLAS's own pool, which at::set_num_threads
// does not reach (OpenBLAS starts one thread per CPU). The thread count is part of the kernels: OpenBLAS's
// GEMM split over two threads rounds differently from its one-thread GEMM, so a recipe's `threads` must hold
// for BLAS too, whatever the machine's core count. No-op for threads <= 0.
void useThreads(int threads);

// Appends `record` to `records` (a JSON array) unless an equal record is there already.
void addNumericKernels(nlohmann::json& records, const nlohmann::json& record);

}  // namespace hs
