#pragma once
// HeadScope session files (.hscope, docs/architecture.md, "Sessions and export"): one safetensors file whose
// __metadata__["headscope.session"] holds the session JSON and whose tensors hold the large results
// (task embeddings, learned vectors, α). Grids, curves and tables are small and stay in the JSON.
//
// Session JSON (format_version 1):
//   {"format_version": 1, "model": {...}, "tokenizer": {...}, "task": {...},
//    "runs": [AnalysisRun, ...]  (results_json.h),
//    "selections": ..., "interventions": [...], "view_state": ..., "methods": {name: record},
//    "batch": {...} (only when not empty)}
//
// Consistency rules checked on save and on load: run ids are unique; every tensor a run lists and
// every "tensor" an intervention entry names exists among the session tensors.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "results/results.h"
#include "session/model_identity.h"

namespace hs {

// The newest session format this build writes and reads. Bump it whenever the JSON form changes
// incompatibly; loadSession refuses files with a larger number.
constexpr int kSessionFormatVersion = 1;
// The safetensors metadata key that marks a file as a HeadScope session.
inline constexpr const char* kSessionMetadataKey = "headscope.session";
// The safetensors metadata key holding the SHA-256 (hex) of the session's payload: the session JSON text,
// then every tensor in name order (name, dtype, shape, bytes). Written by saveSession, verified by
// loadSession; kept apart from the session JSON so the JSON's fields can change freely.
inline constexpr const char* kSessionChecksumKey = "headscope.session.sha256";

struct Session {
  int format_version = kSessionFormatVersion;
  nlohmann::json model = nlohmann::json::object();  // path, files with sha256 (modelIdentity), format, dtype
  nlohmann::json tokenizer = nlohmann::json::object();  // tokenizer path / settings
  nlohmann::json task = nlohmann::json::object();       // dataset, shots, template, label words, seeds
  std::vector<AnalysisRun> runs;
  nlohmann::json selections = nlohmann::json::object();  // e.g. {"heads": [[l, h], ...]}
  // A list of intervention entries: {"site", "heads", "positions", "rows", "op", "scale", "tensor"};
  // "tensor", when present, names a session tensor.
  nlohmann::json interventions = nlohmann::json::array();
  nlohmann::json view_state = nlohmann::json::object();  // tabs, selected metric, colour scale, ...
  // Method name → the method's record (registry.h methodRecordJson: title, options with defaults and
  // help, outputs) for every method of `runs`, so a session explains its runs without this build.
  nlohmann::json methods = nlohmann::json::object();
  // Batch bookkeeping (core/batch, docs/batch.md), written only when not empty: a batch run's file holds
  // {"job": its spec, ...}; a merged study {"jobs": {id: ...}, "failed": {id: error}, "plan": ...}.
  nlohmann::json batch = nlohmann::json::object();
  std::map<std::string, at::Tensor> tensors;  // CPU tensors; dtypes F64..BOOL as safetensors

  const AnalysisRun* findRun(const std::string& id) const;  // nullptr when absent
  // Drops the run and the tensors it owns; false when there is no such run.
  bool removeRun(const std::string& id);
};

// The session JSON without tensors (what goes into the metadata); format_version is always
// kSessionFormatVersion.
nlohmann::json sessionToJson(const Session& s);
// Parses the session JSON; `tensorNames` are the tensors available beside it (for the consistency
// check). Errors name `where` (the file).
Session sessionFromJson(const nlohmann::json& j, const std::vector<std::string>& tensorNames,
                        const std::string& where);

// Writes atomically (temp file in the same folder + rename): on any error the previous file at
// `path` is left untouched. Throws hs::Error naming the file.
void saveSession(const std::string& path, const Session& s);

// Reads a session; tensors are copied out of the file (the file may be replaced afterwards).
// Throws hs::Error naming the file when it is not a safetensors file or is truncated, has no
// headscope.session metadata, fails its checksum, holds malformed or oversized JSON (json_read.h limits),
// was written by a newer format, or is inconsistent.
Session loadSession(const std::string& path);

}  // namespace hs
