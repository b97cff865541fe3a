#pragma once
// One thread policy for HeadScope's programs (CLI and GUI call it first thing; tests set the same through
// CTest's environment). libtorch computes with two pools that know nothing of each other: ATen's intra-op
// pool (OpenMP) and OpenBLAS's own pthreads, which at::set_num_threads does not reach and which starts one
// thread per CPU. Each is sized here to the CPUs this process may run on (sched_getaffinity, so a container
// or `taskset` limit counts), or to HEADSCOPE_THREADS when set, never more.
//
// On a machine whose cores are also busy with other work, fewer threads are faster: OpenMP's barriers wait
// for the thread the kernel descheduled (2 threads beside one busy process on 2 cores ran the analyses
// 2.2-2.5x slower than 1 thread; docs/performance.md). So unless HEADSCOPE_THREADS fixes the count, the
// policy follows the load: the pools get the CPUs that other processes leave free, sampled from /proc at
// the start and again between forward passes (followLoad, at most once per kLoadSamplePeriodMs).
#include <string>

namespace hs {

struct ThreadPolicy {
  int threads = 1;          // ATen intra-op and OpenBLAS threads
  const char* source = "";  // "HEADSCOPE_THREADS", "CPUs available" or "CPUs left free by other processes"
  int cpus = 1;             // CPUs this process may run on
  double busy = 0;          // of those, kept busy by other processes at the last sample
};

// Applies the policy and returns it. Never throws: a malformed HEADSCOPE_THREADS is ignored (the CPU count
// is used). `followLoad` = false keeps the CPU count whatever the load (benchmarks, which report their
// thread count with their figures).
ThreadPolicy applyThreadPolicy(bool followLoad = true);

// When the policy follows the load (applyThreadPolicy(true) without HEADSCOPE_THREADS): samples the load,
// at most once per kLoadSamplePeriodMs (every call when `force`), and re-sizes both pools of the calling
// thread to threadsUnderLoad. A no-op otherwise. Call it on the thread that computes, between forwards.
ThreadPolicy followLoad(bool force = false);
inline constexpr int kLoadSamplePeriodMs = 2000;

// Runnable tasks of other processes now: the kernel's running count (`proc`/loadavg) minus this process's
// running threads (`proc`/self/task/*/stat), the median of `samples` readings `gapUs` microseconds apart.
// -1 when `proc` cannot be read. `proc` is procfs's root; tests pass a fake one.
double otherRunnableTasks(const std::string& proc = "/proc", int samples = 9, int gapUs = 1000);

// The threads for a process that may run on `cpus` of the machine's `online` CPUs when `others` runnable
// tasks of other processes share them evenly: the CPUs they leave free, at least 1, at most `cpus`.
int threadsUnderLoad(int cpus, int online, double others);

// How the loaded OpenBLAS runs its threads: "openmp" (one pool with libtorch's: what our programs load,
// CMakeLists.txt), "pthreads" (a second pool), "sequential", or "" when the BLAS is not OpenBLAS.
const char* blasThreading();

// Which OpenBLAS kernels run float32 products (OpenBLAS's choice for the CPU, or OPENBLAS_CORETYPE's), e.g.
// "Cooperlake" or "Haswell"; "" when the BLAS is not OpenBLAS. Benchmarks report it with their figures.
std::string blasCore();

// The CPUs this process may run on (at least 1).
int availableCpus();

}  // namespace hs
