#include "model/config_limits.h"

#include <cmath>

#include "util/error.h"

namespace hs::limits {

namespace {

void inRange(const std::string& where, const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) fail(where, ": ", field, " is ", v, ", out of range ", lo, "..", hi);
}

void positiveFinite(const std::string& where, const char* field, double v) {
  if (!(std::isfinite(v) && v > 0)) fail(where, ": ", field, " is ", v, ", expected a finite number > 0");
}

}  // namespace

void checkModelConfig(const ModelConfig& c, const std::string& where) {
  inRange(where, "n_layers", c.n_layers, 1, kMaxLayers);
  inRange(where, "n_heads", c.n_heads, 1, kMaxHeads);
  inRange(where, "n_kv_heads", c.n_kv_heads, 1, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(where, ": n_kv_heads (", c.n_kv_heads, ") does not divide n_heads (", c.n_heads, ")");
  inRange(where, "d_model", c.d_model, 1, kMaxDModel);
  inRange(where, "d_head", c.d_head, 1, kMaxDHead);
  inRange(where, "d_mlp", c.d_mlp, 1, kMaxDMlp);
  inRange(where, "vocab_size", c.vocab_size, 1, kMaxVocab);
  inRange(where, "context_length", c.context_length, 1, kMaxContext);
  if (static_cast<int64_t>(c.n_heads) * c.d_head > 4 * kMaxDModel)
    fail(where, ": n_heads x d_head is ", static_cast<int64_t>(c.n_heads) * c.d_head, ", more than ",
         4 * kMaxDModel);
  positiveFinite(where, "norm epsilon", c.norm_eps);
  if (c.norm_eps > 1) fail(where, ": norm epsilon is ", c.norm_eps, ", expected at most 1");
  if (c.rope_layout != RopeLayout::None) {
    positiveFinite(where, "RoPE base (rope_theta)", c.rope_theta);
    inRange(where, "rotary_dim", c.rotary_dim, 1, c.d_head);
  }
  if (!c.rope_scaling.type.empty()) {
    positiveFinite(where, "rope_scaling.factor", c.rope_scaling.factor);
    positiveFinite(where, "rope_scaling.low_freq_factor", c.rope_scaling.low_freq_factor);
    positiveFinite(where, "rope_scaling.high_freq_factor", c.rope_scaling.high_freq_factor);
    inRange(where, "rope_scaling.original_max_position_embeddings",
            c.rope_scaling.original_max_position_embeddings, 1, kMaxContext);
  }
  inRange(where, "bos_token_id", c.bos_token_id, -1, c.vocab_size - 1);
  inRange(where, "eos_token_id", c.eos_token_id, -1, c.vocab_size - 1);
}

void checkWeightsFitFile(const ModelConfig& c, uint64_t storedBytes, double minBytesPerParam,
                         const std::string& where) {
  const long long params = parameterCount(c);
  const double need = static_cast<double>(params) * minBytesPerParam;
  if (need > static_cast<double>(storedBytes))
    fail(where, ": the header declares ", params, " parameters (", c.n_layers, " layers, d_model ", c.d_model,
         ", vocab ", c.vocab_size, "), at least ", static_cast<uint64_t>(need),
         " bytes, but the weights hold only ", storedBytes, " bytes");
}

}  // namespace hs::limits
