// headscope-cli tsla: task recognition and task learning heads (DESIGN 5.1), written as a session (+ JSON).
#include "analysis/tsla.h"
#include "cli_common.h"

namespace hs::cli {

void addTslaCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec;
  static TslaOptions opts;
  static RunOutputArgs out;
  auto* cmd = app.add_subcommand("tsla",
                                 "TR / TL head grids, ablation (TR ratio, accuracy), steering, per-layer "
                                 "geometry, overlap with induction");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  cmd->add_option("--top-percent", opts.top_percent,
                  "share of heads selected by TR, TL, induction and at random")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--ablation", opts.ablation, "how the selected heads are ablated")
      ->capture_default_str()
      ->check(CLI::IsMember({"zero", "mean", "both"}));
  cmd->add_option("--random-seed", opts.random_seed,
                  "seed of the random head set and the induction sequences")
      ->capture_default_str();
  cmd->add_option("--steer-layer", opts.steer_layer,
                  "steer the residual entering this layer (-1: n_layers / 2)")
      ->capture_default_str();
  cmd->add_option("--steer-scale", opts.steer_scale, "scale of the steering vectors")->capture_default_str();
  addPositiveOption(*cmd, "--batch", opts.batch, "prompts per forward");
  addRunOutputArgs(*cmd, out);
  cmd->callback([] {
    runIclTaskAnalysis(margs, spec, out, [](const LoadedModel& m, const Tokenizer& tok, const IclTask& task) {
      opts.model_path = m.path;
      return runTsla(*m.model, tok, task, opts, cliContext("tsla"));
    });
  });
}

}  // namespace hs::cli
