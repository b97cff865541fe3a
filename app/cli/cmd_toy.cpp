// headscope-cli train-toy / eval-toy: the embedded toy model's recipe and its per-task accuracies.
#include <filesystem>

#include <iomanip>
#include <sstream>

#include "analysis/toolkit/head_toolkit.h"
#include "cli_common.h"
#include "tasks/toy/world.h"
#include "train/numeric_kernels.h"
#include "train/toy_eval.h"
#include "train/toy_recipe.h"
#include "util/error.h"

namespace hs::cli {

namespace {

// train-toy's flags; the numeric ones hold "not given" markers (<= 0 or < 0) until set.
struct TrainToyArgs {
  std::string out, resume;
  int64_t steps = -1;
  uint64_t seed = 0;
  bool seedGiven = false;
  int batch = -1;
  int64_t stopAfter = -1;
  int threads = 0;
  int64_t dHead = 0;
  int64_t nLayers = 0;
  int64_t nHeads = 0;
  double iclFrom = 0;
  double categoryWeight = -1;  // < 0: not given
  double iclClsWeight = 0;
  double fuzzyListWeight = -1;  // < 0: not given
  int64_t pruneSteps = -1;
  double pruneL0 = -1, pruneLr = -1, pruneGateLr = -1;
  std::string mainFrom, categorySep, fuzzyListSep;
};

// The run's size, schedule and seed.
void addScheduleOptions(CLI::App* cmd, TrainToyArgs& a) {
  cmd->add_option("--out", a.out,
                  "output folder (HF layout + training.json; checkpoint/ inside is resumable)");
  cmd->add_option("--resume", a.resume, "continue the run whose output folder this is");
  cmd->add_option("--steps", a.steps, "optimizer steps (default: the recipe's)")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a.seed, "training seed (default: the recipe's)")->each([&a](const std::string&) {
    a.seedGiven = true;
  });
  cmd->add_option("--batch", a.batch, "samples per step (default: the recipe's)")->check(CLI::PositiveNumber);
  cmd->add_option(
         "--stop-after", a.stopAfter,
         "stop with a checkpoint after this step (the schedule still spans --steps); continue with --resume")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a.threads, "torch intra-op threads (default: the recipe's, 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--d-head", a.dHead, "width of each attention head (default: the recipe's)")
      ->check(CLI::Range(2, 256));
  cmd->add_option("--n-layers", a.nLayers, "number of layers (default: the recipe's)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--n-heads", a.nHeads, "attention heads per layer (default: the recipe's)")
      ->check(CLI::Range(1, 64));
}

// The curriculum's stages and mixture.
void addCurriculumOptions(CLI::App* cmd, TrainToyArgs& a) {
  cmd->add_option("--icl-from", a.iclFrom,
                  "fraction of the schedule after which the ICL-weighted curriculum stage runs (default: the "
                  "recipe's)")
      ->check(CLI::Range(0.16, 1.0));
  cmd->add_option(
         "--category-weight", a.categoryWeight,
         "mixture weight of category-naming episodes (x = digit of its category) in every curriculum "
         "stage; 0 turns them off (default: the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--category-sep", a.categorySep,
                  "separator of the category-naming episodes: \"=\" or \":\" (the classification episodes' "
                  "separator) (default: the recipe's)")
      ->check(CLI::IsMember({"=", ":"}));
  cmd->add_option("--fuzzy-list-weight", a.fuzzyListWeight,
                  "mixture weight of category-level copying episodes (a word list, then other words of the "
                  "same categories in the same order) in every curriculum stage; 0 turns them off (default: "
                  "the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--fuzzy-list-sep", a.fuzzyListSep,
                  "separator between the words of those episodes: \",\" or \":\" (the classification "
                  "episodes' separator) (default: the recipe's)")
      ->check(CLI::IsMember({",", ":"}));
  cmd->add_option("--icl-cls-weight", a.iclClsWeight,
                  "mixture weight of the classification episodes in the ICL-weighted stage (default: the "
                  "recipe's)")
      ->check(CLI::Range(0.01, 20.0));
}

