// headscope-cli induction MODEL [--n N] [--seed S] [--top-k K] [--words FILE] --out RUN.hscope [--json
// RUN.json] Induction scores and the dual route (DESIGN 5.2) as one session run
// (core/analysis/induction_run.h).
#include <c10/core/InferenceMode.h>

#include "analysis/induction_run.h"
#include "cli_common.h"

namespace hs::cli {
namespace {

struct InductionArgs {
  ModelArgs model;
  InductionRunOptions run;
  RunOutputArgs out;
};

}  // namespace

void addInductionCommand(CLI::App& app) {
  static InductionArgs a;
  auto* cmd = app.add_subcommand(
      "induction",
      "Induction heads and the dual route: prev-token / prefix-matching attention, token vs concept copying "
      "(causal), next-/last-token matching, mean-ablation curves, induction ablation, concept patching");
  addModelArgs(*cmd, a.model);
  addPositiveOption(*cmd, "--n", a.run.n, "prompt pairs per dual-route score");
  cmd->add_option("--seed", a.run.seed, "seed of every prompt set")->capture_default_str();
  addPositiveOption(*cmd, "--top-k", a.run.top_k, "heads in the ablation table and concept patching");
  addPositiveOption(*cmd, "--n-eval", a.run.n_eval, "prompts per ablation task");
  cmd->add_option("--filler", a.run.filler_len, "tokens before the separator (filler + entity)")
      ->capture_default_str();
  cmd->add_option(
         "--sep", a.run.sep,
         "separator: 'default' = the toy model's arrow token, none elsewhere; '' = none; else a token")
      ->capture_default_str();
  cmd->add_option("--words", a.run.words_file,
                  "word list (one a line) for the concept parts on models other than the toy model");
  cmd->add_option("--ks", a.run.ks, "k values of the ablation curves")->capture_default_str()->delimiter(',');
  addRunOutputArgs(*cmd, a.out);
  cmd->callback([] {
    checkRunDestinations(a.out);
    const LoadedModel m = loadForCli(a.model);
    InductionRunOptions o = a.run;
    o.model_path = m.path;
    c10::InferenceMode guard;
    const AnalysisOutput out = inductionRun(*m.model, m.tokenizer.get(), o, cliContext("induction"));
    writeRunOutputs(m, a.model, nullptr, out, a.out);
  });
}

}  // namespace hs::cli
