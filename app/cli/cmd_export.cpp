// headscope-cli export RUN.hscope --csv DIR [--json DIR] [--long]
//
// Every grid, curve and table of every run of a session as files (docs/architecture.md, "Sessions and
// export"): DIR/<run id>.<result id>.csv (grids wide: "layer,h0,...", one row per layer; see export_csv.h)
// and, with --json, DIR2/<run id>.<result id>.json in the form of results_json.h. Prints
// {"session", "csv": [paths], "json": [paths]} on stdout.
#include <filesystem>
#include <map>

#include "cli_common.h"
#include "results/results_json.h"
#include "session/export_csv.h"
#include "session/output_set.h"
#include "session/session.h"
#include "util/error.h"

namespace hs::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string session, csv, json;
  bool longForm = false;
};

// One JSON file per grid, curve and table, added to `out`; all names are checked for clashes first.
std::vector<std::string> stageJson(OutputSet& out, const Session& s, const std::string& folder) {
  std::vector<std::pair<std::string, nlohmann::json>> files;  // (file name, content)
  std::map<std::string, std::string> owner;                   // file name → "<run>/<result>"
  auto add = [&](const AnalysisRun& run, const std::string& id, nlohmann::json j) {
    const std::string name = fileNameFromId(run.id) + "." + fileNameFromId(id) + ".json";
    const auto [it, inserted] = owner.emplace(name, run.id + "/" + id);
    if (!inserted)
      fail(folder, ": results ", it->second, " and ", run.id, "/", id, " would both be written to ", name);
    files.emplace_back(name, std::move(j));
  };
  for (const AnalysisRun& run : s.runs) {
    for (const HeadGrid& g : run.grids)
      add(run, g.id, g);
    for (const Curve& c : run.curves)
      add(run, c.id, c);
    for (const Table& t : run.tables)
      add(run, t.id, t);
  }
  std::vector<std::string> staged;
  for (const auto& [name, j] : files) {
    const std::string path = (fs::path(folder) / name).string();
    out.addText(path, j.dump(2) + "\n");
    staged.push_back(path);
  }
  return staged;
}

}  // namespace

void addExportCommand(CLI::App& app) {
  static ExportArgs a;
  auto* cmd =
      app.add_subcommand("export", "Write every grid, curve and table of a session as CSV (and JSON)");
  cmd->add_option("session", a.session, "session file (.hscope)")->required();
  cmd->add_option("--csv", a.csv, "folder for the CSV files (created if missing)")->required();
  cmd->add_option("--json", a.json, "also write JSON files into this folder")->default_str("none");
  cmd->add_flag("--long", a.longForm, "grids also in long form (layer,head,value) as .long.csv");
  cmd->callback([] {
    const Session s = loadSession(a.session);  // errors name the file
    CsvExportOptions o;
    o.long_form = a.longForm;
    // CSV and JSON files as one transaction: a failure leaves neither export behind.
    OutputSet files(/*createFolders=*/true);
    nlohmann::json out = {{"session", a.session}, {"runs", s.runs.size()}};
    out["csv"] = stageSessionExport(files, s, a.csv, o);
    out["json"] = a.json.empty() ? std::vector<std::string>{} : stageJson(files, s, a.json);
    files.commit();
    printJson(out);
  });
}

}  // namespace hs::cli
