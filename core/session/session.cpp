#include "session/session.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

#include "model/io/safetensors.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {

namespace {

using nlohmann::json;

// Names of the tensors the intervention entries refer to ("tensor": name).
std::vector<std::string> interventionTensors(const json& interventions) {
  std::vector<std::string> out;
  if (!interventions.is_array()) return out;
  for (const json& e : interventions)
    if (e.is_object())
      if (auto it = e.find("tensor"); it != e.end() && it->is_string()) out.push_back(it->get<std::string>());
  return out;
}

// Unique run ids; every referenced tensor present.
void checkConsistent(const Session& s, const std::set<std::string>& tensorNames, const std::string& where) {
  std::set<std::string> ids;
  for (const auto& r : s.runs) {
    if (!ids.insert(r.id).second) fail(where, ": run id ", r.id, " appears twice, expected unique run ids");
    for (const auto& t : r.tensors)
      if (!tensorNames.count(t))
        fail(where, ": run ", r.id, " references tensor ", t, ", which is not in the session (",
             tensorNames.size(), " tensors)");
  }
  for (const auto& t : interventionTensors(s.interventions))
    if (!tensorNames.count(t))
      fail(where, ": an intervention references tensor ", t, ", which is not in the session (",
           tensorNames.size(), " tensors)");
}

json memberOr(const json& j, const char* key, json fallback) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : *it;
}

}  // namespace

const AnalysisRun* Session::findRun(const std::string& id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

bool Session::removeRun(const std::string& id) {
  const auto it = std::find_if(runs.begin(), runs.end(), [&](const AnalysisRun& r) { return r.id == id; });
  if (it == runs.end()) return false;
  for (const std::string& t : it->tensors)
    tensors.erase(t);
  runs.erase(it);
  return true;
}

// Every member but "batch", which is written only when it holds something.
static json sessionMembers(const Session& s) {
  return json{{"format_version", kSessionFormatVersion},
              {"model", s.model},
              {"tokenizer", s.tokenizer},
              {"task", s.task},
              {"runs", s.runs},
              {"selections", s.selections},
              {"interventions", s.interventions},
              {"view_state", s.view_state},
              {"methods", s.methods}};
}

json sessionToJson(const Session& s) {
  json j = sessionMembers(s);
  if (s.batch.is_object() && !s.batch.empty()) j["batch"] = s.batch;
  return j;
}

Session sessionFromJson(const json& j, const std::vector<std::string>& tensorNames,
                        const std::string& where) {
  if (!j.is_object()) fail(where, ": session JSON is a ", j.type_name(), ", expected an object");
  auto v = j.find("format_version");
  if (v == j.end()) fail(where, ": session JSON has no \"format_version\"");
  if (!v->is_number_integer() || v->get<int64_t>() < 1)
    fail(where, ": \"format_version\" is ", v->dump(), ", expected a positive integer");
  const int64_t version = v->get<int64_t>();
  if (version > kSessionFormatVersion)
    fail(where, ": was written by a newer HeadScope (format ", version, ", this build reads up to ",
         kSessionFormatVersion, ")");

  Session s;
  s.format_version = static_cast<int>(version);
  s.model = memberOr(j, "model", json::object());
  s.tokenizer = memberOr(j, "tokenizer", json::object());
  s.task = memberOr(j, "task", json::object());
  s.selections = memberOr(j, "selections", json::object());
  s.interventions = memberOr(j, "interventions", json::array());
  s.view_state = memberOr(j, "view_state", json::object());
  s.methods = memberOr(j, "methods", json::object());
  s.batch = memberOr(j, "batch", json::object());
  for (const json* part : {&s.model, &s.tokenizer, &s.task, &s.batch})
    if (!part->is_object())
      fail(where, ": \"model\", \"tokenizer\", \"task\" and \"batch\" must be JSON objects, found a ",
           part->type_name());
  if (!s.interventions.is_array())
    fail(where, ": \"interventions\" is a JSON ", s.interventions.type_name(), ", expected an array");

  auto runs = j.find("runs");
  if (runs != j.end() && !runs->is_null()) {
    if (!runs->is_array()) fail(where, ": \"runs\" is a JSON ", runs->type_name(), ", expected an array");
    for (const json& r : *runs)
      s.runs.push_back(withContext(where, [&] { return r.get<AnalysisRun>(); }));
  }
  checkConsistent(s, std::set<std::string>(tensorNames.begin(), tensorNames.end()), where);
  return s;
}

void saveSession(const std::string& path, const Session& s) {
  std::set<std::string> names;
  for (const auto& [name, t] : s.tensors)
    names.insert(name);
  checkConsistent(s, names, path);

  const std::string text = sessionToJson(s).dump();
  std::vector<std::pair<std::string, at::Tensor>> tensors(s.tensors.begin(), s.tensors.end());
  writeSafetensors(path, tensors, {{kSessionMetadataKey, text}});
}

Session loadSession(const std::string& path) {
  std::shared_ptr<SafetensorsFile> file;
  try {
    file = SafetensorsFile::open(path);
  } catch (const std::exception& e) {
    // The reader's message already names the file and what is wrong with it.
    fail("cannot open session ", path, ": not a readable safetensors file: ", e.what());
  }
  auto meta = file->metadata().find(kSessionMetadataKey);
  if (meta == file->metadata().end())
    fail(path, ": not a HeadScope session (a safetensors file without \"", kSessionMetadataKey,
         "\" metadata; ", file->names().size(), " tensors)");

  json j = json::parse(meta->second, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    fail(path, ": the \"", kSessionMetadataKey, "\" metadata is not valid JSON (", meta->second.size(),
         " bytes)");

  Session s = sessionFromJson(j, file->names(), path);
  for (const auto& name : file->names())
    s.tensors[name] =
        withContext(path, [&] { return file->tensor(name).clone(); });  // own memory, not the map
  return s;
}

}  // namespace hs
