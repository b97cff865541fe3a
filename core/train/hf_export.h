#pragma once
// Canonical Llama-family weights ↔ Hugging Face names, and a config.json for them, so a model
// trained here loads like any HF checkpoint (and through the same strict loader).
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace hs {

// (HF key, pointer to the canonical tensor) for every defined parameter of a Llama-style model; the
// unembedding is listed only when untied. The pointers let a caller read or overwrite in place.
std::vector<std::pair<std::string, at::Tensor*>> llamaParameterTable(ModelWeights& w, const ModelConfig& c);

// config.json for a Llama-architecture ModelConfig (rope_layout must be RotateHalf, as HF expects).
nlohmann::json llamaConfigJson(const ModelConfig& c);

// Writes config.json and model.safetensors (atomically) into `dir`, creating it.
void saveHfLlama(const std::string& dir, ModelWeights& w, const ModelConfig& c,
                 const std::map<std::string, std::string>& metadata = {});

}  // namespace hs
