#pragma once
// What the llama2.c and GGUF readers hand to the loader: a config plus tensors under Hugging Face
// Llama key names (model.embed_tokens.weight, model.layers.{l}.self_attn.q_proj.weight, ...,
// model.norm.weight, lm_head.weight when untied). The strict per-architecture mapping
// (load/architecture.cpp) then checks every key and shape, whatever the source format.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "model/config.h"

namespace hs {

struct RawCheckpoint {
  ModelConfig config;
  std::map<std::string, at::Tensor> tensors;  // CPU tensors; may alias a memory map
  std::string path;                           // the file they came from (for error messages)
};

}  // namespace hs
