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

struct ToyRecipe {
  toy::ToyWorldConfig world;
  ModelConfig model;
  TrainConfig train;
  int batch = 32;                     // samples per step
  int seq_len = 128;                  // tokens per sample (= the model's context)
  toy::CurriculumOptions curriculum;  // icl stage start, category naming, icl-stage classification weight
};

// The shipped model's recipe: Llama architecture, 4 layers × 8 heads, d_model 128, RoPE.
ToyRecipe defaultToyRecipe();
nlohmann::json recipeJson(const ToyRecipe& r);

// Sets the head width (and the RoPE width with it); fails unless it is even and positive.
void setHeadWidth(ToyRecipe& r, int64_t d_head);
// Sets the number of layers, and the number of attention heads per layer (query and key/value heads
// alike); each fails unless the count is positive.
void setLayerCount(ToyRecipe& r, int64_t n_layers);
void setHeadCount(ToyRecipe& r, int64_t n_heads);

// The recipe a run in outDir was started with (outDir/checkpoint/recipe.json, as recipeJson wrote it), or
// nullopt when there is none. Fails naming the file when it is unreadable or malformed.
std::optional<nlohmann::json> savedRecipeJson(const std::string& outDir);

// `base` with the saved steps, seed, batch, curriculum, layer and head counts and head width of the run in
// outDir: the settings `train-toy --resume` continues with. Fails naming the file when it is missing or lacks
// a setting.
ToyRecipe resumedRecipe(const std::string& outDir, ToyRecipe base);

// Trains (resuming from outDir/checkpoint when it holds a state of the same recipe) and writes an HF
// folder to outDir: config.json, model.safetensors, tokenizer.json, tokenizer_config.json, training.json.
TrainResult trainToy(const ToyRecipe& recipe, const std::string& outDir,
                     const std::function<void(const TrainProgress&)>& onProgress);

}  // namespace hs
