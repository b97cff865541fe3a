#include "model/thread_policy.h"

#include <ATen/Parallel.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hs {

namespace {

// The policy's state: whether it follows the load, and the pools' size as last set.
std::mutex policyMutex;
ThreadPolicy current;
bool following = false;
std::chrono::steady_clock::time_point lastSample{};

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

// The 4th field of /proc/loadavg, "running/total": the kernel's runnable tasks (this thread included).
int runnableTasks(const std::string& proc) {
  FILE* f = std::fopen((proc + "/loadavg").c_str(), "r");
  if (!f) return -1;
  double a, b, c;
  int running = -1, total = 0;
  if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  std::fclose(f);
  return running;
}

// This process's threads in state R (running or runnable), from each task's stat: "tid (comm) S ...",
// where comm may itself hold spaces and parentheses, so the state follows the last ')'.
int ownRunnableThreads(const std::string& proc) {
  const std::string dir = proc + "/self/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int running = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    FILE* f = std::fopen((dir + "/" + e->d_name + "/stat").c_str(), "r");
    if (!f) continue;  // the thread ended meanwhile
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] == 'R') ++running;
  }
  closedir(d);
  return running;
}

}  // namespace

int availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

double otherRunnableTasks(const std::string& proc, int samples, int gapUs) {
  std::vector<double> others;
  for (int i = 0; i < std::max(1, samples); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::microseconds(gapUs));
    const int all = runnableTasks(proc);
    const int own = ownRunnableThreads(proc);
    if (all < 0 || own < 0) return -1;
    others.push_back(std::max(0, all - own));
  }
  std::nth_element(others.begin(), others.begin() + others.size() / 2, others.end());
  return others[others.size() / 2];
}

int threadsUnderLoad(int cpus, int online, double others) {
  cpus = std::max(1, cpus);
  online = std::max(cpus, online);
  // Other tasks spread over the machine's CPUs; the share that falls on ours.
  const double busy = std::max(0.0, others) * cpus / online;
  const int free = static_cast<int>(std::lround(cpus - busy));
  return std::clamp(free, 1, cpus);
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
  setPools(p.threads);
  current = p;
  lock.unlock();
  return following ? followLoad(true) : p;
}

ThreadPolicy followLoad(bool force) {
  std::lock_guard lock(policyMutex);
  if (!following) return current;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - lastSample < std::chrono::milliseconds(kLoadSamplePeriodMs)) return current;
  lastSample = now;
  const double others = otherRunnableTasks();
  if (others < 0) return current;  // no procfs: the CPU count stands
  const int online = std::max(current.cpus, get_nprocs());
  current.busy = others * current.cpus / online;
  const int threads = threadsUnderLoad(current.cpus, online, others);
  current.source = threads < current.cpus ? "CPUs left free by other processes" : "CPUs available";
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
