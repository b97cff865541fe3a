#include "analysis/framework/data_roots.h"

#include <filesystem>
#include <mutex>

namespace hs {

namespace {

std::mutex& rootsMutex() {
  static std::mutex m;
  return m;
}

std::vector<std::string>& rootsStore() {
  static std::vector<std::string> roots;
  return roots;
}

}  // namespace

void setDataRoots(std::vector<std::string> roots) {
  const std::lock_guard<std::mutex> lock(rootsMutex());
  rootsStore() = std::move(roots);
}

const std::vector<std::string>& dataRoots() {
  const std::lock_guard<std::mutex> lock(rootsMutex());
  return rootsStore();
}

nlohmann::json withDataFolders(const std::vector<OptionSpec>& specs, nlohmann::json given) {
  if (!given.is_object()) return given;
  for (const OptionSpec& s : specs) {
    if (s.check.data_folder.empty()) continue;
    const auto it = given.find(s.key);
    if (it != given.end() && !(it->is_string() && it->get<std::string>().empty())) continue;
    for (const std::string& root : dataRoots()) {
      const std::filesystem::path dir = std::filesystem::path(root) / s.check.data_folder;
      std::error_code ec;
      if (std::filesystem::is_directory(dir, ec)) {
        given[s.key] = dir.lexically_normal().string();
        break;
      }
    }
  }
  return given;
}

}  // namespace hs
