#pragma once
// Our own transformer forward for every supported family (transformer.cpp, one readable file in
// data-flow order). Eager attention (patterns always exist), hook sites from hooks.h, interventions
// from intervention.h, KV cache for generation and shared prefixes.
#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "model/config.h"
#include "model/hooks.h"
#include "model/intervention.h"
#include "model/weights.h"

namespace hs {

// Keys and values of every layer for the positions seen so far. Owned by the caller; a run with a
// cache appends the new positions to it.
struct KVCache {
  std::vector<at::Tensor> k;  // per layer [batch, kv_head, pos, d_head] (after RoPE / k-norm)
  std::vector<at::Tensor> v;  // per layer [batch, kv_head, pos, d_head]
  at::Tensor mask;            // [batch, pos] 1 = real token, 0 = padding, over all cached positions
  int64_t length() const;     // cached positions (0 when empty)
  bool empty() const { return length() == 0; }
  KVCache sliceRows(const std::vector<int64_t>& rows) const;  // a copy holding only these batch rows
  KVCache expandRows(int64_t n) const;                        // a batch-1 cache repeated n times
};

using ActivationCache = std::map<Site, at::Tensor>;

struct RunRequest {
  at::Tensor tokens;          // [batch, pos] int64 token ids (left padding allowed)
  at::Tensor attention_mask;  // [batch, pos] 1 = real token, 0 = padding; undefined = all real
  std::set<Site> capture;     // sites to return in RunResult::cache
  std::vector<Intervention> interventions;
  KVCache* kv = nullptr;      // when set: attend to cached positions first, then append these
  bool last_logits_only = false;  // unembed only the last position (logits [batch, 1, vocab])
};

struct RunResult {
  at::Tensor logits;           // [batch, pos, vocab] float32 (or [batch, 1, vocab])
  ActivationCache cache;       // only the requested sites (not detached: gradients flow when enabled)
  std::vector<int64_t> hits;   // per intervention: vectors changed ((row, pos[, head]) triples)
};

class Transformer {
 public:
  Transformer(ModelConfig config, ModelWeights weights);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

  // One batched forward. Throws hs::Error for tokens out of range, a sequence longer than the
  // context, a site/head/position/row that does not exist, or an intervention that hit nothing.
  RunResult run(const RunRequest& request) const;

  // Final norm + unembedding applied to any residual-stream tensor [..., d_model] → [..., vocab].
  at::Tensor logitLens(const at::Tensor& resid) const;

  // Greedy decoding from one prompt [pos] (int64): prefill (with `prefillInterventions`, e.g. SITE
  // injection) then one token at a time through the KV cache. Stops after maxNew tokens or at
  // stopToken (>= 0). Returns only the new tokens.
  std::vector<int64_t> generateGreedy(const std::vector<int64_t>& prompt, int maxNew, int64_t stopToken = -1,
                                      const std::vector<Intervention>& prefillInterventions = {}) const;

  // Cast the weights (float32 / bfloat16 / float16) and move them (CPU / CUDA).
  void to(at::ScalarType dtype, at::Device device);
  at::ScalarType dtype() const;
  at::Device device() const;

 private:
  ModelConfig config_;
  ModelWeights weights_;
  at::Tensor rope_cos_, rope_sin_;  // [context_length, rotary_dim / 2] float32 tables
};

}  // namespace hs
