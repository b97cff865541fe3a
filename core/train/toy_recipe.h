#pragma once
// The recipe of the embedded toy model: its synthetic world, its architecture, its training schedule.
// `headscope-cli train-toy` runs it; the shipped weights in resources/models/toy-icl/ came from it, and
// training.json beside them records the recipe, seed, steps, losses and time.
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "model/config.h"
#include "tasks/toy/world.h"
#include "train/trainer.h"

namespace hs {

struct ToyRecipe {
  toy::ToyWorldConfig world;
  ModelConfig model;
  TrainConfig train;
  int batch = 32;          // samples per step
  int seq_len = 128;       // tokens per sample (= the model's context)
  double icl_from = 0.70;  // fraction of the samples after which the curriculum's icl stage runs
};

// The shipped model's recipe: Llama architecture, 4 layers × 8 heads, d_model 128, RoPE.
ToyRecipe defaultToyRecipe();
nlohmann::json recipeJson(const ToyRecipe& r);

// Trains (resuming from outDir/checkpoint when it holds a state of the same recipe) and writes an HF
// folder to outDir: config.json, model.safetensors, tokenizer.json, tokenizer_config.json, training.json.
// A recipe with `saved` (a recipeJson) applied over `base`: the settings a resumed run started with.
ToyRecipe recipeFromJson(const nlohmann::json& saved, ToyRecipe base);

TrainResult trainToy(const ToyRecipe& recipe, const std::string& outDir,
                     const std::function<void(const TrainProgress&)>& onProgress);

}  // namespace hs
