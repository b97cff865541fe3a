// headscope-cli ltv MODEL [task options] [--layer L] [--steps 1000] [--lr 5e-3] [--layers all|L1,L2]
// --out RUN.hscope [--json RUN.json]: learned task vectors vs vanilla TV / additive TV / FV per layer, and
// the mechanism views at the chosen layer (DESIGN 5.5).
#include <limits>

#include "analysis/ltv.h"
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {

namespace {

// "all" → {} (every layer), else "L1,L2,..." → the layers.
std::vector<int> parseLayers(const std::string& s) {
  if (s == "all" || s.empty()) return {};
  std::vector<int> layers;
  for (const std::string& item : splitList(s)) {
    const auto v = parseInteger(item);
    if (!v || *v < 0 || *v > std::numeric_limits<int>::max())
      fail("--layers: '", item, "' is not a layer index (expected all or L1,L2,...)");
    layers.push_back(static_cast<int>(*v));
  }
  return layers;
}

}  // namespace

void addLtvCommand(CLI::App& app) {
  static ModelArgs margs;
  static TaskSpec spec = functionTaskSpec();  // its shots feed the ICL-derived baselines
  static LtvOptions opt;
  static std::string layers = "all";
  static RunOutputArgs outArgs;
  auto* cmd =
      app.add_subcommand("ltv", "LTV: learned task vectors vs extracted TV / FV, and their mechanism");
  addModelArgs(*cmd, margs);
  addTaskArgs(*cmd, spec);
  cmd->add_option("--layer", opt.layer, "layer of the summary and the mechanism views (-1 = L/2)")
      ->capture_default_str();
  cmd->add_option("--layers", layers, "layers of the accuracy and rotation curves: all or L1,L2,...")
      ->capture_default_str();
  addPositiveOption(*cmd, "--steps", opt.train.steps, "AdamW steps at most per layer");
  addPositiveOption(*cmd, "--lr", opt.train.lr, "peak learning rate (linear decay)");
  addPositiveOption(*cmd, "--batch", opt.train.batch, "zero-shot prompts per step");
  addPositiveOption(*cmd, "--patience", opt.train.patience,
                    "validations without improvement before stopping");
  addPositiveOption(*cmd, "--train-prompts", opt.train_prompts, "zero-shot training prompts (train split)");
  addPositiveOption(*cmd, "--icl-prompts", opt.icl_prompts, "ICL prompts averaged into h_ICL and the FV");
  addPositiveOption(*cmd, "--fv-prompts", opt.fv_prompts, "shuffled-label prompts for the FV heads' AIE");
  addPositiveOption(*cmd, "--fv-heads", opt.fv_heads, "heads summed into the FV");
  cmd->add_option("--ov-inject", opt.ov_inject, "where θ_OV is added: final (last layer's output) or layer")
      ->capture_default_str()
      ->check(CLI::IsMember({"final", "layer"}));
  cmd->add_flag("--ov-include-layer", opt.ov_include_layer,
                "OV reconstruction over l' >= l (default l' > l)");
  cmd->add_option("--key-fraction", opt.key_head_fraction, "share of heads ablated as key heads")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--mean-ablation", opt.ablate_mean, "mean- instead of zero-ablate key / random heads");
  cmd->add_option("--prop-samples", opt.prop_samples,
                  "perturbations for the propagation fit (-1 = 2·d_model)")
      ->capture_default_str();
  addPositiveOption(*cmd, "--prop-lambda", opt.prop_lambda, "perturbation length relative to ‖θ‖");
  addRunOutputArgs(*cmd, outArgs);
  cmd->callback([] {
    opt.layers = parseLayers(layers);
    runTaskAnalysis(margs, spec, outArgs, [](const LoadedModel& m, const Tokenizer& tok) {
      return runLtv(*m.model, tok, spec, opt, m.path, cliContext("ltv"));
    });
  });
}

}  // namespace hs::cli
