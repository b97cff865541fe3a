// headscope-cli fv MODEL [task options] [--n-mean 100] [--n-corrupt 25] [--top 10] --out RUN.hscope
// [--json RUN.json]: function vectors (DESIGN 5.3): AIE grid, FV, zero-shot accuracy with the FV per layer.
#include "analysis/function_vectors.h"
#include "cli_common.h"

namespace hs::cli {

void addFvCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec = functionTaskSpec();
  static FvOptions opt;
  static RunOutputArgs outArgs;
  auto* cmd =
      app.add_subcommand("fv", "Function vectors: AIE per head (shuffled labels), FV, accuracy vs layer");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  addPositiveOption(*cmd, "--n-mean", opt.n_mean, "clean ICL prompts averaged into the mean z");
  addPositiveOption(*cmd, "--n-corrupt", opt.n_corrupt, "shuffled-label prompts of the AIE sweep");
  addPositiveOption(*cmd, "--top", opt.top, "heads summed into the function vector");
  addSplitOption(*cmd, "--source-split", opt.source_split, "split of the mean and shuffled prompts' queries");
  addPositiveOption(*cmd, "--batch", opt.batch, "prompts per forward in the evaluations");
  addRunOutputArgs(*cmd, outArgs);
  cmd->callback([] {
    runTaskAnalysis(margs, spec, outArgs, [](const LoadedModel& m, const Tokenizer& tok) {
      return functionVectors(*m.model, tok, spec, opt, cliContext("fv"), m.path);
    });
  });
}

}  // namespace hs::cli
