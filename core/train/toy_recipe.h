#pragma once
// The recipe of the embedded toy model: its synthetic world, its architecture, its training schedule.
// `headscope-cli train-toy` runs it; the shipped weights in resources/models/toy-icl/ came from it, and
// training.json beside them records the recipe, seed, steps, losses and time.
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "model/config.h"
#include "tasks/toy/curriculum.h"
#include "tasks/toy/world.h"
#include "train/trainer.h"

namespace hs {

// The head-pruning stage after the main schedule (head_gates.h): an L0 gate on every head, trained together
// with the model on the main mixture (samples past the main schedule's), then folded into the weights.
// Induction and task learning spread over many redundant heads in the main schedule; the L0 penalty makes
// the model keep the heads that carry each ability and close the rest. steps 0 = no such stage.
struct HeadPruningOptions {
  int64_t steps = 0;
  double l0_weight = 0.01;  // λ: loss per expected open head
  double lr = 5e-4;         // the weights' peak learning rate (linear warm-up, cosine decay to 10 %)
  double gate_lr = 0.05;    // the gates' log α peak learning rate (same schedule)
  double gate_init = 3.0;   // log α at the start: every gate open (z = 1 for 80 % of the draws)
  int64_t warmup = 50;
};

struct ToyRecipe {
  toy::ToyWorldConfig world;
  ModelConfig model;
  TrainConfig train;
  int batch = 32;                     // samples per step
  int seq_len = 128;                  // tokens per sample (= the model's context)
  toy::CurriculumOptions curriculum;  // icl stage start, category naming, icl-stage classification weight
  HeadPruningOptions pruning;         // the stage after the main schedule
};

// The shipped model's recipe: Llama architecture, 4 layers × 8 heads, d_model 128, RoPE.
ToyRecipe defaultToyRecipe();

// The format of the recipe JSON that recipeJson writes (recipe.json, training.json's "recipe", the
// "headscope.toy_recipe" metadata of model.safetensors). Version 1 records every setting of the curriculum.
// Version 0 (no "format_version") left out the settings a run had off or that did not exist yet; a missing
// setting means the value those runs used.
constexpr int kToyRecipeFormatVersion = 1;

// The recipe as training.json records it (format kToyRecipeFormatVersion); "head_pruning" is present only
// when the recipe has that stage.
nlohmann::json recipeJson(const ToyRecipe& r);

// A saved recipe in the current format. Version 0 → 1: the missing curriculum settings get the values
// version-0 runs used (icl_from 0.7, category_weight 0, icl_cls_weight 3, category_sep "=", fuzzy_list_weight
// 0, fuzzy_list_sep ","), and the informational "curriculum" entry (a source-file name) is dropped. A current
// recipe is returned as it is. Fails (hs::Error; callers add the file) on a recipe without a "train" object,
// a setting of the wrong type, or a format_version that is not 0 or 1.
nlohmann::json migrateRecipeJson(nlohmann::json recipe);

// Sets the head width (and the RoPE width with it); fails unless it is even and positive.
void setHeadWidth(ToyRecipe& r, int64_t d_head);
// Sets the number of layers, and the number of attention heads per layer (query and key/value heads
// alike); each fails unless the count is positive.
void setLayerCount(ToyRecipe& r, int64_t n_layers);
void setHeadCount(ToyRecipe& r, int64_t n_heads);

// The recipe a run in outDir was started with (outDir/checkpoint/recipe.json), migrated to the current
// format, or nullopt when there is none. Fails naming the file when it is unreadable or malformed.
std::optional<nlohmann::json> savedRecipeJson(const std::string& outDir);

// `base` with the saved steps, seed, batch, curriculum, layer and head counts and head width of the run in
// outDir: the settings `train-toy --resume` continues with. Fails naming the file when it is missing or lacks
// a setting.
ToyRecipe resumedRecipe(const std::string& outDir, ToyRecipe base);

// Trains (resuming from outDir/checkpoint, and outDir/checkpoint-pruning for the head-pruning stage, when
// they hold a state of the same recipe) and writes an HF folder to outDir: config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json, training.json. Progress steps count on across the stages.
// `mainFrom` (optional): a finished folder of this recipe without its pruning stage (its training.json
// must record exactly that recipe); its weights and curve stand for the main schedule, which is not rerun.
TrainResult trainToy(const ToyRecipe& recipe, const std::string& outDir,
                     const std::function<void(const TrainProgress&)>& onProgress,
                     const std::string& mainFrom = "");

}  // namespace hs
