#include "session/model_identity.h"

#include <filesystem>

#include "util/error.h"

namespace hs {

namespace fs = std::filesystem;
using nlohmann::json;

json modelIdentity(const std::vector<std::string>& files) {
  json list = json::array();
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (ec) fail(f, ": cannot read the size of a model file: ", ec.message());
    list.push_back(json{
        {"path", f}, {"name", fs::path(f).filename().string()}, {"size", size}, {"sha256", sha256File(f)}});
  }
  return json{{"files", std::move(list)}};
}

std::vector<std::string> verifyModelIdentity(const json& identity) {
  std::vector<std::string> problems;
  auto files = identity.find("files");
  if (!identity.is_object() || files == identity.end() || !files->is_array()) {
    problems.push_back("model identity has no \"files\" list");
    return problems;
  }
  for (const json& e : *files) {
    if (!e.is_object() || !e.contains("path") || !e["path"].is_string() || !e.contains("sha256") ||
        !e["sha256"].is_string()) {
      problems.push_back("model identity entry " + e.dump() + " lacks \"path\" or \"sha256\"");
      continue;
    }
    const std::string path = e["path"].get<std::string>();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      problems.push_back(path + ": missing");
      continue;
    }
    const auto size = fs::file_size(path, ec);
    if (e.contains("size") && e["size"].is_number_unsigned() && e["size"].get<uint64_t>() != size) {
      problems.push_back(cat(path, ": size ", size, " bytes, session recorded ", e["size"].get<uint64_t>()));
      continue;
    }
    const std::string now = sha256File(path);
    if (now != e["sha256"].get<std::string>())
      problems.push_back(path + ": sha256 differs (now " + now + ", session recorded " +
                         e["sha256"].get<std::string>() + ")");
  }
  return problems;
}

}  // namespace hs
