// headscope-cli train-toy / eval-toy: the embedded toy model's recipe and its per-task accuracies.
#include <filesystem>

#include <iomanip>
#include <sstream>

#include "analysis/head_toolkit.h"
#include "cli_common.h"
#include "tasks/toy/world.h"
#include "train/numeric_kernels.h"
#include "train/toy_eval.h"
#include "train/toy_recipe.h"
#include "util/error.h"

namespace hs::cli {

void addTrainToyCommand(CLI::App& app) {
  static std::string out, resume;
  static int64_t steps = -1;
  static uint64_t seed = 0;
  static bool seedGiven = false;
  static int batch = -1;
  static int64_t stopAfter = -1;
  static int threads = 0;
  static int64_t dHead = 0;
  static int64_t nLayers = 0;
  static int64_t nHeads = 0;
  static double iclFrom = 0;
  static double categoryWeight = -1;  // < 0: not given
  static double iclClsWeight = 0;
  static double fuzzyListWeight = -1;  // < 0: not given
  static int64_t pruneSteps = -1;
  static double pruneL0 = -1, pruneLr = -1, pruneGateLr = -1;
  static std::string mainFrom, categorySep, fuzzyListSep;
  auto* cmd = app.add_subcommand("train-toy", "Train the toy ICL model (resumable; writes an HF folder)");
  cmd->add_option("--out", out, "output folder (HF layout + training.json; checkpoint/ inside is resumable)");
  cmd->add_option("--resume", resume, "continue the run whose output folder this is");
  cmd->add_option("--steps", steps, "optimizer steps (default: the recipe's)")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", seed, "training seed (default: the recipe's)")->each([](const std::string&) {
    seedGiven = true;
  });
  cmd->add_option("--batch", batch, "samples per step (default: the recipe's)")->check(CLI::PositiveNumber);
  cmd->add_option(
         "--stop-after", stopAfter,
         "stop with a checkpoint after this step (the schedule still spans --steps); continue with --resume")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", threads, "torch intra-op threads (default: the recipe's, 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--d-head", dHead, "width of each attention head (default: the recipe's)")
      ->check(CLI::Range(2, 256));
  cmd->add_option("--n-layers", nLayers, "number of layers (default: the recipe's)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--n-heads", nHeads, "attention heads per layer (default: the recipe's)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--icl-from", iclFrom,
                  "fraction of the schedule after which the ICL-weighted curriculum stage runs (default: the "
                  "recipe's)")
      ->check(CLI::Range(0.16, 1.0));
  cmd->add_option(
         "--category-weight", categoryWeight,
         "mixture weight of category-naming episodes (x = digit of its category) in every curriculum "
         "stage; 0 turns them off (default: the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--category-sep", categorySep,
                  "separator of the category-naming episodes: \"=\" or \":\" (the classification episodes' "
                  "separator) (default: the recipe's)")
      ->check(CLI::IsMember({"=", ":"}));
  cmd->add_option("--fuzzy-list-weight", fuzzyListWeight,
                  "mixture weight of category-level copying episodes (a word list, then other words of the "
                  "same categories in the same order) in every curriculum stage; 0 turns them off (default: "
                  "the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--fuzzy-list-sep", fuzzyListSep,
                  "separator between the words of those episodes: \",\" or \":\" (the classification "
                  "episodes' separator) (default: the recipe's)")
      ->check(CLI::IsMember({",", ":"}));
  cmd->add_option("--icl-cls-weight", iclClsWeight,
                  "mixture weight of the classification episodes in the ICL-weighted stage (default: the "
                  "recipe's)")
      ->check(CLI::Range(0.01, 20.0));
  cmd->add_option("--prune-steps", pruneSteps,
                  "steps of the head-pruning stage after the main schedule (L0 gates on every head); 0 = "
                  "none (default: the recipe's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--prune-l0", pruneL0,
                  "head-pruning stage: loss per expected open head (default: the recipe's)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--prune-lr", pruneLr, "head-pruning stage: the weights' peak learning rate")
      ->check(CLI::Range(1e-7, 1.0));
  cmd->add_option("--prune-gate-lr", pruneGateLr, "head-pruning stage: the gates' peak learning rate")
      ->check(CLI::Range(1e-7, 10.0));
  cmd->add_option("--main-from", mainFrom,
                  "take the main schedule's result from this finished folder of the same recipe (its "
                  "training.json must say so) and run only the head-pruning stage");
  // --help shows the recipe's own values (the variables hold "not given" markers).
  {
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
  cmd->callback([] {
    if (out.empty() && resume.empty()) fail("train-toy needs --out DIR (or --resume DIR)");
    if (!out.empty() && !resume.empty() && out != resume) fail("--out and --resume name different folders");
    const std::string dir = out.empty() ? resume : out;
    if (!resume.empty() && !std::filesystem::exists(dir + "/checkpoint/trainer_state.json"))
      fail("--resume ", dir, ": no checkpoint/trainer_state.json there");
    ToyRecipe recipe = defaultToyRecipe();
    // A resumed run continues with the settings it started with, unless overridden below.
    if (!resume.empty()) recipe = resumedRecipe(dir, recipe);
    if (dHead > 0) withContext("--d-head", [&] { setHeadWidth(recipe, dHead); });
    if (nLayers > 0) setLayerCount(recipe, nLayers);
    if (nHeads > 0) setHeadCount(recipe, nHeads);
    if (iclFrom > 0) recipe.curriculum.icl_from = iclFrom;
    if (categoryWeight >= 0) recipe.curriculum.category_weight = categoryWeight;
    if (iclClsWeight > 0) recipe.curriculum.icl_cls_weight = iclClsWeight;
    if (!categorySep.empty()) recipe.curriculum.category_sep = categorySep;
    if (fuzzyListWeight >= 0) recipe.curriculum.fuzzy_list_weight = fuzzyListWeight;
    if (!fuzzyListSep.empty()) recipe.curriculum.fuzzy_list_sep = fuzzyListSep;
    if (steps > 0) recipe.train.steps = steps;
    if (seedGiven) recipe.train.seed = seed;
    if (batch > 0) recipe.batch = batch;
    if (pruneSteps >= 0) recipe.pruning.steps = pruneSteps;
    if (pruneL0 >= 0) recipe.pruning.l0_weight = pruneL0;
    if (pruneLr > 0) recipe.pruning.lr = pruneLr;
    if (pruneGateLr > 0) recipe.pruning.gate_lr = pruneGateLr;
    if (!mainFrom.empty() && recipe.pruning.steps <= 0)
      fail("--main-from ", mainFrom, ": the recipe has no head-pruning stage to run after it");
    recipe.train.stop_after = stopAfter;
    if (threads > 0) recipe.train.threads = threads;
    useThreads(recipe.train.threads);  // before the header reports the kernels
    progress("train-toy: " + recipeJson(recipe)["train"].dump() + " layers " +
             std::to_string(recipe.model.n_layers) + " heads " + std::to_string(recipe.model.n_heads) +
             " head_dim " + std::to_string(recipe.model.d_head) +
             (recipe.pruning.steps > 0 ? " head_pruning " + recipeJson(recipe)["head_pruning"].dump() : "") +
             " numeric kernels " + numericKernels().dump());
    const TrainResult r = trainToy(
        recipe, dir,
        [](const TrainProgress& p) {
          std::ostringstream os;
          os << "step " << p.step << "  loss " << std::fixed << std::setprecision(4) << p.loss << "  lr "
             << std::setprecision(6) << p.lr;
          for (const auto& [k, v] : p.kind_loss)
            os << "  " << k << " " << std::setprecision(3) << v;
          os << "  " << std::setprecision(0) << p.seconds << " s";
          progress(os.str());
        },
        mainFrom);
    printJson({{"out", dir},
               {"steps", r.steps_done},
               {"finished", r.finished},
               {"seconds", r.seconds},
               {"final_loss", r.curve.empty() ? 0.0 : r.curve.back().loss},
               {"first_loss", r.curve.empty() ? 0.0 : r.curve.front().loss},
               {"numeric_kernels", r.numeric_kernels}});
    if (r.numeric_kernels.size() > 1)
      progress("train-toy: warning: the pieces of this run computed with different numeric kernels (" +
               r.numeric_kernels.dump() +
               "), so its weights are not bit for bit those of one uninterrupted " +
               "run; set ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE to the first piece's to avoid that");
  });
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
