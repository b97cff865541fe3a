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

// Intervention entries in the session's intervention-list form: {"format_version": 2, "site":
// "blocks.L.attn.hook_z" (steering into another layer: "blocks.M.hook_resid_pre"), "heads": [h] ([] for
// the residual), "positions": [] or [-1], "rows": [], "op": "zero"|"mean"|"replace"|"add", "scale": 1,
// "kind": <InterventionEntry::kind>, "layer": L, "head": h, "enabled": bool, "source":
// "clean_mean"|"mean"|"prompt"|"text", "source_prompt": i, "source_text": "...", "steer_layer": -1|M}.
// The undo stack's snapshots use the same form.
nlohmann::json interventionsToJson(const std::vector<InterventionEntry>& entries);
// Reads the entries this GUI wrote; entries without "kind" (written by other tools) are skipped. Entries
// without format_version (version 1) get the defaults of the fields added since: the clean ICL mean, the
// head's own hook_z. A newer entry format is refused, naming the entry.
std::vector<InterventionEntry> interventionsFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace hs::gui
