#include "train/hf_export.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "model/io/atomic_file.h"
#include "model/io/safetensors.h"
#include "util/error.h"

namespace hs {

std::vector<std::pair<std::string, at::Tensor*>> llamaParameterTable(ModelWeights& w, const ModelConfig& c) {
  if (c.arch != Architecture::Llama)
    fail("HF export supports the llama architecture only, got ", toString(c.arch));
  std::vector<std::pair<std::string, at::Tensor*>> t;
  t.emplace_back("model.embed_tokens.weight", &w.tok_emb);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    LayerWeights& L = w.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.emplace_back(p + "input_layernorm.weight", &L.attn_norm_w);
    t.emplace_back(p + "self_attn.q_proj.weight", &L.wq);
    t.emplace_back(p + "self_attn.k_proj.weight", &L.wk);
    t.emplace_back(p + "self_attn.v_proj.weight", &L.wv);
    t.emplace_back(p + "self_attn.o_proj.weight", &L.wo);
    t.emplace_back(p + "post_attention_layernorm.weight", &L.mlp_norm_w);
    t.emplace_back(p + "mlp.gate_proj.weight", &L.w_gate);
    t.emplace_back(p + "mlp.up_proj.weight", &L.w_up);
    t.emplace_back(p + "mlp.down_proj.weight", &L.w_down);
  }
  t.emplace_back("model.norm.weight", &w.final_norm_w);
  if (!c.tied_embeddings) t.emplace_back("lm_head.weight", &w.unembed);
  return t;
}

nlohmann::json llamaConfigJson(const ModelConfig& c) {
  if (c.rope_layout != RopeLayout::RotateHalf)
    fail("HF Llama checkpoints use rotate-half RoPE; this model uses another layout");
  nlohmann::json j = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.d_model},
      {"intermediate_size", c.d_mlp},
      {"num_hidden_layers", c.n_layers},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.n_kv_heads},
      {"head_dim", c.d_head},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.context_length},
      {"rms_norm_eps", c.norm_eps},
      {"rope_theta", c.rope_theta},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", c.tied_embeddings},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"bos_token_id", c.bos_token_id},
      {"eos_token_id", c.eos_token_id},
      {"torch_dtype", "float32"},
  };
  return j;
}

void saveHfLlama(const std::string& dir, ModelWeights& w, const ModelConfig& c,
                 const std::map<std::string, std::string>& metadata) {
  std::filesystem::create_directories(dir);
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (auto& [name, t] : llamaParameterTable(w, c))
    tensors.emplace_back(name, t->detach().to(at::kFloat).contiguous());
  writeSafetensors(dir + "/model.safetensors", tensors, metadata);
  const std::string text = llamaConfigJson(c).dump(2) + "\n";
  AtomicFile f(dir + "/config.json");
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace hs
