// readGgufModel: GGUF "llama" architecture -> ModelConfig + tensors under Hugging Face Llama names.
#include <ATen/ATen.h>

#include <cstdlib>

#include "model/config_limits.h"
#include "model/io/gguf.h"
#include "util/error.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

class Meta {
 public:
  Meta(const GgufFile& f) : f_(f) {}

  bool has(const std::string& key) const { return f_.metadata().contains(key); }

  // A whole number in [lo, hi], read as 64 bits: 2^40 is refused with the limit, never cast to 0.
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const {
    const json& v = get(key);
    if (!v.is_number_integer())
      fail(f_.path(), ": metadata ", key, " is ", jsonExcerpt(v), ", expected an integer");
    const bool above =
        v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi) : v.get<int64_t>() > hi;
    if (above || (!v.is_number_unsigned() && v.get<int64_t>() < lo))
      fail(f_.path(), ": metadata ", key, " is ", jsonExcerpt(v), ", out of range ", lo, "..", hi);
    return v.get<int64_t>();
  }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const {
    return has(key) ? integer(key, lo, hi) : fallback;
  }
  // A token id, or -1 when absent or "none" (llama.cpp writes that as the U32 0xFFFFFFFF).
  int tokenId(const std::string& key) const {
    if (!has(key)) return -1;
    const json& v = get(key);
    if (v.is_number_unsigned() && v.get<uint64_t>() == 0xFFFFFFFFull) return -1;
    return static_cast<int>(integer(key, -1, limits::kMaxVocab - 1));
  }

  double number(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_number()) fail(f_.path(), ": metadata ", key, " is ", jsonExcerpt(v), ", expected a number");
    return v.get<double>();
  }
  double number(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }

  std::string string(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_string()) fail(f_.path(), ": metadata ", key, " is ", v.type_name(), ", expected a string");
    return v.get<std::string>();
  }

 private:
  const json& get(const std::string& key) const {
    auto it = f_.metadata().find(key);
    if (it == f_.metadata().end()) fail(f_.path(), ": metadata key ", key, " is missing");
    return *it;
  }
  const GgufFile& f_;
};

// llama.cpp tensor names (LLM_TENSOR_NAMES for LLM_ARCH_LLAMA) -> Hugging Face Llama names.
const std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

// "" when the name has no mapping; sets *layer for blk.N.* names.
std::string hfName(const std::string& g, long* layer) {
  *layer = -1;
  if (g == "token_embd.weight") return "model.embed_tokens.weight";
  if (g == "output_norm.weight") return "model.norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  if (g.rfind("blk.", 0) != 0) return "";
  const size_t dot = g.find('.', 4);
  if (dot == std::string::npos || dot == 4) return "";
  char* end = nullptr;
  const std::string num = g.substr(4, dot - 4);
  const long l = std::strtol(num.c_str(), &end, 10);
  if (*end != '\0' || l < 0 || num.size() > 1 + std::to_string(l).size()) return "";
  const std::string rest = g.substr(dot + 1);  // "attn_q.weight"
  const size_t dot2 = rest.rfind('.');
  if (dot2 == std::string::npos) return "";
  const std::string base = rest.substr(0, dot2), suffix = rest.substr(dot2);  // ".weight"
  if (suffix != ".weight") return "";
  for (const auto& [gg, hf] : kLayerNames)
    if (base == gg) {
      *layer = l;
      return "model.layers." + std::to_string(l) + "." + hf + suffix;
    }
  return "";
}

std::string torchDtypeOfGgml(uint32_t t) {
  switch (t) {
    case kGgmlF16:
      return "float16";
    case kGgmlBF16:
      return "bfloat16";
    default:
      return "float32";  // F32, or quantised types dequantised to F32
  }
}

}  // namespace

