#pragma once
// The GUI's side of .hscope sessions (core/session/session.h): what the window holds (task, runs with
// their tensors, selection, interventions, view state) to and from a Session. Saving is atomic
// (saveSession); loading reads everything first and throws on any problem, so the caller replaces its
// state only when the whole file was good.
#include <QString>

#include <nlohmann/json.hpp>

#include <vector>

#include "gui_types.h"

namespace hs::gui {

struct GuiSessionState {
  nlohmann::json model = nlohmann::json::object();      // {"path": ...} (+ identity when known)
  nlohmann::json tokenizer = nlohmann::json::object();  // {"path": ...}
  nlohmann::json task = nlohmann::json::object();       // TaskSpec JSON
  std::vector<AnalysisOutputPtr> outputs;               // the runs, in session order
  std::vector<HeadRef> selectedHeads;
  std::vector<InterventionEntry> interventions;
  nlohmann::json viewState = nlohmann::json::object();  // tab, metric, colour range, compare metric, k
};

// Throws hs::Error naming the file.
void saveGuiSession(const QString& path, const GuiSessionState& s);
GuiSessionState loadGuiSession(const QString& path);

// Intervention entries in the session's intervention-list form: {"site": "blocks.L.attn.hook_z",
// "heads": [h], "positions": [] or [-1], "rows": [], "op": "zero"|"mean"|"replace"|"add", "scale": 1,
// "kind": <InterventionEntry::kind>, "layer": L, "head": h, "enabled": bool}.
nlohmann::json interventionsToJson(const std::vector<InterventionEntry>& entries);
// Reads the entries this GUI wrote; entries without "kind" (written by other tools) are skipped.
std::vector<InterventionEntry> interventionsFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace hs::gui
