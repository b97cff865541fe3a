#pragma once
// One entry point that loads any supported checkpoint and its tokenizer:
//  - a Hugging Face folder (config.json + model.safetensors or sharded *.safetensors with
//    model.safetensors.index.json; tokenizer.json or vocab.json + merges.txt beside), or one .safetensors
//    file with config.json beside it;
//  - a llama2.c .bin (tokenizer: LoadOptions::tokenizer, else tok<vocab>.bin / tokenizer.bin / tok*.bin
//  beside);
//  - a .gguf (tokenizer from its tokenizer.ggml.* metadata);
//  - the word "toy": HeadScope's embedded toy ICL model (resources/models/toy-icl/).
// Errors name the path and what was wrong; a missing tokenizer is not an error (LoadedModel says so).
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct LoadOptions {
  std::string tokenizer;  // optional path; default: found beside the model (or inside the GGUF)
  std::string dtype =
      "float32";               // "float32", "bfloat16", "float16" (also fp32/bf16/fp16), "auto" = as stored
  std::string device = "cpu";  // "cpu", "cuda", "cuda:N"
};

struct LoadedModel {
  ModelConfig config;
  std::shared_ptr<Transformer> model;
  std::shared_ptr<Tokenizer> tokenizer;  // null when none was found (see notes)
  std::string path;                      // what was asked for, resolved ("toy" → the folder)
  std::vector<std::string> files;        // every file read (weights, config, tokenizer)
  std::string format;                    // "safetensors", "llama2c", "gguf"
  std::vector<std::string> notes;        // non-fatal findings, e.g. "no tokenizer found beside ..."
};

LoadedModel loadModel(const std::string& path, const LoadOptions& options = {});

// A tokenizer from any file HeadScope reads: tokenizer.json, vocab.json (+ merges.txt), a llama2.c
// tok.bin, a folder holding one of those, or a .gguf (its tokenizer.ggml.* metadata).
std::shared_ptr<Tokenizer> loadTokenizerFile(const std::string& path);
// The tokenizer of a GGUF file; null when the file has no tokenizer metadata.
std::shared_ptr<Tokenizer> loadGgufTokenizer(const std::string& path);

// Where "toy" is looked for, in order (the source tree's resources/, an install prefix, /usr/share).
std::vector<std::string> toyModelCandidates();

// "float32" | "fp32" | "bfloat16" | "bf16" | "float16" | "fp16" → scalar type; errors name the string.
at::ScalarType parseDtype(const std::string& dtype);

}  // namespace hs
