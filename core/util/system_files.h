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

// The folders of a cgroup hierarchy mounted at `mount` that govern a member of `path`: its own, then each
// parent up to the hierarchy's root. A limit set on any of them applies: Slurm sets a job's memory and CPU
// limits on the job's folder while its processes run in a step's folder below it. ("/a/b" → mount/a/b,
// mount/a, mount.)
std::vector<std::string> cgroupFolders(const std::string& mount, const std::string& path);

// Whether a v1 line's comma-separated `controllers` include `name` ("cpu,cpuacct" has "cpu", not "cpuac").
bool hasController(const std::string& controllers, const std::string& name);

}  // namespace hs
