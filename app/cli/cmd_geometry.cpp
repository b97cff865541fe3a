// headscope-cli geometry: per-layer alignment / logit difference of the last-position hidden state with
// the label subspace, and its 2-D projection at one layer (DESIGN 5.1, 7), written as a session (+ JSON).
#include "analysis/geometry.h"
#include "cli_common.h"

namespace hs::cli {

void addGeometryCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec;
  static GeometryOptions opts;
  static RunOutputArgs out;
  auto* cmd = app.add_subcommand(
      "geometry", "Label-subspace alignment and logit difference per layer; 2-D projection at a layer");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  cmd->add_option("--layer", opts.layer, "layer of the 2-D projection (-1: the layer of maximal alignment)")
      ->capture_default_str();
  addRunOutputArgs(*cmd, out);
  cmd->callback([] {
    runIclTaskAnalysis(margs, spec, out, [](const LoadedModel& m, const Tokenizer& tok, const IclTask& task) {
      opts.model_path = m.path;
      return runGeometry(*m.model, tok, task, opts, cliContext("geometry"));
    });
  });
}

}  // namespace hs::cli
