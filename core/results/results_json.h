#pragma once
// JSON form of the result value types (results.h). The session format, the CLI's JSON output and
// the export folder all use exactly this form, so it is part of the file format: change it only
// together with the session format_version.
//
//   HeadGrid:   {"id", "name", "unit", "shape": [L, H], "values": [[v00, v01, ...], ...], "provenance"
//               [, "se": [[...], ...] (per-head standard errors, the values' shape)]}
//   Curve:      {"id", "name", "x_label", "y_label", "x": [...], "series": [{"id", "y": [...]}],
//               "provenance"[, "intervals": [{"series", "lo": [...], "hi": [...]}] (95 %, one per x)]}
//   Table:      {"id", "name", "columns": [...], "rows": [[...], ...], "provenance"}
//   ("se" and "intervals" are optional: files written before they existed read with none.)
//   AnalysisRun:{"id", "method", "options", "provenance", "grids", "curves", "tables", "prompts", "tensors",
//               "summary"} ("provenance" and "prompts" may be absent: runs written before they existed)
//   PromptRecord: {"set", "ids": [...], "query_pos", "answer_ids": [...]}
//   Provenance: {"method", "model", "task", "seed", "n_prompts", "options", "created"[, "derived"]}
//
// Doubles: finite values are JSON numbers, written with 17 significant digits, so they read back
// bit-exact (including -0.0). JSON has no NaN or infinity; they are written as the strings "NaN",
// "Infinity" and "-Infinity" and read back as the same values. This applies to grid values, curve
// x/y and numeric table cells (a table cell holding exactly one of these three strings therefore
// reads back as the number). Free-form JSON (options, summary) is stored as given.
//
// Reading is strict about structure (shape and row lengths agree, ids present and unique within a
// run, types right) and throws hs::Error naming the object ("grid tsla.tr: values row 3 has 7
// entries, expected 8"); the caller adds the file name. Descriptive fields (name, unit, labels,
// provenance) may be absent and default to empty.
#include <nlohmann/json.hpp>

#include <string>

#include "results/results.h"

namespace hs {

// One double as JSON: a number when finite, else "NaN" / "Infinity" / "-Infinity".
nlohmann::json doubleToJson(double v);
// Inverse of doubleToJson; `where` names the value in the error when j is neither.
double doubleFromJson(const nlohmann::json& j, const std::string& where);

void to_json(nlohmann::json& j, const Provenance& p);
void from_json(const nlohmann::json& j, Provenance& p);
void to_json(nlohmann::json& j, const HeadGrid& g);
void from_json(const nlohmann::json& j, HeadGrid& g);
void to_json(nlohmann::json& j, const Curve& c);
void from_json(const nlohmann::json& j, Curve& c);
void to_json(nlohmann::json& j, const Table& t);
void from_json(const nlohmann::json& j, Table& t);
void to_json(nlohmann::json& j, const PromptRecord& p);
void from_json(const nlohmann::json& j, PromptRecord& p);
void to_json(nlohmann::json& j, const AnalysisRun& r);
void from_json(const nlohmann::json& j, AnalysisRun& r);
void to_json(nlohmann::json& j, const HeadRef& h);  // [layer, head]
void from_json(const nlohmann::json& j, HeadRef& h);

}  // namespace hs
