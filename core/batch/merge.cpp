#include "batch/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "model/io/safetensors.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The names in `folder` ending in `ext` (stems, sorted); none when the folder does not exist.
std::vector<std::string> stems(const fs::path& folder, const std::string& ext) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || name.size() <= ext.size()) continue;
    if (name.compare(name.size() - ext.size(), ext.size(), ext) != 0) continue;
    if (!entry.is_regular_file(ec)) continue;
    out.push_back(name.substr(0, name.size() - ext.size()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `value` when every item of `values` equals it, else an empty object.
json common(const std::vector<json>& values) {
  if (values.empty()) return json::object();
  for (const json& v : values)
    if (v != values.front()) return json::object();
  return values.front();
}

}  // namespace

std::vector<std::string> runFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& id : stems(fs::path(dir) / "runs", ".hscope"))
    out.push_back((fs::path(dir) / "runs" / (id + ".hscope")).string());
  return out;
}

Failure readFailure(const std::string& path) {
  Failure f;
  f.id = fs::path(path).stem().string();
  std::istringstream in(readTextFile(path, "failure log"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("error: ", 0) == 0 && f.error.empty()) f.error = line.substr(7);
    if (line.rfind("label: ", 0) == 0 && f.label.empty()) f.label = line.substr(7);
  }
  if (f.error.empty()) fail(path, ": a failure log without an \"error: \" line");
  return f;
}

std::vector<Failure> failures(const std::string& dir) {
  const std::vector<std::string> done = stems(fs::path(dir) / "runs", ".hscope");
  const std::set<std::string> finished(done.begin(), done.end());
  std::vector<Failure> out;
  for (const std::string& id : stems(fs::path(dir) / "failed", ".log"))
    if (!finished.count(id)) out.push_back(readFailure((fs::path(dir) / "failed" / (id + ".log")).string()));
  return out;
}

json readJobIndex(const std::string& dir) {
  const fs::path p = fs::path(dir) / "jobs.json";
  std::error_code ec;
  if (!fs::exists(p, ec)) return nullptr;
  json j = readJsonFile(p.string(), "batch job index");
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array())
    fail(p.string(), ": not a batch job index (expected {\"jobs\": [...]})");
  for (const json& job : j["jobs"])
    if (!job.is_object() || !job.contains("id") || !job["id"].is_string())
      fail(p.string(), ": a job without an \"id\"");
  return j;
}

Session mergeBatch(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, ": not a batch folder (no such folder)");
  const std::vector<std::string> files = runFiles(dir);
  if (files.empty()) fail(dir, ": no finished runs in ", (fs::path(dir) / "runs").string());

  Session study;
  json jobs = json::object();
  std::vector<json> models, tokenizers, tasks;
  for (const std::string& file : files) {
    Session s = loadSession(file);
    const std::string id = fs::path(file).stem().string();
    if (s.runs.size() != 1) fail(file, ": holds ", s.runs.size(), " runs, expected the one run of job ", id);
    if (s.runs[0].id != id)
      fail(file, ": holds run ", s.runs[0].id, ", expected run ", id, " (the file name)");
    for (auto& [name, tensor] : s.tensors)
      if (!study.tensors.emplace(name, tensor).second)
        fail(file, ": tensor ", name, " is also in another run of ", dir);
    for (const auto& [name, record] : s.methods.items())
      if (!study.methods.contains(name)) study.methods[name] = record;
    jobs[id] = {{"spec", s.batch.value("job", json(nullptr))},
                {"model", s.model},
                {"tokenizer", s.tokenizer},
                {"task", s.task}};
    models.push_back(s.model);
    tokenizers.push_back(s.tokenizer);
    tasks.push_back(s.task);
    study.runs.push_back(std::move(s.runs[0]));
  }
  study.model = common(models);
  study.tokenizer = common(tokenizers);
  study.task = common(tasks);

  json failed = json::object();
  for (const Failure& f : failures(dir))
    failed[f.id] = f.error;
  json pending = json::array();
  json plan = nullptr;
  const json index = readJobIndex(dir);
  if (!index.is_null()) {
    for (const json& job : index["jobs"]) {
      const std::string id = job["id"].get<std::string>();
      if (!jobs.contains(id) && !failed.contains(id)) pending.push_back(id);
    }
  }
  const fs::path planFile = fs::path(dir) / "plan.json";
  if (fs::exists(planFile, ec)) plan = readJsonFile(planFile.string(), "batch plan");
  study.batch = {
      {"format_version", 1}, {"plan", plan}, {"jobs", jobs}, {"failed", failed}, {"pending", pending}};
  return study;
}

bool isStudySession(const std::string& path) {
  try {
    const auto file = SafetensorsFile::open(path);
    const auto meta = file->metadata().find(kSessionMetadataKey);
    if (meta == file->metadata().end()) return false;
    const json j = json::parse(meta->second, nullptr, false);
    return j.is_object() && j.contains("batch") && j["batch"].is_object() && j["batch"].contains("jobs");
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace hs::batch
