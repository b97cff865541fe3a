#pragma once
// An 8B-shaped Llama checkpoint (Llama-3.1-8B's config: 32 layers, d_model 4096, 32 heads, 8 kv heads, d_mlp
// 14336, vocab 128256, bf16) whose safetensors file is sparse: a real header, 16 GB of holes for the data. It
// costs no disk and no time, and anything that reads only headers handles it as the real thing; reading a
// weight would give zeros.
#include <QTemporaryDir>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace hs::test {

struct RealShape {
  int layers = 32, d = 4096, heads = 32, kvHeads = 8, dHead = 128, dMlp = 14336, vocab = 128256;
  bool tied = false;
};

// Names and shapes in HF Llama order.
inline std::vector<std::pair<std::string, std::vector<int64_t>>> realShapeTensors(const RealShape& s) {
  const int64_t d = s.d, q = int64_t(s.heads) * s.dHead, kv = int64_t(s.kvHeads) * s.dHead, m = s.dMlp;
  std::vector<std::pair<std::string, std::vector<int64_t>>> t = {{"model.embed_tokens.weight", {s.vocab, d}}};
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {d}});
    t.push_back({p + "self_attn.q_proj.weight", {q, d}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, q}});
    t.push_back({p + "post_attention_layernorm.weight", {d}});
    t.push_back({p + "mlp.gate_proj.weight", {m, d}});
    t.push_back({p + "mlp.up_proj.weight", {m, d}});
    t.push_back({p + "mlp.down_proj.weight", {d, m}});
  }
  t.push_back({"model.norm.weight", {d}});
  if (!s.tied) t.push_back({"lm_head.weight", {s.vocab, d}});
  return t;
}

inline long long realShapeParams(const RealShape& s) {
  long long n = 0;
  for (const auto& [name, shape] : realShapeTensors(s)) {
    long long k = 1;
    for (int64_t x : shape)
      k *= x;
    n += k;
  }
  return n;
}

// Writes config.json and a sparse bf16 model.safetensors into `dir`; returns the folder.
inline std::string writeSparseRealShape(const std::string& dir, const RealShape& s = {}) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : realShapeTensors(s)) {
    uint64_t bytes = 2;
    for (int64_t x : shape)
      bytes *= static_cast<uint64_t>(x);
    header[name] = {{"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8)
    h.push_back(' ');
  const std::string file = dir + "/model.safetensors";
  {
    std::ofstream out(file, std::ios::binary);
    const uint64_t n = h.size();
    for (int i = 0; i < 8; ++i)
      out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << h;
  }
  std::filesystem::resize_file(file, 8 + h.size() + offset);  // the data: holes
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"model_type", "llama"},
                                 {"hidden_size", s.d},
                                 {"intermediate_size", s.dMlp},
                                 {"num_hidden_layers", s.layers},
                                 {"num_attention_heads", s.heads},
                                 {"num_key_value_heads", s.kvHeads},
                                 {"head_dim", s.dHead},
                                 {"vocab_size", s.vocab},
                                 {"max_position_embeddings", 131072},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 500000.0},
                                 {"rope_scaling",
                                  {{"factor", 8.0},
                                   {"low_freq_factor", 1.0},
                                   {"high_freq_factor", 4.0},
                                   {"original_max_position_embeddings", 8192},
                                   {"rope_type", "llama3"}}},
                                 {"tie_word_embeddings", s.tied},
                                 {"hidden_act", "silu"},
                                 {"torch_dtype", "bfloat16"}};
  std::ofstream(dir + "/config.json") << config.dump(1);
  return dir;
}

}  // namespace hs::test
