#include "model/thread_policy.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/blas_buffers.h"
#include "util/system_files.h"

namespace hs {

namespace {

// The policy's state: whether it follows the load, the pools' size as last set, the load meter.
std::mutex policyMutex;
ThreadPolicy current;
bool following = false;
std::unique_ptr<CpuLoadMeter> meter;
std::chrono::steady_clock::time_point lastReading{};
constexpr const char* kAddressSpaceSource = "address-space limit (ulimit -v)";

void setPools(int threads) {
  try {
    at::set_num_threads(threads);
  } catch (const std::exception&) {  // a libtorch whose pool cannot be resized once running keeps its size
  }
  // OpenBLAS's pool (found at run time: another BLAS simply has no such symbol).
  using SetThreads = void (*)(int);
  if (const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads);
}

}  // namespace

std::vector<int> affinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

double cgroupCpuLimit(const std::string& proc, const std::string& cgroupRoot) {
  const auto number = [](const std::string& text, double& value) {
    std::istringstream in(text);
    return static_cast<bool>(in >> value);
  };
  double limit = 0;  // the smallest quota of any governing folder, in CPUs; 0 = none
  const auto take = [&limit](double quota, double period) {
    if (quota > 0 && period > 0 && (limit == 0 || quota / period < limit)) limit = quota / period;
  };
  for (const auto& [controllers, path] : processCgroups(proc)) {
    double quota = 0, period = 0;
    if (controllers.empty()) {  // v2: "max 100000" or "150000 100000"
      for (const std::string& dir : cgroupFolders(cgroupRoot, path)) {
        std::istringstream max(readSystemFile(dir + "/cpu.max"));
        if (max >> quota >> period) take(quota, period);
      }
      continue;
    }
    if (!hasController(controllers, "cpu")) continue;  // v1: the cpu controller, quota -1 = none
    // Mounted under its controllers' name ("cpu,cpuacct") or, on some systems, as "cpu" alone.
    for (const std::string& mount : {cgroupRoot + "/" + controllers, cgroupRoot + "/cpu"}) {
      bool mounted = false;
      for (const std::string& dir : cgroupFolders(mount, path))
        if (number(readSystemFile(dir + "/cpu.cfs_quota_us"), quota) &&
            number(readSystemFile(dir + "/cpu.cfs_period_us"), period))
          mounted = true, take(quota, period);
      if (mounted) break;
    }
  }
  return limit;
}

int availableCpus() {
  const auto cpus = affinityCpus();
  const int n = cpus.empty() ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                             : static_cast<int>(cpus.size());
  const double limit = cgroupCpuLimit();
  return limit > 0 ? std::clamp(static_cast<int>(std::ceil(limit - 1e-9)), 1, n) : n;
}

CpuLoadMeter::CpuLoadMeter(std::string proc, std::vector<int> cpus)
    : proc_(std::move(proc)), cpus_(std::move(cpus)) {}

double CpuLoadMeter::read() {
  // Per CPU: "cpuN user nice system idle iowait irq softirq steal guest guest_nice" (guest time is in user).
  std::istringstream stat(readSystemFile(proc_ + "/stat"));
  long long busy = 0, total = 0;
  int seen = 0;
  for (std::string line; std::getline(stat, line);) {
    int cpu = -1;
    long long v[8] = {};
    if (std::sscanf(line.c_str(), "cpu%d %lld %lld %lld %lld %lld %lld %lld %lld", &cpu, &v[0], &v[1], &v[2],
                    &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 ||
        std::find(cpus_.begin(), cpus_.end(), cpu) == cpus_.end())
      continue;
    busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    total += v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    ++seen;
  }
  // "pid (comm) S ppid ... utime stime ...": comm may hold spaces and parentheses, so fields are counted from
  // the last ')'; utime and stime are the 12th and 13th after it.
  const std::string self = readSystemFile(proc_ + "/self/stat");
  const size_t close = self.rfind(')');
  long long own = -1;
  if (close != std::string::npos) {
    std::istringstream fields(self.substr(close + 1));
    std::string skipped;
    for (int i = 0; i < 11; ++i)
      fields >> skipped;
    long long utime = 0, stime = 0;
    if (fields >> utime >> stime) own = utime + stime;
  }
  if (seen == 0 || own < 0) {
    busy_ = total_ = own_ = -1;
    return -1;
  }
  double others = -1;
  if (total_ >= 0 && total > total_) {
    const double ticksPerCpu = static_cast<double>(total - total_) / seen;
    others = std::clamp(static_cast<double>((busy - busy_) - (own - own_)) / ticksPerCpu, 0.0,
                        static_cast<double>(seen));
  }
  busy_ = busy, total_ = total, own_ = own;
  return others;
}

int threadsUnderLoad(int cpus, double busy, int cap) {
  cpus = std::max(1, cpus);
  const int free = static_cast<int>(std::lround(cpus - std::max(0.0, busy)));
  return std::clamp(free, 1, cap > 0 ? std::min(cpus, cap) : cpus);
}

ThreadPolicy applyThreadPolicy(bool followLoadFlag) {
  std::unique_lock lock(policyMutex);
  ThreadPolicy p;
  p.cpus = availableCpus();
  p.threads = p.cpus;
  p.source = "CPUs available";
  following = followLoadFlag;
  if (const char* env = std::getenv("HEADSCOPE_THREADS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end && *end == '\0' && n > 0 && n <= 4096) {
      p.threads = static_cast<int>(n), p.source = "HEADSCOPE_THREADS";
      following = false;
    }
  }
  // Never more threads than OpenBLAS has buffers for under an address-space limit (model/blas_buffers.h).
  if (const int cap = blasThreadCap(); cap > 0 && p.threads > cap)
    p.threads = cap, p.source = kAddressSpaceSource;
  setPools(p.threads);
  current = p;
  if (following) meter = std::make_unique<CpuLoadMeter>("/proc", affinityCpus());
  lastReading = {};
  lock.unlock();
  return following ? followLoad(true) : p;
}

ThreadPolicy followLoad(bool force) {
  std::lock_guard lock(policyMutex);
  if (!following) return current;
  using namespace std::chrono;
  const auto since = steady_clock::now() - lastReading;
  if (!force && since < milliseconds(kLoadSamplePeriodMs)) return current;
  double others = -1;
  if (!force && since <= milliseconds(kLoadWindowMaxMs)) others = meter->read();  // since the last reading
  if (others < 0) {                                                               // a fresh window
    meter->read();
    std::this_thread::sleep_for(milliseconds(100));
    others = meter->read();
  }
  lastReading = steady_clock::now();
  if (others < 0) return current;  // no procfs: the CPU count stands
  current.busy = others;
  // A cgroup quota (current.cpus below the mask) lets the process use any of the mask's CPUs, up to the
  // quota.
  const int cap = blasThreadCap() > 0 ? std::min(current.cpus, blasThreadCap()) : current.cpus;
  const int threads = threadsUnderLoad(meter->cpuCount(), others, cap);
  current.source = threads < cap        ? "CPUs left free by other processes"
                   : cap < current.cpus ? kAddressSpaceSource
                                        : "CPUs available";
  // Also when unchanged: the calling thread may be one whose OpenMP pool size was never set.
  current.threads = threads;
  setPools(threads);
  return current;
}

std::string blasCore() {
  using GetName = char* (*)();
  const auto get = reinterpret_cast<GetName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return get ? std::string(get()) : std::string();
}

const char* blasThreading() {
  using GetParallel = int (*)();
  const auto get = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  if (!get) return "";
  switch (get()) {  // OpenBLAS: 0 sequential, 1 pthreads, 2 OpenMP
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "openmp";
  }
  return "";
}

}  // namespace hs
