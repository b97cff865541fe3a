#pragma once
// One thread policy for HeadScope's programs (CLI and GUI call it first thing; tests set the same through
// CTest's environment). libtorch computes with two pools that know nothing of each other: ATen's intra-op
// pool (OpenMP) and OpenBLAS's own pthreads, which at::set_num_threads does not reach and which starts one
// thread per CPU. Each is sized here to the CPUs this process may run on (sched_getaffinity, so a cpuset or
// `taskset` limit counts, and a cgroup CPU quota), or to HEADSCOPE_THREADS when set, never more.
//
// On a machine whose cores are also busy with other work, fewer threads are faster: OpenMP's barriers wait
// for the thread the kernel descheduled (2 threads beside one busy process on 2 cores ran the analyses
// 2-3x slower than 1 thread; docs/performance.md). So unless HEADSCOPE_THREADS fixes the count, the policy
// follows the load: the pools get the CPUs that other processes leave free (CpuLoadMeter), measured over
// 100 ms at the start and again between forward passes (followLoad, at most once per kLoadSamplePeriodMs).
#include <string>
#include <vector>

namespace hs {

struct ThreadPolicy {
  int threads = 1;          // ATen intra-op and OpenBLAS threads
  const char* source = "";  // "HEADSCOPE_THREADS", "CPUs available", "CPUs left free by other processes" or
                            // "address-space limit (ulimit -v)" (model/blas_buffers.h)
  int cpus = 1;             // CPUs this process may run on
  double busy = 0;          // of those, kept busy by other processes at the last sample
};

// Applies the policy and returns it. Never throws: a malformed HEADSCOPE_THREADS is ignored (the CPU count
// is used). `followLoad` = false keeps the CPU count whatever the load (benchmarks, which report their
// thread count with their figures).
ThreadPolicy applyThreadPolicy(bool followLoad = true);

// When the policy follows the load (applyThreadPolicy(true) without HEADSCOPE_THREADS): measures the load,
// at most once per kLoadSamplePeriodMs over the time since the last reading (over a fresh 100 ms when
// `force` or when that reading is older than kLoadWindowMaxMs), and re-sizes both pools of the calling
// thread to threadsUnderLoad. A no-op otherwise. Call it on the thread that computes, between forwards.
ThreadPolicy followLoad(bool force = false);
inline constexpr int kLoadSamplePeriodMs = 2000;
inline constexpr int kLoadWindowMaxMs = 10000;

// CPU time that other processes take on the CPUs this process may run on, from procfs: between two
// readings, the busy ticks of those CPUs (`proc`/stat: user, nice, system, irq, softirq, steal) minus this
// process's own (`proc`/self/stat: utime + stime), per tick that passed on each CPU. Only the CPUs of the
// affinity mask count, so the busy cores of a cluster node's other jobs (Slurm's cpusets) are not ours to
// leave free; time a hypervisor steals counts as taken.
class CpuLoadMeter {
 public:
  // `proc` is procfs's root (tests pass a fake one); `cpus` the CPU numbers to watch.
  CpuLoadMeter(std::string proc, std::vector<int> cpus);
  // Reads the counters. Returns the CPUs' worth of time (0 .. cpus) other processes took since the previous
  // reading; -1 on the first reading, when no tick passed, or when procfs cannot be read.
  double read();
  int cpuCount() const { return static_cast<int>(cpus_.size()); }

 private:
  std::string proc_;
  std::vector<int> cpus_;
  long long busy_ = -1, total_ = -1, own_ = -1;  // the previous reading's sums, in ticks
};

// The CPU numbers of this process's affinity mask.
std::vector<int> affinityCpus();

// The threads for a process that may run on `cpus` CPUs when other processes keep `busy` CPUs' worth of
// them busy: the CPUs they leave free, rounded, at least 1, at most `cpus` and, when `cap` > 0, `cap`.
int threadsUnderLoad(int cpus, double busy, int cap = 0);

// The CPU bandwidth limit of this process's cgroup, in CPUs (v2 `cpu.max` "quota period", v1
// `cpu.cfs_quota_us` / `cpu.cfs_period_us`: what `docker --cpus` and Kubernetes CPU limits set); 0 without
// one. `proc` and `cgroupRoot` are procfs's and the cgroup mount's roots (tests pass fake ones).
double cgroupCpuLimit(const std::string& proc = "/proc", const std::string& cgroupRoot = "/sys/fs/cgroup");

// How the loaded OpenBLAS runs its threads: "openmp" (one pool with libtorch's: what our programs load,
// CMakeLists.txt), "pthreads" (a second pool), "sequential", or "" when the BLAS is not OpenBLAS.
const char* blasThreading();

// Which OpenBLAS kernels run float32 products (OpenBLAS's choice for the CPU, or OPENBLAS_CORETYPE's), e.g.
// "Cooperlake" or "Haswell"; "" when the BLAS is not OpenBLAS. Benchmarks report it with their figures.
std::string blasCore();

// The CPUs this process may run on (its affinity mask), capped by its cgroup's CPU limit rounded up; at
// least 1.
int availableCpus();

}  // namespace hs