RawCheckpoint readGgufModel(const std::string& path, bool withTensors) {
  auto f = GgufFile::open(path);
  const Meta m(*f);
  const std::string arch = m.string("general.architecture");
  if (arch != "llama")
    fail(path, ": general.architecture is \"", arch,
         "\"; supported GGUF architectures: llama (Llama, Mistral)");
  const std::string p = "llama.";

  RawCheckpoint ck;
  ck.path = path;
  // llama.cpp converters keep Meta's interleaved q/k rows.
  ck.config = llamaBaseConfig("gguf", RopeLayout::Interleaved);
  ModelConfig& c = ck.config;
  c.n_layers = static_cast<int>(m.integer(p + "block_count", 1, limits::kMaxLayers));
  c.d_model = static_cast<int>(m.integer(p + "embedding_length", 1, limits::kMaxDModel));
  c.d_mlp = static_cast<int>(m.integer(p + "feed_forward_length", 1, limits::kMaxDMlp));
  c.n_heads = static_cast<int>(m.integer(p + "attention.head_count", 1, limits::kMaxHeads));
  c.n_kv_heads = static_cast<int>(m.integer(p + "attention.head_count_kv", 1, limits::kMaxHeads, c.n_heads));
  c.context_length = static_cast<int>(m.integer(p + "context_length", 1, limits::kMaxContext));
  c.norm_eps = m.number(p + "attention.layer_norm_rms_epsilon");
  c.rope_theta = m.number(p + "rope.freq_base", 10000.0);
  auto positive = [&](int v, const char* what) {
    if (v <= 0) fail(path, ": metadata ", p, what, " = ", v, ", expected a positive value");
  };
  positive(c.n_layers, "block_count");
  positive(c.d_model, "embedding_length");
  positive(c.d_mlp, "feed_forward_length");
  positive(c.n_heads, "attention.head_count");
  positive(c.n_kv_heads, "attention.head_count_kv");
  positive(c.context_length, "context_length");
  if (c.n_heads % c.n_kv_heads != 0)
    fail(path, ": attention.head_count ", c.n_heads, " is not a multiple of head_count_kv ", c.n_kv_heads);
  if (!m.has(p + "attention.key_length") && c.d_model % c.n_heads != 0)
    fail(path, ": embedding_length ", c.d_model, " is not a multiple of head_count ", c.n_heads);
  c.d_head =
      static_cast<int>(m.integer(p + "attention.key_length", 1, limits::kMaxDHead, c.d_model / c.n_heads));
  if (m.integer(p + "attention.value_length", 1, limits::kMaxDHead, c.d_head) != c.d_head)
    fail(path, ": attention.value_length differs from key_length ", c.d_head, " (not a Llama layout)");
  c.rotary_dim = static_cast<int>(m.integer(p + "rope.dimension_count", 1, limits::kMaxDHead, c.d_head));
  if (c.rotary_dim <= 0 || c.rotary_dim > c.d_head || c.rotary_dim % 2 != 0)
    fail(path, ": rope.dimension_count ", c.rotary_dim, " must be even and in 1..d_head (", c.d_head, ")");

  if (m.has(p + "rope.scaling.type")) {
    const std::string type = m.string(p + "rope.scaling.type");
    if (type == "linear") {
      c.rope_scaling.type = "linear";
      c.rope_scaling.factor = m.number(p + "rope.scaling.factor");
    } else if (type != "none") {
      fail(path, ": rope.scaling.type \"", type, "\" is not supported (expected none or linear)");
    }
  } else if (m.has(p + "rope.scale_linear")) {
    c.rope_scaling.type = "linear";
    c.rope_scaling.factor = m.number(p + "rope.scale_linear");
  }
  c.bos_token_id = m.tokenId("tokenizer.ggml.bos_token_id");
  c.eos_token_id = m.tokenId("tokenizer.ggml.eos_token_id");

  // The header's sizes are checked, and their weights must fit the file (4-bit types store 0.5625 bytes
  // a value), before the loader builds a table per layer.
  {
    ModelConfig probe = c;
    probe.vocab_size = 1;
    probe.bos_token_id = probe.eos_token_id = -1;
    limits::checkModelConfig(probe, path);
    limits::checkWeightsFitFile(probe, f->mapped().size(), 0.5, path);
  }
  for (const auto& t : f->tensors()) {
    long layer = -1;
    const std::string hf = hfName(t.name, &layer);
    if (t.name == "rope_freqs.weight")
      fail(path,
           ": tensor rope_freqs.weight (per-frequency RoPE factors, Llama-3.1 scaling) is not supported");
    if (hf.empty())
      fail(path, ": tensor ", t.name,
           " has no Llama mapping (expected token_embd, output_norm, output, blk.N.{",
           "attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight)");
    if (layer >= c.n_layers)
      fail(path, ": tensor ", t.name, " belongs to layer ", layer, " but llama.block_count is ", c.n_layers);
    if (withTensors) ck.tensors[hf] = f->tensor(t.name);
  }
  if (!f->has("token_embd.weight")) fail(path, ": tensor token_embd.weight is missing");
  const auto& emb = f->info("token_embd.weight");
  if (emb.shape.size() != 2 || emb.shape[1] != c.d_model)
    fail(path, ": tensor token_embd.weight has torch shape [", emb.shape.size() == 2 ? emb.shape[0] : -1,
         ", ", emb.shape.back(), "], expected [vocab, ", c.d_model, "]");
  if (emb.shape[0] > limits::kMaxVocab)
    fail(path, ": tensor token_embd.weight has ", emb.shape[0],
         " rows (the vocabulary), more than the limit of ", limits::kMaxVocab);
  c.vocab_size = static_cast<int>(emb.shape[0]);
  c.tied_embeddings = !f->has("output.weight");
  limits::checkModelConfig(c, path);
  c.dtype = f->has("blk.0.attn_q.weight") ? torchDtypeOfGgml(f->info("blk.0.attn_q.weight").type) : "float32";
  return ck;
}

}  // namespace hs
