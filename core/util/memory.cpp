#include "util/memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "util/error.h"
#include "util/system_files.h"

namespace hs {

namespace {

// A "Key:   123 kB" line of a /proc file (meminfo, self/status), in bytes; -1 when absent.
int64_t procBytes(const std::string& file, const std::string& key) {
  std::istringstream lines(readSystemFile(file));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream ss(line.substr(key.size() + 1));
      int64_t kb = -1;
      ss >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  return -1;
}

// The first word of a cgroup file as a number; -1 when absent or "max".
int64_t cgroupNumber(const std::string& file) {
  std::istringstream in(readSystemFile(file));
  std::string s;
  if (!(in >> s) || s == "max") return -1;
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return -1;
  }
}

// The room left under the cgroup memory limits that govern this process (its own folder's and every
// parent's, v2 memory.max − memory.current, v1 memory.limit_in_bytes − memory.usage_in_bytes); -1 without a
// limit. v1 writes "no limit" as a number near 2^63.
int64_t cgroupRoom(const std::string& proc, const std::string& root) {
  int64_t room = -1;
  const auto take = [&room](int64_t limit, int64_t used) {
    if (limit < 0 || limit >= (int64_t(1) << 60)) return;
    const int64_t left = std::max<int64_t>(0, limit - std::max<int64_t>(used, 0));
    if (room < 0 || left < room) room = left;
  };
  for (const CgroupMembership& g : processCgroups(proc)) {
    if (g.controllers.empty()) {
      for (const std::string& dir : cgroupFolders(root, g.path))
        take(cgroupNumber(dir + "/memory.max"), cgroupNumber(dir + "/memory.current"));
    } else if (hasController(g.controllers, "memory")) {
      for (const std::string& dir : cgroupFolders(root + "/" + g.controllers, g.path))
        take(cgroupNumber(dir + "/memory.limit_in_bytes"), cgroupNumber(dir + "/memory.usage_in_bytes"));
    }
  }
  return room;
}

}  // namespace

int64_t addressSpaceRoom(const std::string& proc) {
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return -1;
  const int64_t used = std::max<int64_t>(procBytes(proc + "/self/status", "VmSize"), 0);
  return std::max<int64_t>(0, static_cast<int64_t>(as.rlim_cur) - used);
}

RamRoom ramRoom(const std::string& proc, const std::string& cgroupRoot) {
  RamRoom r;
  auto consider = [&r](int64_t bytes, const char* source) {
    if (bytes >= 0 && static_cast<uint64_t>(bytes) < r.bytes)
      r.bytes = static_cast<uint64_t>(bytes), r.source = source;
  };
  consider(procBytes(proc + "/meminfo", "MemAvailable"), "MemAvailable");
  consider(cgroupRoom(proc, cgroupRoot), "cgroup memory limit");
  consider(addressSpaceRoom(proc), kAddressSpaceLimit);
  if (const char* cap = std::getenv("HEADSCOPE_MEMORY_LIMIT"); cap && *cap)
    consider(static_cast<int64_t>(withContext("HEADSCOPE_MEMORY_LIMIT", [&] { return parseByteSize(cap); })),
             "HEADSCOPE_MEMORY_LIMIT");
  return r;
}

std::string formatBytes(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.0f MB", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof buf, "%.0f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

uint64_t parseByteSize(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  std::string unit = text.substr(std::min(used, text.size()));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double scale = 0;
  if (unit.empty())
    scale = 1;
  else if (unit == "K" || unit == "k")
    scale = 1e3;
  else if (unit == "M" || unit == "m")
    scale = 1e6;
  else if (unit == "G" || unit == "g")
    scale = 1e9;
  else if (unit == "T" || unit == "t")
    scale = 1e12;
  if (v < 0 || scale == 0)
    fail("\"", text, "\" is not a memory size (expected e.g. 600M, 8G or a byte count)");
  return static_cast<uint64_t>(v * scale);
}

void checkFitsInMemory(const std::string& what, uint64_t count, uint64_t bytesEach, const std::string& items,
                       const std::string& hint) {
  const uint64_t need = bytesEach > 0 && count > UINT64_MAX / bytesEach ? UINT64_MAX : count * bytesEach;
  const RamRoom room = ramRoom();
  if (need > room.bytes / 2)
    fail(what, ": ", count, " ", items, " need about ", formatBytes(need), ", more than half of the ",
         formatBytes(room.bytes), " this process can still allocate (", room.source, "); ", hint);
}

}  // namespace hs
