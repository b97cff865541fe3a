#pragma once
// How much memory this process can still take, and byte sizes as users read and write them. One definition
// serves the memory plan made before loading a model (model/load/memory_plan.h) and the plausibility checks
// that refuse a run whose estimate cannot fit, with both numbers, before allocating.
#include <cstdint>
#include <string>

namespace hs {

// The RAM this process can still take without swapping or being killed, and which limit decided it.
struct RamRoom {
  uint64_t bytes = UINT64_MAX;  // UINT64_MAX when no limit is known
  std::string source;           // "MemAvailable", "cgroup memory limit", "RLIMIT_AS (ulimit -v)",
                                // "HEADSCOPE_MEMORY_LIMIT"; "" when no limit is known
};

// RamRoom::source when the address-space limit decided.
inline constexpr const char* kAddressSpaceLimit = "RLIMIT_AS (ulimit -v)";

// The smallest of /proc/meminfo's MemAvailable, the room left under the cgroup memory limits that govern the
// process (v2 memory.max, v1 memory.limit_in_bytes; its own folder's and its parents', as Slurm sets a
// job's), the address-space limit (RLIMIT_AS) minus what the process has mapped, and HEADSCOPE_MEMORY_LIMIT
// (a cap the user sets for HeadScope on a shared machine: bytes or 600M / 8G / 1.5T). `proc` and `cgroupRoot`
// are the kernel's mounts (tests pass fakes). Throws naming HEADSCOPE_MEMORY_LIMIT when it is not a size.
RamRoom ramRoom(const std::string& proc = "/proc", const std::string& cgroupRoot = "/sys/fs/cgroup");

// What the address-space limit (RLIMIT_AS, `ulimit -v`) leaves this process: the limit minus what it has
// mapped (`proc`/self/status VmSize); -1 without a limit. Reserved but untouched memory counts here, so a
// process can run out of it with plenty of RAM free.
int64_t addressSpaceRoom(const std::string& proc = "/proc");

// "1.6 GB", "320 MB", "12 kB", "17 bytes" (decimal units, as `df -H` and model cards).
std::string formatBytes(uint64_t bytes);

// "600M", "8G", "1.5T", "123456" → bytes (decimal units); throws naming the text when it is not a size.
uint64_t parseByteSize(const std::string& text);

// Refuses, before allocating, `count` items of about `bytesEach` bytes that would take more than half of
// ramRoom(): "<what>: <count> <items> need about <X>, more than half of the <Y> this process can still
// allocate (<limit>); <hint>".
void checkFitsInMemory(const std::string& what, uint64_t count, uint64_t bytesEach, const std::string& items,
                       const std::string& hint);

}  // namespace hs