// The head-pruning stage after the main schedule.
void addPruningOptions(CLI::App* cmd, TrainToyArgs& a) {
  cmd->add_option("--prune-steps", a.pruneSteps,
                  "steps of the head-pruning stage after the main schedule (L0 gates on every head); 0 = "
                  "none (default: the recipe's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--prune-l0", a.pruneL0,
                  "head-pruning stage: loss per expected open head (default: the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--prune-lr", a.pruneLr, "head-pruning stage: the weights' peak learning rate")
      ->check(CLI::Range(1e-7, 1.0));
  cmd->add_option("--prune-gate-lr", a.pruneGateLr, "head-pruning stage: the gates' peak learning rate")
      ->check(CLI::Range(1e-7, 10.0));
  cmd->add_option("--main-from", a.mainFrom,
                  "take the main schedule's result from this finished folder of the same recipe (its "
                  "training.json must say so) and run only the head-pruning stage");
}

// --help shows the recipe's own values (the variables hold "not given" markers).
void showRecipeDefaults(CLI::App* cmd) {
  const ToyRecipe r = defaultToyRecipe();
  auto show = [&](const char* flag, const auto& value) {
    std::ostringstream os;
    os << value;
    cmd->get_option(flag)->default_str(os.str());
  };
  show("--out", "none");
  show("--resume", "none");
  show("--steps", r.train.steps);
  show("--seed", r.train.seed);
  show("--batch", r.batch);
  show("--stop-after", "never");
  show("--threads", r.train.threads);
  show("--d-head", r.model.d_head);
  show("--n-layers", r.model.n_layers);
  show("--n-heads", r.model.n_heads);
  show("--icl-from", r.curriculum.icl_from);
  show("--category-weight", r.curriculum.category_weight);
  show("--category-sep", r.curriculum.category_sep);
  show("--fuzzy-list-weight", r.curriculum.fuzzy_list_weight);
  show("--fuzzy-list-sep", r.curriculum.fuzzy_list_sep);
  show("--icl-cls-weight", r.curriculum.icl_cls_weight);
  show("--prune-steps", r.pruning.steps);
  show("--prune-l0", r.pruning.l0_weight);
  show("--prune-lr", r.pruning.lr);
  show("--prune-gate-lr", r.pruning.gate_lr);
  show("--main-from", "none");
}

// The recipe of the run in `dir`: the default, or the resumed run's, with the given flags applied.
ToyRecipe recipeFromArgs(const TrainToyArgs& a, const std::string& dir) {
  ToyRecipe recipe = defaultToyRecipe();
  // A resumed run continues with the settings it started with, unless overridden below.
  if (!a.resume.empty()) recipe = resumedRecipe(dir, recipe);
  if (a.dHead > 0) withContext("--d-head", [&] { setHeadWidth(recipe, a.dHead); });
  if (a.nLayers > 0) setLayerCount(recipe, a.nLayers);
  if (a.nHeads > 0) setHeadCount(recipe, a.nHeads);
  if (a.iclFrom > 0) recipe.curriculum.icl_from = a.iclFrom;
  if (a.categoryWeight >= 0) recipe.curriculum.category_weight = a.categoryWeight;
  if (a.iclClsWeight > 0) recipe.curriculum.icl_cls_weight = a.iclClsWeight;
  if (!a.categorySep.empty()) recipe.curriculum.category_sep = a.categorySep;
  if (a.fuzzyListWeight >= 0) recipe.curriculum.fuzzy_list_weight = a.fuzzyListWeight;
  if (!a.fuzzyListSep.empty()) recipe.curriculum.fuzzy_list_sep = a.fuzzyListSep;
  if (a.steps > 0) recipe.train.steps = a.steps;
  if (a.seedGiven) recipe.train.seed = a.seed;
  if (a.batch > 0) recipe.batch = a.batch;
  if (a.pruneSteps >= 0) recipe.pruning.steps = a.pruneSteps;
  if (a.pruneL0 >= 0) recipe.pruning.l0_weight = a.pruneL0;
  if (a.pruneLr > 0) recipe.pruning.lr = a.pruneLr;
  if (a.pruneGateLr > 0) recipe.pruning.gate_lr = a.pruneGateLr;
  if (!a.mainFrom.empty() && recipe.pruning.steps <= 0)
    fail("--main-from ", a.mainFrom, ": the recipe has no head-pruning stage to run after it");
  recipe.train.stop_after = a.stopAfter;
  if (a.threads > 0) recipe.train.threads = a.threads;
  return recipe;
}

