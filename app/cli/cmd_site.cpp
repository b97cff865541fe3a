// headscope-cli site MODEL [task options] [--steps 400] [--lr 0.2] [--n-embed 50] --out RUN.hscope
// [--json RUN.json]: SITE soft head selection (DESIGN 5.4): α grid, loss curve, accuracy table.
#include "analysis/site.h"
#include "cli_common.h"

namespace hs::cli {

void addSiteCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec = [] {
    TaskSpec s;
    s.dataset = "toy:antonym_a";  // a function task
    s.shots = 10;
    return s;
  }();
  static SiteOptions opt;
  static RunOutputArgs outArgs;
  auto* cmd = app.add_subcommand("site", "SITE: learn per-head weights α that inject the task embedding");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  cmd->add_option("--steps", opt.steps, "Adam steps")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lr", opt.lr, "Adam learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--n-embed", opt.n_embed, "ICL prompts averaged into the task embedding t")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", opt.batch, "zero-shot prompts per step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--n-train", opt.n_train, "distinct zero-shot training prompts")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-new", opt.max_new_tokens, "greedy tokens generated at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--train-split", opt.train_split, "split of the embedding and training queries")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test"}));
  addRunOutputArgs(*cmd, outArgs);
  cmd->callback([] {
    const LoadedModel m = loadForCli(margs);
    const AnalysisOutput out = site(*m.model, requireTokenizer(m), spec, opt, cliContext("site"), m.path);
    writeRunOutputs(m, margs, &spec, out, outArgs);
  });
}

}  // namespace hs::cli
