// headscope-cli fv MODEL [task options] [--n-mean 100] [--n-corrupt 25] [--top 10] --out RUN.hscope
// [--json RUN.json]: function vectors (DESIGN 5.3): AIE grid, FV, zero-shot accuracy with the FV per layer.
#include "analysis/function_vectors.h"
#include "cli_common.h"

namespace hs::cli {

void addFvCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec = [] {
    TaskSpec s;
    s.dataset = "toy:antonym_a";  // a function task
    s.shots = 10;
    return s;
  }();
  static FvOptions opt;
  static RunOutputArgs outArgs;
  auto* cmd =
      app.add_subcommand("fv", "Function vectors: AIE per head (shuffled labels), FV, accuracy vs layer");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  cmd->add_option("--n-mean", opt.n_mean, "clean ICL prompts averaged into the mean z")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--n-corrupt", opt.n_corrupt, "shuffled-label prompts of the AIE sweep")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", opt.top, "heads summed into the function vector")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--source-split", opt.source_split, "split of the mean and shuffled prompts' queries")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test"}));
  cmd->add_option("--batch", opt.batch, "prompts per forward in the evaluations")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  addRunOutputArgs(*cmd, outArgs);
  cmd->callback([] {
    const LoadedModel m = loadForCli(margs);
    const AnalysisOutput out =
        functionVectors(*m.model, requireTokenizer(m), spec, opt, cliContext("fv"), m.path);
    writeRunOutputs(m, margs, &spec, out, outArgs);
  });
}

}  // namespace hs::cli
