// headscope-cli site MODEL [task options] [--steps 400] [--lr 0.2] [--n-embed 50] --out RUN.hscope
// [--json RUN.json]: SITE soft head selection (DESIGN 5.4): α grid, loss curve, accuracy table.
#include "analysis/site.h"
#include "cli_common.h"

namespace hs::cli {

void addSiteCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec = functionTaskSpec();
  static SiteOptions opt;
  static RunOutputArgs outArgs;
  auto* cmd = app.add_subcommand("site", "SITE: learn per-head weights α that inject the task embedding");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  addPositiveOption(*cmd, "--steps", opt.steps, "Adam steps");
  addPositiveOption(*cmd, "--lr", opt.lr, "Adam learning rate");
  addPositiveOption(*cmd, "--n-embed", opt.n_embed, "ICL prompts averaged into the task embedding t");
  addPositiveOption(*cmd, "--batch", opt.batch, "zero-shot prompts per step");
  addPositiveOption(*cmd, "--n-train", opt.n_train, "distinct zero-shot training prompts");
  addPositiveOption(*cmd, "--max-new", opt.max_new_tokens, "greedy tokens generated at most");
  addSplitOption(*cmd, "--train-split", opt.train_split, "split of the embedding and training queries");
  addRunOutputArgs(*cmd, outArgs);
  cmd->callback([] {
    runTaskAnalysis(margs, spec, outArgs, [](const LoadedModel& m, const Tokenizer& tok) {
      return site(*m.model, tok, spec, opt, cliContext("site"), m.path);
    });
  });
}

}  // namespace hs::cli
