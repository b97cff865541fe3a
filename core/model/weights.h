#pragma once
// The canonical in-memory weights every family is mapped into (architecture.cpp does the strict
// mapping from checkpoint keys, with a declared shape for every tensor). Undefined tensors are
// absent parts (e.g. no biases in Llama). Linear weights are [out, in] as in torch.nn.Linear.
// q/k rows follow the RoPE layout named in ModelConfig::rope_layout (the forward handles both).
// Norm weights are stored as the checkpoint holds them: Gemma's RMSNorm adds the 1 at compute time.
#include <ATen/core/Tensor.h>

#include <vector>

namespace hs {

struct LayerWeights {
  // Pre-attention norm (LayerNorm has a bias). Undefined for NormPlacement::Post (OLMo-2).
  at::Tensor attn_norm_w, attn_norm_b;  // [d_model]
  at::Tensor wq;                        // [n_heads * d_head, d_model]
  at::Tensor wk, wv;                    // [n_kv_heads * d_head, d_model]
  at::Tensor bq;                        // [n_heads * d_head]    (qkv_bias)
  at::Tensor bk, bv;                    // [n_kv_heads * d_head] (qkv_bias)
  at::Tensor q_norm_w;                  // [d_head] (QkNorm::PerHead) or [n_heads * d_head] (Full)
  at::Tensor k_norm_w;                  // [d_head] (PerHead) or [n_kv_heads * d_head] (Full)
  at::Tensor wo;                        // [d_model, n_heads * d_head]
  at::Tensor bo;                        // [d_model] (attn_out_bias)
  at::Tensor post_attn_norm_w;          // [d_model] norm of the attention output (OLMo-2, Gemma-2/3)

  // Pre-MLP norm (Gemma: pre_feedforward_layernorm). Undefined for NormPlacement::Post (OLMo-2).
  at::Tensor mlp_norm_w, mlp_norm_b;  // [d_model]
  at::Tensor w_gate;                  // [d_mlp, d_model]  SwiGLU only
  at::Tensor w_up;                    // [d_mlp, d_model]  (GPT-2 c_fc, NeoX dense_h_to_4h)
  at::Tensor b_up;                    // [d_mlp]           (mlp_bias)
  at::Tensor w_down;                  // [d_model, d_mlp]
  at::Tensor b_down;                  // [d_model]         (mlp_bias)
  at::Tensor post_mlp_norm_w;         // [d_model] norm of the MLP output (OLMo-2, Gemma-2/3)
};

struct ModelWeights {
  at::Tensor tok_emb;  // [vocab, d_model]
  at::Tensor pos_emb;  // [context_length, d_model] (GPT-2 only)
  std::vector<LayerWeights> layers;
  at::Tensor final_norm_w, final_norm_b;  // [d_model]
  at::Tensor unembed;                     // [vocab, d_model] (same storage as tok_emb when tied)
  at::Tensor unembed_b;                   // [vocab] (rare; undefined otherwise)
};

// Calls f(at::Tensor&) on every tensor slot of the model, defined or not (the one list of all slots).
template <typename Weights, typename F>
void forEachWeight(Weights& w, F&& f) {
  f(w.tok_emb), f(w.pos_emb), f(w.final_norm_w), f(w.final_norm_b), f(w.unembed), f(w.unembed_b);
  for (auto& l : w.layers)
    for (auto* t : {&l.attn_norm_w,
                    &l.attn_norm_b,
                    &l.wq,
                    &l.wk,
                    &l.wv,
                    &l.bq,
                    &l.bk,
                    &l.bv,
                    &l.q_norm_w,
                    &l.k_norm_w,
                    &l.wo,
                    &l.bo,
                    &l.post_attn_norm_w,
                    &l.mlp_norm_w,
                    &l.mlp_norm_b,
                    &l.w_gate,
                    &l.w_up,
                    &l.b_up,
                    &l.w_down,
                    &l.b_down,
                    &l.post_mlp_norm_w})
      f(*t);
}

}  // namespace hs
