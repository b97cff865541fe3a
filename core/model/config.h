#pragma once
// One ModelConfig for every supported family. Filled from an HF config.json (config_json.cpp),
// a llama2.c header (llama2c.cpp) or GGUF metadata (gguf_model.cpp). No torch here.
#include <string>

namespace hs {

enum class Architecture { Gpt2, Llama, Mistral, Qwen2, Qwen3, GptNeoX, Olmo2 };

enum class NormKind { LayerNorm, RMSNorm };

// How the two halves of each rotary pair are laid out inside a head's q/k vector.
//  RotateHalf:  pairs (i, i + rot/2)   — Hugging Face checkpoints (q/k rows permuted at export).
//  Interleaved: pairs (2i, 2i + 1)     — llama2.c .bin and GGUF (Meta's original layout).
enum class RopeLayout { None, RotateHalf, Interleaved };

// Where q/k RMSNorm applies, if at all: per head over d_head (Qwen3) or over the whole
// projection before splitting into heads (OLMo-2).
enum class QkNorm { None, PerHead, Full };

enum class MlpKind { Gelu, SwiGLU };  // Gelu: down(act(up x)); SwiGLU: down(silu(gate x) * up x)

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
  bool post_norms = false;         // OLMo-2: x + norm(attn(x)); h + norm(mlp(h)); no pre-norms

  int bos_token_id = -1;
  int eos_token_id = -1;
  std::string dtype = "float32";  // torch_dtype of the checkpoint as stored
};

const char* toString(Architecture a);

// Total parameter count implied by the config (embeddings counted once when tied).
long long parameterCount(const ModelConfig& c);

}  // namespace hs
