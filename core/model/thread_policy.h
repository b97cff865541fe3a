#pragma once
// One thread policy for HeadScope's programs (CLI and GUI call it first thing; tests set the same through
// CTest's environment). libtorch computes with two pools that know nothing of each other: ATen's intra-op
// pool (OpenMP) and OpenBLAS's own pthreads, which at::set_num_threads does not reach and which starts one
// thread per CPU. Each is sized here to the CPUs this process may run on (sched_getaffinity, so a container
// or `taskset` limit counts), or to HEADSCOPE_THREADS when set, never more.
//
// On a machine whose cores are also busy with other work, fewer threads are faster: OpenMP's barriers wait
// for the thread the kernel descheduled. HEADSCOPE_THREADS=1 is the setting for a shared 2-core machine, and
// the test suites run on one thread (docs/performance.md has the measurements).
#include <string>

namespace hs {

struct ThreadPolicy {
  int threads = 1;          // ATen intra-op and OpenBLAS threads
  const char* source = "";  // "HEADSCOPE_THREADS" or "CPUs available"
};

// Applies the policy and returns it. Never throws: a malformed HEADSCOPE_THREADS is ignored (the CPU count
// is used).
ThreadPolicy applyThreadPolicy();

// How the loaded OpenBLAS runs its threads: "openmp" (one pool with libtorch's: what our programs load,
// CMakeLists.txt), "pthreads" (a second pool), "sequential", or "" when the BLAS is not OpenBLAS.
const char* blasThreading();

// Which OpenBLAS kernels run float32 products (OpenBLAS's choice for the CPU, or OPENBLAS_CORETYPE's), e.g.
// "Cooperlake" or "Haswell"; "" when the BLAS is not OpenBLAS. Benchmarks report it with their figures.
std::string blasCore();

// The CPUs this process may run on (at least 1).
int availableCpus();

}  // namespace hs
