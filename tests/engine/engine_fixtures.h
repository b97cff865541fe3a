#pragma once
// Models for the engine tests: small random ones of every family (weights filled by hand, as the
// loader is tested elsewhere) and the real stories260K read straight from its llama2.c .bin.
#include <ATen/ATen.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "util/error.h"

namespace hs::test {

// Llama-style with GQA: 3 layers, 4 query heads reading 2 kv heads, d_model 32, vocab 50.
inline ModelConfig tinyLlamaConfig() {
  ModelConfig c;
  c.arch = Architecture::Llama;
  c.model_type = "llama";
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.d_model = 32;
  c.d_head = 8;
  c.d_mlp = 48;
  c.vocab_size = 50;
  c.context_length = 64;
  c.norm = NormKind::RMSNorm;
  c.rope_layout = RopeLayout::RotateHalf;
  c.rotary_dim = 8;
  c.mlp = MlpKind::SwiGLU;
  c.activation = "silu";
  return c;
}

// Random weights for whatever parts the config declares (scaled so activations stay O(1)).
inline ModelWeights randomWeights(const ModelConfig& c, uint64_t seed) {
  at::manual_seed(seed);
  const int64_t d = c.d_model, dq = int64_t(c.n_heads) * c.d_head, dkv = int64_t(c.n_kv_heads) * c.d_head;
  auto lin = [](int64_t out, int64_t in) {
    return at::randn({out, in}) / std::sqrt(double(in));
  };                                                                 // [out, in]
  auto vec = [](int64_t n) { return 0.1 * at::randn({n}); };         // [n]
  auto gain = [](int64_t n) { return 1.0 + 0.1 * at::randn({n}); };  // [n]
  const bool ln = c.norm == NormKind::LayerNorm;
  ModelWeights w;
  w.tok_emb = at::randn({c.vocab_size, d});  // [vocab, d_model]
  if (c.learned_pos_emb) w.pos_emb = 0.5 * at::randn({c.context_length, d});
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights lw;
    if (c.norm_placement != NormPlacement::Post) {
      lw.attn_norm_w = gain(d);
      lw.mlp_norm_w = gain(d);
      if (ln) lw.attn_norm_b = vec(d), lw.mlp_norm_b = vec(d);
    }
    if (c.norm_placement != NormPlacement::Pre) {
      lw.post_attn_norm_w = gain(d);
      lw.post_mlp_norm_w = gain(d);
    }
    lw.wq = lin(dq, d), lw.wk = lin(dkv, d), lw.wv = lin(dkv, d), lw.wo = lin(d, dq);
    if (c.qkv_bias) lw.bq = vec(dq), lw.bk = vec(dkv), lw.bv = vec(dkv);
    if (c.attn_out_bias) lw.bo = vec(d);
    if (c.qk_norm == QkNorm::PerHead) lw.q_norm_w = gain(c.d_head), lw.k_norm_w = gain(c.d_head);
    if (c.qk_norm == QkNorm::Full) lw.q_norm_w = gain(dq), lw.k_norm_w = gain(dkv);
    if (c.mlp == MlpKind::SwiGLU) lw.w_gate = lin(c.d_mlp, d);
    lw.w_up = lin(c.d_mlp, d), lw.w_down = lin(d, c.d_mlp);
    if (c.mlp_bias) lw.b_up = vec(c.d_mlp), lw.b_down = vec(d);
    w.layers.push_back(lw);
  }
  w.final_norm_w = gain(d);
  if (ln) w.final_norm_b = vec(d);
  w.unembed = c.tied_embeddings ? w.tok_emb : lin(c.vocab_size, d);
  return w;
}

inline Transformer tinyLlama(uint64_t seed = 7) {
  const ModelConfig c = tinyLlamaConfig();
  return Transformer(c, randomWeights(c, seed));
}

// stories260K from its llama2.c .bin: 7 int32 header fields, then fp32 arrays [out][in].
inline Transformer loadStories260K(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path);
  int32_t h[7];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  ModelConfig c;
  c.arch = Architecture::Llama;
  c.source_format = "llama2c";
  c.d_model = h[0], c.d_mlp = h[1], c.n_layers = h[2], c.n_heads = h[3], c.n_kv_heads = h[4];
  c.vocab_size = std::abs(h[5]), c.context_length = h[6];
  c.d_head = c.d_model / c.n_heads;
  c.rotary_dim = c.d_head;
  c.rope_layout = RopeLayout::Interleaved;
  c.norm_eps = 1e-5;
  c.tied_embeddings = h[5] > 0;
  const int64_t d = c.d_model, L = c.n_layers, dq = d, dkv = int64_t(c.n_kv_heads) * c.d_head, m = c.d_mlp;
  auto read = [&](std::vector<int64_t> shape) {
    at::Tensor t = at::empty(shape, at::kFloat);
    in.read(reinterpret_cast<char*>(t.data_ptr<float>()), t.numel() * sizeof(float));
    if (!in) fail(path, ": file ends early");
    return t;
  };
  ModelWeights w;
  w.tok_emb = read({c.vocab_size, d});
  w.layers.resize(L);
  const at::Tensor attnNorm = read({L, d}), wq = read({L, dq, d}), wk = read({L, dkv, d}),
                   wv = read({L, dkv, d}), wo = read({L, d, dq}), mlpNorm = read({L, d}),
                   w1 = read({L, m, d}), w2 = read({L, d, m}), w3 = read({L, m, d});
  for (int l = 0; l < L; ++l) {
    LayerWeights& lw = w.layers[l];
    lw.attn_norm_w = attnNorm[l], lw.wq = wq[l], lw.wk = wk[l], lw.wv = wv[l], lw.wo = wo[l];
    lw.mlp_norm_w = mlpNorm[l], lw.w_gate = w1[l], lw.w_down = w2[l], lw.w_up = w3[l];
  }
  w.final_norm_w = read({d});
  w.unembed = w.tok_emb;
  return Transformer(c, w);
}

// tokens [batch, pos] from rows of ids, left-padded with `pad` to the longest row; mask alongside.
inline std::pair<at::Tensor, at::Tensor> leftPadded(const std::vector<std::vector<int64_t>>& rows,
                                                    int64_t pad = 0) {
  size_t n = 0;
  for (const auto& r : rows)
    n = std::max(n, r.size());
  at::Tensor tokens = at::full({int64_t(rows.size()), int64_t(n)}, pad, at::kLong);  // [batch, pos]
  at::Tensor mask = at::zeros({int64_t(rows.size()), int64_t(n)}, at::kLong);        // [batch, pos]
  for (size_t b = 0; b < rows.size(); ++b)
    for (size_t i = 0; i < rows[b].size(); ++i) {
      tokens[b][n - rows[b].size() + i] = rows[b][i];
      mask[b][n - rows[b].size() + i] = 1;
    }
  return {tokens, mask};
}

inline at::Tensor row(const std::vector<int64_t>& ids) {
  return at::tensor(ids, at::TensorOptions().dtype(at::kLong)).view({1, -1});  // [1, pos]
}

inline double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace hs::test
