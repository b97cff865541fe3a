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

std::vector<std::string> cgroupFolders(const std::string& mount, const std::string& path) {
  std::vector<std::string> out;
  std::string p = path;
  while (!p.empty() && p.back() == '/')
    p.pop_back();
  for (;;) {
    out.push_back(mount + p);
    if (p.empty()) break;
    p.erase(p.rfind('/') == std::string::npos ? 0 : p.rfind('/'));
  }
  return out;
}

bool hasController(const std::string& controllers, const std::string& name) {
  return ("," + controllers + ",").find("," + name + ",") != std::string::npos;
}

}  // namespace hs
