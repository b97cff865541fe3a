#include "model/config.h"

namespace hs {

const char* toString(Architecture a) {
  switch (a) {
    case Architecture::Gpt2:
      return "gpt2";
    case Architecture::Llama:
      return "llama";
    case Architecture::Mistral:
      return "mistral";
    case Architecture::Qwen2:
      return "qwen2";
    case Architecture::Qwen3:
      return "qwen3";
    case Architecture::GptNeoX:
      return "gpt_neox";
    case Architecture::Olmo2:
      return "olmo2";
    case Architecture::Gemma2:
      return "gemma2";
    case Architecture::Gemma3:
      return "gemma3";
  }
  return "unknown";
}

ModelConfig llamaBaseConfig(const std::string& sourceFormat, RopeLayout ropeLayout) {
  ModelConfig c;
  c.arch = Architecture::Llama;
  c.model_type = "llama";
  c.source_format = sourceFormat;
  c.norm = NormKind::RMSNorm;
  c.norm_eps = 1e-5;
  c.norm_placement = NormPlacement::Pre;
  c.rope_layout = ropeLayout;
  c.rope_theta = 10000.0;
  c.mlp = MlpKind::SwiGLU;
  c.activation = "silu";
  c.qkv_bias = false;
  c.attn_out_bias = false;
  c.mlp_bias = false;
  c.qk_norm = QkNorm::None;
  return c;
}

bool isSlidingLayer(const ModelConfig& c, int layer) {
  return c.sliding_window > 0 && layer >= 0 && layer < static_cast<int>(c.layer_attention.size()) &&
         c.layer_attention[static_cast<size_t>(layer)] == LayerAttention::Sliding;
}

long long parameterCount(const ModelConfig& c) {
  const long long d = c.d_model, dh = c.d_head, h = c.n_heads, kv = c.n_kv_heads, m = c.d_mlp;
  const long long v = c.vocab_size;
  const bool layerNorm = c.norm == NormKind::LayerNorm;
  long long perLayer = 0;
  perLayer += d * h * dh + 2 * d * kv * dh + h * dh * d;  // q, k, v, o
  if (c.qkv_bias) perLayer += h * dh + 2 * kv * dh;
  if (c.attn_out_bias) perLayer += d;
  if (c.qk_norm == QkNorm::PerHead) perLayer += 2 * dh;
  if (c.qk_norm == QkNorm::Full) perLayer += h * dh + kv * dh;
  perLayer += (c.mlp == MlpKind::SwiGLU ? 3 : 2) * d * m;
  if (c.mlp_bias) perLayer += m + d;
  const int normsPerLayer = c.norm_placement == NormPlacement::PreAndPost ? 4 : 2;
  perLayer += normsPerLayer * d * (layerNorm ? 2 : 1);
  long long total = perLayer * c.n_layers;
  total += v * d;                          // token embedding
  if (!c.tied_embeddings) total += v * d;  // unembedding
  if (c.learned_pos_emb) total += static_cast<long long>(c.context_length) * d;
  total += d * (layerNorm ? 2 : 1);  // final norm
  return total;
}

}  // namespace hs
