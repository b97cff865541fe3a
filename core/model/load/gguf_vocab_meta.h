#pragma once
// The tokenizer.ggml.* metadata of a GGUF file read into a GgufVocab with typed, bounded reads: every
// wrong type or out-of-range id is refused naming the file and the key (a bos_token_id of 2^40 is an
// error with the limit, never token 0).
#include <nlohmann/json.hpp>

#include <string>

#include "tokenizer/tokenizer.h"

namespace hs {

// `metadata` is GgufFile::metadata(); `path` names the file in errors. The caller checks first that
// tokenizer.ggml.model and tokenizer.ggml.tokens are present.
GgufVocab ggufVocabFromMetadata(const nlohmann::json& metadata, const std::string& path);

}  // namespace hs