void printTrainProgress(const TrainProgress& p) {
  std::ostringstream os;
  os << "step " << p.step << "  loss " << std::fixed << std::setprecision(4) << p.loss << "  lr "
     << std::setprecision(6) << p.lr;
  for (const auto& [k, v] : p.kind_loss)
    os << "  " << k << " " << std::setprecision(3) << v;
  os << "  " << std::setprecision(0) << p.seconds << " s";
  progress(os.str());
}

void runTrainToy(const TrainToyArgs& a) {
  if (a.out.empty() && a.resume.empty()) fail("train-toy needs --out DIR (or --resume DIR)");
  if (!a.out.empty() && !a.resume.empty() && a.out != a.resume)
    fail("--out and --resume name different folders");
  const std::string dir = a.out.empty() ? a.resume : a.out;
  if (!a.resume.empty() && !std::filesystem::exists(dir + "/checkpoint/trainer_state.json"))
    fail("--resume ", dir, ": no checkpoint/trainer_state.json there");
  const ToyRecipe recipe = recipeFromArgs(a, dir);
  useThreads(recipe.train.threads);  // before the header reports the kernels
  progress("train-toy: " + recipeJson(recipe)["train"].dump() + " layers " +
           std::to_string(recipe.model.n_layers) + " heads " + std::to_string(recipe.model.n_heads) +
           " head_dim " + std::to_string(recipe.model.d_head) +
           (recipe.pruning.steps > 0 ? " head_pruning " + recipeJson(recipe)["head_pruning"].dump() : "") +
           " numeric kernels " + numericKernels().dump());
  const TrainResult r = trainToy(recipe, dir, printTrainProgress, a.mainFrom);
  printJson({{"out", dir},
             {"steps", r.steps_done},
             {"finished", r.finished},
             {"seconds", r.seconds},
             {"final_loss", r.curve.empty() ? 0.0 : r.curve.back().loss},
             {"first_loss", r.curve.empty() ? 0.0 : r.curve.front().loss},
             {"numeric_kernels", r.numeric_kernels}});
  if (r.numeric_kernels.size() > 1)
    progress("train-toy: warning: the pieces of this run computed with different numeric kernels (" +
             r.numeric_kernels.dump() + "), so its weights are not bit for bit those of one uninterrupted " +
             "run; set ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE to the first piece's to avoid that");
}

}  // namespace

void addTrainToyCommand(CLI::App& app) {
  static TrainToyArgs args;
  auto* cmd = app.add_subcommand("train-toy", "Train the toy ICL model (resumable; writes an HF folder)");
  addScheduleOptions(cmd, args);
  addCurriculumOptions(cmd, args);
  addPruningOptions(cmd, args);
  showRecipeDefaults(cmd);
  cmd->callback([] { runTrainToy(args); });
}

void addEvalToyCommand(CLI::App& app) {
  static ModelArgs args;
  static int n = 200;
  static uint64_t seed = 1;
  static std::string ablate;
  auto* cmd = app.add_subcommand("eval-toy", "Per-task accuracies of a toy model (JSON)");
  args.model = "toy";
  cmd->add_option("--model", args.model, "toy (the embedded model) or a folder written by train-toy");
  cmd->add_option("--n", n, "prompts per quantity")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", seed, "evaluation seed");
  cmd->add_option("--ablate", ablate, "zero-ablate these heads (hook_z, all positions): LAYER.HEAD,...")
      ->default_str("none");
  cmd->callback([] {
    const LoadedModel m = loadForCli(args);
    const toy::ToyWorld world = toy::ToyWorld::build(defaultToyRecipe().world);
    if (m.config.vocab_size != world.vocabSize())
      fail(m.path, ": vocabulary of ", m.config.vocab_size, " tokens is not the toy world's ",
           world.vocabSize());
    ToyEvalOptions opts;
    opts.n = n;
    opts.seed = seed;
    const std::vector<HeadRef> heads = parseHeadList(ablate);
    checkHeads(*m.model, heads, "--ablate");
    opts.interventions = zeroHeads(heads);
    nlohmann::json j = evalToy(*m.model, world, opts);
    j["model"] = m.path;
    j["ablated"] = ablate;
    printJson(j);
  });
}

}  // namespace hs::cli
