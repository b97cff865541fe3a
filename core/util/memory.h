#pragma once
// How much memory this process can still take: the basis of the plausibility checks that refuse a run
// whose estimate cannot fit, with both numbers, before allocating.
#include <cstdint>
#include <string>

namespace hs {

// min(MemAvailable of /proc/meminfo, the address-space limit (RLIMIT_AS) minus what the process has
// mapped). UINT64_MAX when neither is known.
uint64_t availableMemoryBytes();

// "1.5 GiB", "320 MiB", "12 KiB", "17 bytes".
std::string memoryText(uint64_t bytes);

// Refuses, before allocating, `count` items of about `bytesEach` bytes that would take more than half of
// availableMemoryBytes(): "<what>: <count> <items> need about <X>, more than half of the <Y> this process can
// still allocate; <hint>".
void checkFitsInMemory(const std::string& what, uint64_t count, uint64_t bytesEach, const std::string& items,
                       const std::string& hint);

}  // namespace hs
