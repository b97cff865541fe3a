#pragma once
// Our own transformer forward for every supported family (transformer.cpp in data-flow order; the request
// checks in forward_plan.cpp). Eager attention (patterns always exist), hook sites from hooks.h, interventions
// from intervention.h, KV cache for generation and shared prefixes. In a bf16/f16 model the residual
// stream, norms, q·k, softmax, pattern·V and logits are float32 (docs/models.md, Numerics).
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
// cache appends the new positions to it, only once the whole run has succeeded (a run that throws
// leaves the cache as it was). Interventions on hook_k and hook_v change what this forward attends to
// but the cache keeps the model's own kv-head keys and values; interventions elsewhere reach the cache
// through the residual stream of later layers as usual.
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
  KVCache* kv = nullptr;  // when set: attend to cached positions first, then append these
  bool last_logits_only =
      false;  // unembed only the last position (logits [batch, 1, vocab]); use left padding
  // Start inside the model (fast patching): `resid_in` [batch, pos, d_model] is the residual stream
  // entering layer `start_layer` (its hook_resid_pre) and replaces the embeddings and every layer
  // below; `tokens` must then be left undefined (batch and pos come from resid_in). Sites below
  // start_layer cannot be captured or intervened on. A KV cache supplies the earlier positions of the
  // layers that run; it can only be read (kv_read_only), as the layers below would lack the new positions.
  int start_layer = 0;
  at::Tensor resid_in;        // [batch, pos, d_model] or undefined (start from the tokens)
  bool kv_read_only = false;  // attend to the cached positions but leave the cache unchanged
  // A read-only cache of batch 1 is shared by every row of a larger batch: each row attends to the same
  // cached positions, which are never copied per row.
  // Rows that join on the way (fast patching): resid_join[l] [rows, pos, d_model] is appended to the
  // batch as it enters layer l (start_layer < l < n_layers), as the residual stream entering l. Batch
  // rows of interventions and results count resid_in's rows first, then each join's in layer order.
  // Needs resid_in and no attention_mask; a cache must be read-only, shared and without padding.
  std::map<int, at::Tensor> resid_join;
  // Positions before `last_layer_from` give the last layer only their keys and values (a patching sweep's
  // base runs need nothing else of them there): its queries, attention, output projection and MLP run from
  // that position on, so the last layer's hook_pattern (query axis), hook_z, hook_result, hook_attn_out,
  // hook_mlp_out, hook_resid_post, ln_final and the logits hold positions ≥ last_layer_from only. Needs no
  // interventions; 0 = every position.
  int64_t last_layer_from = 0;
  // Only these vocabulary entries' logits (logits [batch, pos, n], in this order; e.g. a metric's target
  // and distractor); empty = the whole vocabulary.
  std::vector<int64_t> logit_tokens;
};

struct RunResult {
  at::Tensor logits;      // [batch, pos, vocab] float32 (or [batch, 1, vocab]; vocab = logit_tokens' count)
  ActivationCache cache;  // only the requested sites (not detached: gradients flow when enabled);
                          // hook_resid_* and hook_pattern are float32, the others in the compute dtype
  std::vector<int64_t> hits;  // per intervention: vectors changed ((row, pos[, head]) triples)
};

class Transformer {
 public:
  // Frozen (the default): weights are detached and never take part in autograd; only interventions
  // and learned vectors are leaves. Trainable: the weights are used as given (the trainer's parameters).
  enum class Weights { Frozen, Trainable };
  Transformer(ModelConfig config, ModelWeights weights, Weights mode = Weights::Frozen);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

  // One batched forward. Throws hs::Error for tokens out of range, a sequence longer than the
  // context, a site/head/position/row that does not exist, or an intervention that hit nothing.
  // Position ids count real tokens (cumsum(mask) − 1, continuing from the cache), so a left-padded
  // row gives the logits of its unpadded prompt; padded queries get an all-zero pattern.
  // Intervention positions: non-negative = absolute index in the padded sequence (cache included;
  // only this forward's positions may be selected), negative = from the end of this forward.
  // The selected slice keeps the site's axis order: [rows, pos, head, ...] ([rows, head, q_pos,
  // k_pos] for hook_pattern); a tensor/alpha broadcasts to it or has the full site shape.
  // Never enters InferenceMode or NoGrad: callers decide (training needs autograd).
  RunResult run(const RunRequest& request) const;

  // Final norm + unembedding applied to any residual-stream tensor [..., d_model] → [..., vocab].
  at::Tensor logitLens(const at::Tensor& resid) const;

  // Greedy decoding from one prompt [pos] (int64): prefill (with `prefillInterventions`, e.g. SITE
  // injection) then one token at a time through the KV cache. Stops after maxNew tokens or at
  // stopToken (>= 0, not included) or when the context is full. Returns only the new tokens.
  std::vector<int64_t> generateGreedy(const std::vector<int64_t>& prompt, int maxNew, int64_t stopToken = -1,
                                      const std::vector<Intervention>& prefillInterventions = {}) const;

  // Cast the weights (float32 / bfloat16 / float16) and move them (CPU / CUDA).
  void to(at::ScalarType dtype, at::Device device);
  at::ScalarType dtype() const;
  at::Device device() const;

 private:
  // LayerNorm or RMSNorm as the config says (float32 inside, the input dtype outside).
  at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;
  // The family's RMSNorm (also for q/k norms and post-norms).
  at::Tensor rms(const at::Tensor& x, const at::Tensor& w) const;
  // Unembedding of final-normed activations [..., d_model] → float32 logits [..., vocab], soft-capped;
  // with `tokens` (checked ids) only those entries: [..., n].
  at::Tensor unembed(const at::Tensor& normed, const std::vector<int64_t>& tokens = {}) const;

  ModelConfig config_;
  ModelWeights weights_;
  at::Tensor rope_inv_freq_;  // [rotary_dim / 2] float32, rope_scaling applied (undefined without RoPE)
  at::Tensor
      rope_local_inv_freq_;  // [rotary_dim / 2] float32 for sliding layers with their own base (Gemma-3)
};

}  // namespace hs
