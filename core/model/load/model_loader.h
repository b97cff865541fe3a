#pragma once
// One entry point that loads any supported checkpoint and its tokenizer:
//  - a Hugging Face folder (config.json + model.safetensors or sharded *.safetensors with
//    model.safetensors.index.json; tokenizer.json or vocab.json + merges.txt beside), or one .safetensors
//    file with config.json beside it;
//  - a llama2.c .bin (tokenizer: LoadOptions::tokenizer, else tok<vocab>.bin / tokenizer.bin / tok*.bin
//  beside);
//  - a .gguf (tokenizer from its tokenizer.ggml.* metadata);
//  - the word "toy": HeadScope's embedded toy ICL model (resources/models/toy-icl/);
//  - a hub id ("meta-llama/Llama-3.2-1B", "org/name@revision") found in the local hub cache (hub_cache.h),
//    when no file or folder of that name exists. Nothing is downloaded.
// Before any weight is read, a memory plan (memory_plan.h) picks the dtype for "auto" and refuses a model
// that does not fit, with the sizes and the ways out.
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
  // "auto" (float32 when that copy fits comfortably, else the checkpoint's own 16-bit dtype: memory_plan.h),
  // "float32", "bfloat16", "float16" (also f32/fp32/bf16/fp16/f16).
  std::string dtype = "auto";
  std::string device = "cpu";  // "cpu", "cuda", "cuda:N", or a list "cuda:0,cuda:1" to split the layers over
  int gpu_layers = -1;       // >= 0: the last N layers and the head on `device` (a GPU), the rest on the CPU
  bool check_memory = true;  // refuse a model the memory plan says does not fit
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

// What a checkpoint is, from its headers only (safetensors headers, GGUF metadata, the llama2.c header) and
// config.json: no weight is read or converted, so it takes milliseconds and little memory at any size.
// Keys and shapes are checked as loading would (safetensors); the tokenizer is not loaded.
struct ModelProbe {
  ModelConfig config;
  std::string path;                // resolved ("toy" → the folder, a hub id → its snapshot)
  std::string format;              // "safetensors", "llama2c", "gguf"
  std::vector<std::string> files;  // config and weight files
  long long n_params = 0;          // parameters the loaded model holds (a tied unembedding once)
  uint64_t stored_bytes = 0;       // size of the weight files
  std::vector<std::string> notes;  // e.g. which hub snapshot a hub id resolved to
};
ModelProbe probeModel(const std::string& path);

// Finds and loads the tokenizer of out.path / out.format / out.config (`tokenizer` overrides), as loadModel
// does: sets out.tokenizer (null when none is found) and adds notes and files.
void attachTokenizer(LoadedModel& out, const std::string& tokenizer = {});

// "toy" → the embedded toy model's folder; a hub id that is not a path → its snapshot folder (a note says
// so); anything else unchanged. Errors name what was looked for.
std::string resolveModelPath(const std::string& path, std::vector<std::string>* notes = nullptr);

// A tokenizer from any file HeadScope reads: tokenizer.json, vocab.json (+ merges.txt), a llama2.c
// tok.bin, a folder holding one of those, or a .gguf (its tokenizer.ggml.* metadata).
std::shared_ptr<Tokenizer> loadTokenizerFile(const std::string& path);
// The tokenizer of a GGUF file; null when the file has no tokenizer metadata.
std::shared_ptr<Tokenizer> loadGgufTokenizer(const std::string& path);

// Where "toy" is looked for, in order (the source tree's resources/, an install prefix, /usr/share).
std::vector<std::string> toyModelCandidates();

// "float32" | "fp32" | "bfloat16" | "bf16" | "float16" | "fp16" → scalar type; errors name the string.
at::ScalarType parseDtype(const std::string& dtype);
// "float32", "bfloat16", "float16", "float64"; "other" for any other type.
const char* dtypeName(at::ScalarType t);

}  // namespace hs
