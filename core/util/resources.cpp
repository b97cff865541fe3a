#include "util/resources.h"

#include <filesystem>

namespace hs {

namespace fs = std::filesystem;

std::string executableDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::vector<std::string> resourceCandidates(const std::string& rel) {
  std::vector<std::string> c;
  const std::string exe = executableDir();
  if (!exe.empty()) c.push_back((fs::path(exe).parent_path() / "share/headscope" / rel).string());
  c.push_back((fs::path("/usr/share/headscope") / rel).string());
  return c;
}

std::string findResource(const std::string& rel) {
  for (const std::string& p : resourceCandidates(rel)) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p;
  }
  return "";
}

}  // namespace hs
