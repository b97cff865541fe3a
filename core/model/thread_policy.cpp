#include "model/thread_policy.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <cstdlib>
#include <string>
#include <thread>

namespace hs {

int availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPolicy applyThreadPolicy() {
  ThreadPolicy p;
  p.threads = availableCpus();
  p.source = "CPUs available";
  if (const char* env = std::getenv("HEADSCOPE_THREADS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end && *end == '\0' && n > 0 && n <= 4096)
      p.threads = static_cast<int>(n), p.source = "HEADSCOPE_THREADS";
  }
  at::set_num_threads(p.threads);
  // OpenBLAS's pool (found at run time: another BLAS simply has no such symbol).
  using SetThreads = void (*)(int);
  if (const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(p.threads);
  return p;
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
