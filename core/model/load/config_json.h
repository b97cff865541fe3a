#pragma once
// Hugging Face config.json → ModelConfig, for the families HeadScope runs. Fields the file omits take
// the defaults of the family's transformers Config class (e.g. Llama rms_norm_eps 1e-6, GPT-2 ties its
// embeddings, Qwen3 head_dim 128, GPT-NeoX rotary_pct 0.25 and parallel residual, every Gemma size). Both
// the transformers 4 RoPE fields and transformers 5's rope_parameters are read. Strict: a missing
// required field, a non-positive size or heads that do not divide the width is an error naming the file
// and the field, and so is any key the family does not read unless it is known not to change the forward
// (config_fields.h). docs/models.md lists the families and their fields.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "model/config.h"

namespace hs {

// model_type values accepted (also recognised through `architectures`, e.g. "LlamaForCausalLM").
const std::vector<std::string>& supportedModelTypes();

// `path` only names the file in error messages.
ModelConfig parseHfConfig(const nlohmann::json& j, const std::string& path);

// Reads and parses a config.json (errors name the file: missing, unreadable, malformed JSON).
ModelConfig readHfConfig(const std::string& configJsonPath);

}  // namespace hs
