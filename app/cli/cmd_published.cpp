// headscope-cli import-published FILE|FOLDER... --out X.hscope [--session IN.hscope] [--json X.json]
//
// The dual-route study's published per-head scores (../shared/data/published/dual_route/, or the converted
// copies in share/headscope/published) as runs of the method "published" (core/analysis/methods/published.h),
// one per model and training checkpoint, in a session the GUI opens like any other. With --session the runs
// are added to a copy of that session (e.g. a run of your own on the same model), so the comparison is one
// file. Prints {"out", "runs": [{"run", "label", "grids"}]} on stdout.
#include <fstream>

#include "analysis/methods/published.h"
#include "cli_common.h"
#include "results/results_json.h"
#include "session/session.h"
#include "util/error.h"

namespace hs::cli {
namespace {

struct ImportArgs {
  std::vector<std::string> files;
  std::string out, session, json;
};

}  // namespace

void addImportPublishedCommand(CLI::App& app) {
  static ImportArgs a;
  auto* cmd = app.add_subcommand("import-published",
                                 "Read the dual-route study's published per-head scores into a session");
  cmd->add_option("files", a.files,
                  "published result files or folders (causal_scores, attention_scores, head_orderings, "
                  "language_patching JSON)")
      ->required();
  cmd->add_option("--out", a.out, "the session to write (.hscope)")->required();
  cmd->add_option("--session", a.session, "add the runs to a copy of this session")->default_str("none");
  cmd->add_option("--json", a.json, "also write the imported runs as a JSON list")->default_str("none");
  cmd->footer(
      "One run per model and training checkpoint (method \"published\"): grids dual_route.concept_copying, "
      "dual_route.token_copying, dual_route.next_token_matching, dual_route.last_token_matching (and the two "
      "other attention scores), dual_route.ordering.<name>; tables of the orderings and of language "
      "patching. Source: sfeucht/dual-route-induction (MIT).");
  cmd->callback([] {
    Session s;
    if (!a.session.empty()) s = loadSession(a.session);
    std::vector<std::string> taken;
    for (const AnalysisRun& r : s.runs)
      taken.push_back(r.id);
    const std::vector<AnalysisRun> runs = importPublished(a.files, taken);
    if (a.session.empty()) s.model = {{"published", true}};
    s.runs.insert(s.runs.end(), runs.begin(), runs.end());
    s.methods = methodRecords(s.runs);
    saveSession(a.out, s);
    if (!a.json.empty()) {
      std::ofstream f(a.json);
      if (!f) fail("cannot write ", a.json);
      f << nlohmann::json(runs).dump(1) << "\n";
      if (!f) fail("writing ", a.json, " failed");
    }
    nlohmann::json list = nlohmann::json::array();
    for (const AnalysisRun& r : runs) {
      nlohmann::json grids = nlohmann::json::array();
      for (const HeadGrid& g : r.grids)
        grids.push_back(g.id);
      list.push_back({{"run", r.id}, {"label", runLabel(r)}, {"grids", grids}});
    }
    printJson({{"out", a.out}, {"runs", list}});
  });
}

}  // namespace hs::cli
