#pragma once
// Internal: one reader per tokenizer file format. loadTokenizer() (load_tokenizer.cpp) picks among them.
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace hs::detail {

// Hugging Face tokenizer.json; configPath: tokenizer_config.json beside it ("" when absent).
std::unique_ptr<Tokenizer> loadHfTokenizerJson(const std::string& path, const std::string& configPath);
// GPT-2 vocab.json + merges.txt (+ optional tokenizer_config.json beside them, "" when absent).
std::unique_ptr<Tokenizer> loadGpt2VocabMerges(const std::string& vocabPath, const std::string& mergesPath,
                                               const std::string& configPath);
// llama2.c tok.bin.
std::unique_ptr<Tokenizer> loadLlama2cTokenizer(const std::string& path);

}  // namespace hs::detail
