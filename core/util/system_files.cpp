#include "util/system_files.h"

#include <fstream>
#include <sstream>

namespace hs {

std::string readSystemFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<CgroupMembership> processCgroups(const std::string& proc) {
  std::vector<CgroupMembership> groups;
  std::istringstream lines(readSystemFile(proc + "/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    groups.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return groups;
}

}  // namespace hs
