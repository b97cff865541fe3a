#pragma once
// Reads of the kernel's own files (procfs, cgroupfs). They report a size of 0 and may vanish between a
// listing and a read, so unlike file_text.h's readers these never fail: a missing file reads as "".
#include <string>
#include <vector>

namespace hs {

// The file's text, "" when it cannot be read.
std::string readSystemFile(const std::string& path);

// One line of `proc`/self/cgroup, "id:controllers:path": the v2 hierarchy has no controllers ("0::/path"),
// a v1 line lists its controllers, comma-separated ("4:cpu,cpuacct:/path").
struct CgroupMembership {
  std::string controllers;
  std::string path;
};
std::vector<CgroupMembership> processCgroups(const std::string& proc = "/proc");

}  // namespace hs
