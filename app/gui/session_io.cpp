#include "session_io.h"

#include "analysis/analysis_output.h"
#include "analysis/registry.h"
#include "model/hooks.h"
#include "session/session.h"
#include "util/error.h"

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

}  // namespace

const AnalysisRun& runOf(const AnalysisOutputPtr& output) {
  return output->run;
}

json interventionsToJson(const std::vector<InterventionEntry>& entries) {
  json out = json::array();
  for (const InterventionEntry& e : entries) {
    const bool atLast = e.kind == InterventionKind::PatchClean || e.kind == InterventionKind::Steer;
    out.push_back({{"site", attnZ(e.head.layer).name()},
                   {"heads", {e.head.head}},
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
                   {"enabled", e.enabled}});
  }
  return out;
}

std::vector<InterventionEntry> interventionsFromJson(const json& j) {
  std::vector<InterventionEntry> out;
  if (!j.is_array()) return out;
  for (const json& e : j) {
    if (!e.is_object() || !e.contains("kind")) continue;
    InterventionEntry x;
    x.kind = parseInterventionKind(e.at("kind").get<std::string>());
    x.head = {e.at("layer").get<int>(), e.at("head").get<int>()};
    x.enabled = e.value("enabled", true);
    if (x.kind == InterventionKind::Steer) x.scale = e.value("scale", 1.0);
    if (e.value("custom_positions", false)) x.positions = e.at("positions").get<std::vector<int>>();
    out.push_back(x);
  }
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
  try {
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
    if (session.selections.is_object() && session.selections.contains("heads"))
      for (const json& h : session.selections.at("heads"))
        s.selectedHeads.push_back({h.at(0).get<int>(), h.at(1).get<int>()});
    s.interventions = interventionsFromJson(session.interventions);
    s.viewState = session.view_state.is_object() ? session.view_state : json::object();
  } catch (const json::exception& e) {
    fail(where, ": the session's selections or interventions are malformed: ", e.what());
  }
  return s;
}

}  // namespace hs::gui
