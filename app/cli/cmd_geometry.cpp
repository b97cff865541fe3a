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
    const LoadedModel m = loadForCli(margs);
    const Tokenizer& tok = requireTokenizer(m);
    const IclTask task = buildIclTask(tok, spec);
    opts.model_path = m.path;
    const AnalysisOutput o = runGeometry(*m.model, tok, task, opts, cliContext("geometry"));
    writeRunOutputs(m, margs, &task.spec, o, out);
  });
}

}  // namespace hs::cli
