#include "util/memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace hs {

namespace {

// "<key>: <n> kB" from a /proc file; 0 when absent.
uint64_t procKb(const char* file, const char* key) {
  std::ifstream in(file);
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') {
      std::istringstream ss(line.substr(n + 1));
      uint64_t kb = 0;
      ss >> kb;
      return kb;
    }
  return 0;
}

}  // namespace

uint64_t availableMemoryBytes() {
  uint64_t avail = UINT64_MAX;
  if (const uint64_t kb = procKb("/proc/meminfo", "MemAvailable"); kb > 0) avail = kb * 1024;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const uint64_t used = procKb("/proc/self/status", "VmSize") * 1024;
    const uint64_t cap = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
    if (cap < avail) avail = cap;
  }
  return avail;
}

std::string memoryText(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

void checkFitsInMemory(const std::string& what, uint64_t count, uint64_t bytesEach, const std::string& items,
                       const std::string& hint) {
  const uint64_t need = bytesEach > 0 && count > UINT64_MAX / bytesEach ? UINT64_MAX : count * bytesEach;
  const uint64_t avail = availableMemoryBytes();
  if (need > avail / 2)
    fail(what, ": ", count, " ", items, " need about ", memoryText(need), ", more than half of the ",
         memoryText(avail), " this process can still allocate; ", hint);
}

}  // namespace hs
