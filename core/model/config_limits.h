#pragma once
// Explicit limits on the sizes a checkpoint header or config.json may declare, checked before anything is
// sized from them (no torch here). They are far above every released model (the largest have ~130
// layers, 128 heads, d_model 16384, vocabularies of 262k) and far below what would wrap an int or
// exhaust memory while the loader builds its tables. Every refusal names the field, the value and the
// limit.
#include <cstdint>
#include <string>

#include "model/config.h"

namespace hs::limits {

constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;  // query heads (and key/value heads)
constexpr int64_t kMaxDModel = 1 << 17;
constexpr int64_t kMaxDHead = 1 << 13;
constexpr int64_t kMaxDMlp = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 22;  // also the bound of every token id + 1
constexpr int64_t kMaxContext = 1 << 24;

// Throws hs::Error "<where>: <field> is <v>, out of range <lo>..<hi>" for a size outside its limit, and
// for non-finite or non-positive norm epsilons, RoPE bases and scaling factors, a rotary width outside
// 1..d_head, kv heads that do not divide the query heads, and bos/eos ids outside the vocabulary.
// `where` is the file (config.json, the GGUF, the .bin). Field names are ModelConfig's.
void checkModelConfig(const ModelConfig& c, const std::string& where);

// Plausibility of the weights a header declares against the bytes that hold them: `storedBytes` (the
// files' data) must hold the config's parameters at `minBytesPerParam` at least (0.5 for 4-bit
// quantised formats, 1 for 8-bit, 2 for 16-bit). Refuses with both numbers before any table is built.
void checkWeightsFitFile(const ModelConfig& c, uint64_t storedBytes, double minBytesPerParam,
                         const std::string& where);

}  // namespace hs::limits
