#include "session_io.h"

#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "model/hooks.h"
#include "session/session.h"
#include "util/error.h"
#include "util/json_read.h"

namespace hs::gui {

using nlohmann::json;

namespace {

const char* opOfKind(InterventionKind kind) {
  switch (kind) {
    case InterventionKind::ZeroAblate:
      return "zero";
    case InterventionKind::MeanAblate:
      return "mean";
    case InterventionKind::PatchClean:
      return "replace";
    case InterventionKind::Steer:
      return "add";
  }
  return "?";
}

// The version of one entry's JSON: 2 added the source (source, source_prompt, source_text) and the
// steering layer; an entry without format_version is version 1 and gets their defaults.
constexpr int kEntryFormatVersion = 2;

}  // namespace

const AnalysisRun& runOf(const AnalysisOutputPtr& output) {
  return output->run;
}

json interventionsToJson(const std::vector<InterventionEntry>& entries) {
  json out = json::array();
  for (const InterventionEntry& e : entries) {
    const bool atLast = e.hasSource();
    // Where the intervention acts: the head's hook_z, or (steering into another layer) that layer's
    // residual stream, on no head axis.
    const bool intoResidual = e.kind == InterventionKind::Steer && e.layer >= 0;
    out.push_back({{"format_version", kEntryFormatVersion},
                   {"site", intoResidual ? residPre(e.layer).name() : attnZ(e.head.layer).name()},
                   {"heads", intoResidual ? json::array() : json::array({e.head.head})},
                   {"positions", !e.positions.empty() ? json(e.positions)
                                 : atLast             ? json::array({-1})
                                                      : json::array()},
                   {"custom_positions", !e.positions.empty()},
                   {"rows", json::array()},
                   {"op", opOfKind(e.kind)},
                   {"scale", e.kind == InterventionKind::Steer ? e.scale : 1.0},
                   {"kind", kindKey(e.kind)},
                   {"layer", e.head.layer},
                   {"head", e.head.head},
                   {"enabled", e.enabled},
                   {"source", sourceKey(e.source)},
                   {"source_prompt", e.sourcePrompt},
                   {"source_text", e.sourceText.toStdString()},
                   {"steer_layer", e.layer}});
  }
  return out;
}

std::vector<InterventionEntry> interventionsFromJson(const json& j, const std::string& where) {
  std::vector<InterventionEntry> out;
  if (!j.is_array()) return out;
  JsonNode(j, where, "interventions").forEachElement([&](size_t, const JsonNode& e) {
    if (!e.isObject() || !e.has("kind")) return;  // entries of other tools
    const int version = static_cast<int>(e.optInteger("format_version", 1, 1, 1 << 20));
    if (version > kEntryFormatVersion)
      fail(e.where(), ": intervention format ", version,
           " was written by a newer HeadScope (this build reads up to ", kEntryFormatVersion, ")");
    InterventionEntry x;
    x.kind = withContext(e.where(), [&] { return parseInterventionKind(e.at("kind").string()); });
    x.head = {e.at("layer").intIn(0, 1 << 20), e.at("head").intIn(0, 1 << 20)};
    x.enabled = e.optBool("enabled", true);
    if (x.kind == InterventionKind::Steer && e.has("scale")) x.scale = e.at("scale").finiteNumber();
    if (e.optBool("custom_positions", false))
      e.at("positions").forEachElement([&](size_t, const JsonNode& p) {
        x.positions.push_back(p.intIn(-(1 << 20), 1 << 20));
      });
    x.source = withContext(e.where(), [&] { return parseVectorSource(e.optString("source", "clean_mean")); });
    x.sourcePrompt = static_cast<int>(e.optInteger("source_prompt", 0, 0, 1 << 20));
    x.sourceText = QString::fromStdString(e.optString("source_text", ""));
    x.layer = static_cast<int>(e.optInteger("steer_layer", -1, -1, 1 << 20));
    out.push_back(x);
  });
  return out;
}

void saveGuiSession(const QString& path, const GuiSessionState& s) {
  Session session;
  session.model = s.model;
  session.tokenizer = s.tokenizer;
  session.task = s.task;
  for (const AnalysisOutputPtr& o : s.outputs) {
    session.runs.push_back(o->run);
    for (const auto& [name, t] : o->tensors)
      session.tensors[name] = t;
  }
  session.methods = methodRecords(session.runs);
  json heads = json::array();
  for (const HeadRef& h : s.selectedHeads)
    heads.push_back({h.layer, h.head});
  session.selections = {{"heads", heads}};
  session.interventions = interventionsToJson(s.interventions);
  session.view_state = s.viewState;
  saveSession(path.toStdString(), session);
}

GuiSessionState loadGuiSession(const QString& path) {
  const std::string where = path.toStdString();
  Session session = loadSession(where);
  GuiSessionState s;
  {
    s.model = session.model;
    s.tokenizer = session.tokenizer;
    s.task = session.task;
    for (const AnalysisRun& run : session.runs) {
      auto o = std::make_shared<AnalysisOutput>();
      o->run = run;
      for (const std::string& name : run.tensors)
        o->tensors[name] = session.tensors.at(name);
      s.outputs.push_back(o);
    }
    const JsonNode selections(session.selections, where, "selections");
    if (selections.isObject() && selections.has("heads"))
      selections.at("heads").forEachElement([&](size_t, const JsonNode& h) {
        s.selectedHeads.push_back({h.at(size_t{0}).intIn(0, 1 << 20), h.at(size_t{1}).intIn(0, 1 << 20)});
      });
    s.interventions = interventionsFromJson(session.interventions, where);
    s.viewState = session.view_state.is_object() ? session.view_state : json::object();
    // Fields the window reads after switching to the session are type-checked now, while a refusal
    // still changes nothing.
    (void)JsonNode(s.model, where, "model").optString("path", "");
    (void)JsonNode(s.tokenizer, where, "tokenizer").optString("path", "");
  }
  return s;
}

}  // namespace hs::gui
