#include "model/load/hub_cache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace fs = std::filesystem;

namespace hs {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool isDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool pathExists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The first line of a refs/<ref> file: the commit hash.
std::string readRef(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' '))
    line.pop_back();
  return line;
}

bool safeName(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.front() == '-') return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::vector<std::string> snapshotsOf(const fs::path& repo) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(repo / "snapshots", ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool complete(const fs::path& snap) {
  return pathExists(snap / "config.json") &&
         (pathExists(snap / "model.safetensors") || pathExists(snap / "model.safetensors.index.json"));
}

}  // namespace

std::string hubCacheDir() {
  if (!env("HF_HUB_CACHE").empty()) return env("HF_HUB_CACHE");
  if (!env("HF_HOME").empty()) return (fs::path(env("HF_HOME")) / "hub").string();
  if (!env("XDG_CACHE_HOME").empty()) return (fs::path(env("XDG_CACHE_HOME")) / "huggingface/hub").string();
  return (fs::path(env("HOME")) / ".cache/huggingface/hub").string();
}

bool looksLikeHubId(const std::string& s) {
  std::string id = s;
  const size_t at = id.find('@');
  if (at != std::string::npos) {
    if (!safeName(id.substr(at + 1))) return false;
    id = id.substr(0, at);
  }
  const size_t slash = id.find('/');
  if (slash == std::string::npos) return safeName(id);
  if (id.find('/', slash + 1) != std::string::npos) return false;
  return safeName(id.substr(0, slash)) && safeName(id.substr(slash + 1));
}

std::optional<std::string> resolveHubId(const std::string& idIn, const std::string& cacheDir) {
  if (!looksLikeHubId(idIn)) return std::nullopt;
  std::string id = idIn, revision = "main";
  if (const size_t at = id.find('@'); at != std::string::npos) {
    revision = id.substr(at + 1);
    id = id.substr(0, at);
  }
  const size_t slash = id.find('/');  // org/name → models--org--name
  const std::string folder =
      "models--" + (slash == std::string::npos ? id : id.substr(0, slash) + "--" + id.substr(slash + 1));
  const fs::path repo = fs::path(cacheDir) / folder;
  if (!isDir(repo)) return std::nullopt;

  std::string hash = revision;
  if (pathExists(repo / "refs" / revision)) hash = readRef(repo / "refs" / revision);
  const fs::path snap = repo / "snapshots" / hash;
  if (!hash.empty() && isDir(snap)) return snap.string();

  std::string have;
  for (const auto& s : snapshotsOf(repo))
    have += (have.empty() ? "" : ", ") + s;
  if (pathExists(repo / "refs" / revision))
    fail(idIn, ": the hub cache ", repo.string(), " says ", revision, " is revision ", hash,
         " but has no snapshot of it (snapshots: ", have.empty() ? "none" : have,
         "); nothing is downloaded: fetch it with huggingface-cli download ", id);
  fail(idIn, ": the hub cache ", repo.string(), " has no revision ", revision, " (refs/", revision,
       " missing; snapshots: ", have.empty() ? "none" : have, ")");
}

std::vector<CachedModel> listCachedModels(const std::string& cacheDir) {
  std::vector<CachedModel> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cacheDir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("models--", 0) != 0) continue;
    // models--org--name → org/name (a name without an org has no second "--").
    std::string rest = name.substr(8);
    const size_t sep = rest.find("--");
    const std::string id = sep == std::string::npos ? rest : rest.substr(0, sep) + "/" + rest.substr(sep + 2);
    std::string hash;
    if (pathExists(e.path() / "refs/main")) hash = readRef(e.path() / "refs/main");
    if (hash.empty() || !isDir(e.path() / "snapshots" / hash)) {
      // No main ref: the most recently written snapshot.
      fs::file_time_type newest{};
      for (const auto& s : snapshotsOf(e.path())) {
        const auto t = fs::last_write_time(e.path() / "snapshots" / s, ec);
        if (hash.empty() || t > newest) hash = s, newest = t;
      }
    }
    if (hash.empty()) continue;
    const fs::path snap = e.path() / "snapshots" / hash;
    out.push_back({id, hash, snap.string(), complete(snap)});
  }
  std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) { return a.id < b.id; });
  return out;
}

}  // namespace hs
