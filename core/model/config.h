#pragma once
// One ModelConfig for every supported family. Filled from an HF config.json (config_json.cpp),
// a llama2.c header (llama2c.cpp) or GGUF metadata (gguf_model.cpp). No torch here.
#include <string>
#include <vector>

namespace hs {

enum class Architecture { Gpt2, Llama, Mistral, Qwen2, Qwen3, GptNeoX, Olmo2, Gemma2, Gemma3 };

enum class NormKind { LayerNorm, RMSNorm };

// How the two halves of each rotary pair are laid out inside a head's q/k vector.
//  RotateHalf:  pairs (i, i + rot/2)   — Hugging Face checkpoints (q/k rows permuted at export).
//  Interleaved: pairs (2i, 2i + 1)     — llama2.c .bin and GGUF (Meta's original layout).
enum class RopeLayout { None, RotateHalf, Interleaved };

// Where q/k RMSNorm applies, if at all: per head over d_head (Qwen3) or over the whole
// projection before splitting into heads (OLMo-2).
enum class QkNorm { None, PerHead, Full };

// Gelu: down(act(up x)). SwiGLU: the gated MLP down(act(gate x) * up x), with act = silu (SwiGLU proper)
// or a GELU (GeGLU: Gemma-2/3 use gelu_pytorch_tanh).
enum class MlpKind { Gelu, SwiGLU };

// Where each block's norms sit (the residual stream x itself is never normalised in place):
//  Pre:        x + attn(norm(x))           GPT-2, Llama, Mistral, Qwen, GPT-NeoX
//  Post:       x + norm(attn(x))           OLMo-2
//  PreAndPost: x + norm(attn(norm(x)))     Gemma-2/3 (the same for the MLP, with its own two norms)
enum class NormPlacement { Pre, Post, PreAndPost };

// Attention span of one layer. Sliding: query position i sees keys j with i − window < j ≤ i, i.e. the
// last `sliding_window` positions itself included (transformers' sliding_window_overlay: kv > q − window).
enum class LayerAttention { Global, Sliding };

struct RopeScaling {
  std::string type;  // "" (none), "llama3", "linear"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string model_type;     // as written in config.json ("llama", "qwen2", ...)
  std::string source_format;  // "hf", "llama2c", "gguf"

  int n_layers = 0;
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;  // == n_heads without GQA/MQA
  int d_model = 0;
  int d_head = 0;
  int d_mlp = 0;
  int vocab_size = 0;
  int context_length = 0;

  NormKind norm = NormKind::RMSNorm;
  double norm_eps = 1e-5;

  RopeLayout rope_layout = RopeLayout::RotateHalf;
  double rope_theta = 10000.0;
  int rotary_dim = 0;  // dims of each head that rotate (GPT-NeoX partial rotary); = d_head otherwise
  RopeScaling rope_scaling;
  bool learned_pos_emb = false;  // GPT-2 wpe

  MlpKind mlp = MlpKind::SwiGLU;
  std::string activation = "silu";  // "silu", "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh" (tanh approx)

  bool tied_embeddings = false;
  bool qkv_bias = false;       // GPT-2, Qwen2, GPT-NeoX
  bool attn_out_bias = false;  // GPT-2, GPT-NeoX
  bool mlp_bias = false;       // GPT-2, GPT-NeoX
  QkNorm qk_norm = QkNorm::None;
  bool parallel_residual = false;  // GPT-NeoX use_parallel_residual: x + attn(ln1 x) + mlp(ln2 x)
  NormPlacement norm_placement = NormPlacement::Pre;
  bool norm_weight_offset = false;  // Gemma: RMSNorm scales by (1 + w), computed in float32

  // Sliding-window attention (Mistral; Qwen2/3 with use_sliding_window; Gemma-2/3's local layers).
  int sliding_window = 0;  // keys a sliding layer's query sees, itself included; 0 = none
  std::vector<LayerAttention> layer_attention;  // per layer; empty = every layer Global
  // Sliding layers' own RoPE (Gemma-3: rope_local_base_freq, unscaled). 0 = they share the global RoPE.
  double rope_local_theta = 0.0;
  RopeScaling rope_local_scaling;

  // Gemma-2/3 attention and output details (0 = absent).
  bool scale_embeddings = false;     // embeddings × sqrt(d_model), the factor rounded to the compute dtype
  double query_pre_attn_scalar = 0;  // scores = q·k / sqrt(this); 0 = d_head (the usual 1/sqrt(d_head))
  double attn_logit_softcap = 0;     // scores → cap · tanh(scores / cap), before the mask
  double final_logit_softcap = 0;    // logits → cap · tanh(logits / cap)

  int bos_token_id = -1;
  int eos_token_id = -1;
  std::string dtype = "float32";  // torch_dtype of the checkpoint as stored
};

const char* toString(Architecture a);

// The fields every Llama-architecture reader shares (llama2.c, GGUF, the toy recipe): RMSNorm (eps 1e-5),
// SwiGLU with silu, RoPE with base 10000 in `ropeLayout`, pre-norm blocks, no biases and no q/k norm. The
// caller sets the sizes, rotary_dim, the token ids, tying and whatever its format stores differently.
ModelConfig llamaBaseConfig(const std::string& sourceFormat, RopeLayout ropeLayout);

// Whether layer `layer` uses sliding-window attention.
bool isSlidingLayer(const ModelConfig& c, int layer);

// Total parameter count implied by the config (embeddings counted once when tied).
long long parameterCount(const ModelConfig& c);

}  // namespace hs
