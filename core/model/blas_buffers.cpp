#include "model/blas_buffers.h"

#include <ATen/ATen.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model/thread_policy.h"  // affinityCpus
#include "util/error.h"
#include "util/memory.h"

namespace hs {

namespace {

constexpr const char* kCapVariable = "HEADSCOPE_BLAS_THREAD_CAP";
int threadCap = 0;

// `name`'s value in `envp`, nullptr when absent. (getenv does not work yet: libc's environ is set by its own
// initialiser, which runs after the executable's .preinit_array.)
const char* envValue(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

int positive(const char* text) {
  const long v = text ? std::strtol(text, nullptr, 10) : 0;
  return v > 0 && v < 100000 ? static_cast<int>(v) : 0;
}

// OpenBLAS's own count at load (blas_get_cpu_number): OPENBLAS_NUM_THREADS, else GOTO_NUM_THREADS, else
// OMP_NUM_THREADS, at most the CPUs of the affinity mask.
int openblasThreadsAtLoad(char** envp) {
  int cpus = static_cast<int>(affinityCpus().size());
  if (cpus <= 0) cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int asked = positive(envValue(envp, "OPENBLAS_NUM_THREADS"));
  if (!asked) asked = positive(envValue(envp, "GOTO_NUM_THREADS"));
  if (!asked) asked = positive(envValue(envp, "OMP_NUM_THREADS"));
  return asked ? std::min(asked, cpus) : cpus;
}

// VmSize of /proc/self/status, in bytes; -1 when unreadable. Raw system calls: C++ streams are not set up
// yet.
int64_t mappedBytes() {
  char text[4096];
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* line = std::strstr(text, "\nVmSize:");
  return line ? std::strtoll(line + 8, nullptr, 10) * 1024 : -1;
}

// The start-up guard (see the header). Runs before libc's and every library's initialiser: only system
// calls, the C string functions and malloc.
void fitBlasToAddressSpace(int /*argc*/, char** argv, char** envp) {
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return;
  if (!dlsym(RTLD_DEFAULT, "openblas_get_parallel")) return;  // another BLAS (a wheel's MKL): no such buffers
  if (const int cap = positive(envValue(envp, kCapVariable))) {  // restarted by this guard
    threadCap = cap;
    return;
  }
  const int64_t mapped = mappedBytes();
  if (mapped < 0) return;
  const int64_t room = std::max<int64_t>(0, static_cast<int64_t>(as.rlim_cur) - mapped);
  const int threads = openblasThreadsAtLoad(envp);
  const auto need = [](int t) { return (static_cast<uint64_t>(t) + 1) * kBlasBufferBytes; };
  const uint64_t budget = static_cast<uint64_t>(room) / 4;
  if (need(threads) <= budget) return;
  if (need(1) + kBlasSlackBytes > static_cast<uint64_t>(room)) {
    char line[320];
    const int n = std::snprintf(line, sizeof line,
                                "error: the address-space limit (ulimit -v) leaves this program %s at start, "
                                "less than the %s its matrix products (OpenBLAS) need; raise the limit\n",
                                formatBytes(static_cast<uint64_t>(room)).c_str(),
                                formatBytes(need(1) + kBlasSlackBytes).c_str());
    if (write(STDERR_FILENO, line, static_cast<size_t>(std::max(n, 0))) < 0) _exit(1);
    _exit(1);
  }
  int fit = 1;
  while (fit + 1 < threads && need(fit + 1) <= budget)
    ++fit;
  if (fit >= threads) return;
  // Restart with the count that fits: OpenBLAS and libgomp read it from the environment when they load.
  std::vector<std::string> set = {std::string("OPENBLAS_NUM_THREADS=") + std::to_string(fit),
                                  std::string("OMP_NUM_THREADS=") + std::to_string(fit),
                                  std::string(kCapVariable) + "=" + std::to_string(fit)};
  std::vector<char*> env;
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) != 0 &&
        std::strncmp(*e, "GOTO_NUM_THREADS=", 17) != 0 && std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0)
      env.push_back(*e);
  for (std::string& s : set)
    env.push_back(s.data());
  env.push_back(nullptr);
  execve("/proc/self/exe", argv, env.data());  // returns only on failure: go on with OpenBLAS's count
}

[[gnu::used, gnu::section(".preinit_array")]] void (*const preinitBlasGuard)(int, char**,
                                                                             char**) = fitBlasToAddressSpace;

}  // namespace

int blasThreadCap() {
  return threadCap;
}

void reserveBlasBuffers() {
  if (!dlsym(RTLD_DEFAULT, "openblas_get_parallel")) return;  // another BLAS: nothing of this kind to reserve
  const int64_t room = addressSpaceRoom();
  if (room < 0) return;
  if (static_cast<uint64_t>(room) < kBlasStartRoom)
    fail("the address-space limit (ulimit -v) leaves this program ", formatBytes(static_cast<uint64_t>(room)),
         " after start-up, less than the ", formatBytes(kBlasStartRoom),
         " its matrix products (OpenBLAS) need before a model is loaded; raise the limit");
  // 256³ is above OpenBLAS's threshold for threading, so every pool thread takes its buffer too.
  const at::Tensor a = at::ones({256, 256}, at::kFloat);
  (void)at::mm(a, a);
}

}  // namespace hs
