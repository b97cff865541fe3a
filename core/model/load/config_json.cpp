#include "model/load/config_json.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "model/config_limits.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

const std::map<std::string, std::string>& architectureToModelType() {
  static const std::map<std::string, std::string> m = {
      {"GPT2LMHeadModel", "gpt2"},        {"GPT2Model", "gpt2"},
      {"LlamaForCausalLM", "llama"},      {"LlamaModel", "llama"},
      {"MistralForCausalLM", "mistral"},  {"MistralModel", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"},      {"Qwen2Model", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"},      {"Qwen3Model", "qwen3"},
      {"GPTNeoXForCausalLM", "gpt_neox"}, {"GPTNeoXModel", "gpt_neox"},
      {"Olmo2ForCausalLM", "olmo2"},      {"Olmo2Model", "olmo2"},
  };
  return m;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The explicit limit of each size field; a field not listed is bounded by what an int holds.
int64_t limitOf(const std::string& key) {
  static const std::map<std::string, int64_t> m = {
      {"num_hidden_layers", limits::kMaxLayers},
      {"n_layer", limits::kMaxLayers},
      {"num_attention_heads", limits::kMaxHeads},
      {"n_head", limits::kMaxHeads},
      {"num_key_value_heads", limits::kMaxHeads},
      {"hidden_size", limits::kMaxDModel},
      {"n_embd", limits::kMaxDModel},
      {"head_dim", limits::kMaxDHead},
      {"intermediate_size", limits::kMaxDMlp},
      {"n_inner", limits::kMaxDMlp},
      {"vocab_size", limits::kMaxVocab},
      {"max_position_embeddings", limits::kMaxContext},
      {"n_positions", limits::kMaxContext},
      {"original_max_position_embeddings", limits::kMaxContext},
  };
  auto it = m.find(key);
  return it == m.end() ? std::numeric_limits<int>::max() : it->second;
}

// Typed access to config.json fields; every error names the file and the field.
class Fields {
 public:
  Fields(const json& j, const std::string& path) : j_(j), path_(path) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  int requiredInt(const std::string& key) const {
    if (!has(key)) fail(path_, ": missing required field \"", key, "\"");
    return intOf(key);
  }
  int optInt(const std::string& key, int dflt) const { return has(key) ? intOf(key) : dflt; }
  int positiveInt(const std::string& key) const {
    const int v = requiredInt(key);
    if (v <= 0) fail(path_, ": field \"", key, "\" must be positive, found ", v);
    return v;
  }
  int optPositiveInt(const std::string& key, int dflt) const {
    const int v = optInt(key, dflt);
    if (v <= 0) fail(path_, ": field \"", key, "\" must be positive, found ", v);
    return v;
  }
  double optDouble(const std::string& key, double dflt) const {
    if (!has(key)) return dflt;
    if (!j_.at(key).is_number())
      fail(path_, ": field \"", key, "\" must be a number, found ", jsonExcerpt(j_.at(key)));
    return j_.at(key).get<double>();
  }
  double optPositiveDouble(const std::string& key, double dflt) const {
    const double v = optDouble(key, dflt);
    if (!(std::isfinite(v) && v > 0))
      fail(path_, ": field \"", key, "\" must be a finite number > 0, found ", v);
    return v;
  }
  bool optBool(const std::string& key, bool dflt) const {
    if (!has(key)) return dflt;
    if (!j_.at(key).is_boolean())
      fail(path_, ": field \"", key, "\" must be true or false, found ", jsonExcerpt(j_.at(key)));
    return j_.at(key).get<bool>();
  }
  std::string optString(const std::string& key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    if (!j_.at(key).is_string())
      fail(path_, ": field \"", key, "\" must be a string, found ", jsonExcerpt(j_.at(key)));
    return j_.at(key).get<std::string>();
  }
  // bos/eos ids may be an int, null or a list (Llama-3.1 eos); the first id is kept.
  int optTokenId(const std::string& key) const {
    if (!has(key)) return -1;
    const json& v = j_.at(key);
    if (v.is_array() && v.empty()) return -1;
    const JsonNode id = v.is_array() ? JsonNode(v, path_, key).at(size_t{0}) : JsonNode(v, path_, key);
    if (!id.isInteger())
      fail(path_, ": field \"", key, "\" must be a token id or a list of ids, found ", jsonExcerpt(v));
    return id.intIn(-1, static_cast<int>(limits::kMaxVocab - 1));
  }
  const json& raw(const std::string& key) const { return j_.at(key); }
  const std::string& path() const { return path_; }

 private:
  // Read as 64 bits (a whole float such as 64.0 counts) and bounded by the field's limit, so
  // 4294967304 is refused instead of wrapping to 8.
  int intOf(const std::string& key) const {
    const json& v = j_.at(key);
    const bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                 v.get<double>() == std::floor(v.get<double>()));
    if (!whole) fail(path_, ": field \"", key, "\" must be an integer, found ", jsonExcerpt(v));
    const int64_t limit = limitOf(key);
    const bool tooBig = v.is_number_unsigned()  ? v.get<uint64_t>() > static_cast<uint64_t>(limit)
                        : v.is_number_integer() ? v.get<int64_t>() > limit
                                                : v.get<double>() > static_cast<double>(limit);
    const bool tooSmall = v.is_number_float()      ? v.get<double>() < std::numeric_limits<int>::min()
                          : v.is_number_unsigned() ? false
                                                   : v.get<int64_t>() < std::numeric_limits<int>::min();
    if (tooBig || tooSmall)
      fail(path_, ": field \"", key, "\" is ", jsonExcerpt(v), ", out of range (the limit is ", limit, ")");
    return v.is_number_float() ? static_cast<int>(v.get<double>()) : static_cast<int>(v.get<int64_t>());
  }

  const json& j_;
  std::string path_;
};

std::string detectModelType(const json& j, const std::string& path) {
  const auto& supported = supportedModelTypes();
  if (j.contains("model_type") && !j["model_type"].is_null()) {
    if (!j["model_type"].is_string()) fail(path, ": field \"model_type\" must be a string");
    const std::string mt = j["model_type"].get<std::string>();
    for (const auto& s : supported)
      if (s == mt) return mt;
    fail(path, ": unsupported model_type \"", mt, "\"; supported: ", joined(supported));
  }
  if (j.contains("architectures") && j["architectures"].is_array()) {
    std::vector<std::string> seen;
    for (const auto& a : j["architectures"]) {
      if (!a.is_string()) continue;
      auto it = architectureToModelType().find(a.get<std::string>());
      if (it != architectureToModelType().end()) return it->second;
      seen.push_back(a.get<std::string>());
    }
    fail(path, ": unsupported architectures [", joined(seen),
         "] and no model_type; supported model types: ", joined(supported));
  }
  fail(path,
       ": missing required field \"model_type\" (nor \"architectures\"); supported: ", joined(supported));
}

void parseRopeScaling(const Fields& f, ModelConfig& c) {
  if (!f.has("rope_scaling")) return;
  const json& rs = f.raw("rope_scaling");
  const std::string where = f.path() + ": field \"rope_scaling\"";
  if (!rs.is_object()) fail(where, " must be an object or null, found ", jsonExcerpt(rs));
  Fields r(rs, where);
  const std::string type = r.optString("rope_type", r.optString("type", ""));
  if (type.empty() || type == "default") return;
  if (type != "llama3" && type != "linear")
    fail(where, ": rope type \"", type, "\" is not supported (supported: llama3, linear)");
  c.rope_scaling.type = type;
  if (!r.has("factor")) fail(where, ": missing \"factor\"");
  c.rope_scaling.factor = r.optPositiveDouble("factor", 1.0);
  if (type == "llama3") {
    for (const char* k : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!r.has(k)) fail(where, ": missing \"", k, "\" (required for rope type llama3)");
    c.rope_scaling.low_freq_factor = r.optPositiveDouble("low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = r.optPositiveDouble("high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings = r.positiveInt("original_max_position_embeddings");
    if (c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor)
      fail(where, ": high_freq_factor (", c.rope_scaling.high_freq_factor, ") must exceed low_freq_factor (",
           c.rope_scaling.low_freq_factor, ")");
  }
}

void checkActivation(const Fields& f, const std::string& key, const ModelConfig& c) {
  static const std::vector<std::string> gelu = {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"};
  if (c.mlp == MlpKind::SwiGLU) {
    if (c.activation != "silu")
      fail(f.path(), ": field \"", key, "\" is \"", c.activation, "\"; supported for ", c.model_type,
           ": silu");
    return;
  }
  for (const auto& g : gelu)
    if (g == c.activation) return;
  fail(f.path(), ": field \"", key, "\" is \"", c.activation, "\"; supported for ", c.model_type, ": ",
       joined(gelu));
}

void parseGpt2(const Fields& f, ModelConfig& c) {
  c.arch = Architecture::Gpt2;
  c.d_model = f.positiveInt("n_embd");
  c.n_layers = f.positiveInt("n_layer");
  c.n_heads = f.positiveInt("n_head");
  c.n_kv_heads = c.n_heads;
  if (c.d_model % c.n_heads != 0)
    fail(f.path(), ": field \"n_head\" (", c.n_heads, ") does not divide \"n_embd\" (", c.d_model, ")");
  c.d_head = c.d_model / c.n_heads;
  c.d_mlp = f.optPositiveInt("n_inner", 4 * c.d_model);
  c.vocab_size = f.positiveInt("vocab_size");
  c.context_length = f.optPositiveInt("n_positions", 1024);
  c.norm = NormKind::LayerNorm;
  c.norm_eps = f.optPositiveDouble("layer_norm_epsilon", 1e-5);
  c.rope_layout = RopeLayout::None;
  c.rotary_dim = 0;
  c.learned_pos_emb = true;
  c.mlp = MlpKind::Gelu;
  c.activation = f.optString("activation_function", "gelu_new");
  checkActivation(f, "activation_function", c);
  c.tied_embeddings = f.optBool("tie_word_embeddings", true);
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  if (f.optBool("scale_attn_by_inverse_layer_idx", false))
    fail(f.path(), ": field \"scale_attn_by_inverse_layer_idx\" = true is not supported");
  if (!f.optBool("scale_attn_weights", true))
    fail(f.path(), ": field \"scale_attn_weights\" = false is not supported");
  c.bos_token_id = f.optTokenId("bos_token_id");
  c.eos_token_id = f.optTokenId("eos_token_id");
}

// Llama, Mistral, Qwen2, Qwen3, OLMo-2: the decoder layout of modeling_llama.py and its descendants.
void parseLlamaLike(const Fields& f, ModelConfig& c) {
  const std::string& mt = c.model_type;
  c.arch = mt == "llama"     ? Architecture::Llama
           : mt == "mistral" ? Architecture::Mistral
           : mt == "qwen2"   ? Architecture::Qwen2
           : mt == "qwen3"   ? Architecture::Qwen3
                             : Architecture::Olmo2;
  c.d_model = f.positiveInt("hidden_size");
  c.n_layers = f.positiveInt("num_hidden_layers");
  c.n_heads = f.positiveInt("num_attention_heads");
  c.n_kv_heads = f.optPositiveInt("num_key_value_heads", c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(f.path(), ": field \"num_key_value_heads\" (", c.n_kv_heads,
         ") does not divide \"num_attention_heads\" (", c.n_heads, ")");
  if (mt == "qwen3") {
    c.d_head = f.optPositiveInt("head_dim", 128);  // Qwen3Config default, not hidden/heads
  } else if (f.has("head_dim")) {
    c.d_head = f.positiveInt("head_dim");
  } else {
    if (c.d_model % c.n_heads != 0)
      fail(f.path(), ": field \"num_attention_heads\" (", c.n_heads, ") does not divide \"hidden_size\" (",
           c.d_model, ") and there is no \"head_dim\"");
    c.d_head = c.d_model / c.n_heads;
  }
  if (c.d_head % 2 != 0) fail(f.path(), ": head_dim ", c.d_head, " must be even for rotary embeddings");
  c.d_mlp = f.positiveInt("intermediate_size");
  c.vocab_size = f.positiveInt("vocab_size");
  const int defaultContext = mt == "llama" || mt == "olmo2" ? 2048 : mt == "mistral" ? 4096 * 32 : 32768;
  c.context_length = f.optPositiveInt("max_position_embeddings", defaultContext);
  c.norm = NormKind::RMSNorm;
  c.norm_eps = f.optPositiveDouble("rms_norm_eps", mt == "olmo2" ? 1e-5 : 1e-6);
  c.rope_layout = RopeLayout::RotateHalf;
  c.rope_theta = f.optPositiveDouble("rope_theta", 10000.0);
  c.rotary_dim = c.d_head;
  if (f.has("partial_rotary_factor") && f.optDouble("partial_rotary_factor", 1.0) != 1.0)
    fail(f.path(), ": field \"partial_rotary_factor\" != 1 is not supported for ", mt);
  parseRopeScaling(f, c);
  c.mlp = MlpKind::SwiGLU;
  c.activation = f.optString("hidden_act", "silu");
  if (c.activation == "swish") c.activation = "silu";
  checkActivation(f, "hidden_act", c);
  c.tied_embeddings = f.optBool("tie_word_embeddings", false);
  if (mt == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v always biased, o_proj never
    c.attn_out_bias = false;
  } else {
    c.qkv_bias = c.attn_out_bias = f.optBool("attention_bias", false);
  }
  if (f.optBool("mlp_bias", false)) fail(f.path(), ": field \"mlp_bias\" = true is not supported for ", mt);
  c.mlp_bias = false;
  if (mt == "qwen3") c.qk_norm = QkNorm::PerHead;
  if (mt == "olmo2") {
    c.qk_norm = QkNorm::Full;
    c.post_norms = true;
  }
  c.bos_token_id = f.optTokenId("bos_token_id");
  c.eos_token_id = f.optTokenId("eos_token_id");
}

void parseGptNeoX(const Fields& f, ModelConfig& c) {
  c.arch = Architecture::GptNeoX;
  c.d_model = f.positiveInt("hidden_size");
  c.n_layers = f.positiveInt("num_hidden_layers");
  c.n_heads = f.positiveInt("num_attention_heads");
  c.n_kv_heads = c.n_heads;
  if (c.d_model % c.n_heads != 0)
    fail(f.path(), ": field \"num_attention_heads\" (", c.n_heads, ") does not divide \"hidden_size\" (",
         c.d_model, ")");
  c.d_head = c.d_model / c.n_heads;
  c.d_mlp = f.positiveInt("intermediate_size");
  c.vocab_size = f.positiveInt("vocab_size");
  c.context_length = f.optPositiveInt("max_position_embeddings", 2048);
  c.norm = NormKind::LayerNorm;
  c.norm_eps = f.optPositiveDouble("layer_norm_eps", 1e-5);
  c.rope_layout = RopeLayout::RotateHalf;
  // Newer configs say rope_theta / partial_rotary_factor; older ones rotary_emb_base / rotary_pct.
  c.rope_theta = f.optPositiveDouble("rope_theta", f.optPositiveDouble("rotary_emb_base", 10000.0));
  const double pct = f.optDouble("partial_rotary_factor", f.optDouble("rotary_pct", 0.25));
  if (!(pct > 0 && pct <= 1)) fail(f.path(), ": field \"rotary_pct\" must be in (0, 1], found ", pct);
  c.rotary_dim = static_cast<int>(c.d_head * pct);  // int(head_size * rotary_pct), as GPTNeoXAttention
  if (c.rotary_dim <= 0 || c.rotary_dim % 2 != 0)
    fail(f.path(), ": field \"rotary_pct\" ", pct, " gives ", c.rotary_dim, " rotary dims of a ", c.d_head,
         "-dim head; expected a positive even number");
  parseRopeScaling(f, c);
  c.parallel_residual = f.optBool("use_parallel_residual", true);
  c.mlp = MlpKind::Gelu;
  c.activation = f.optString("hidden_act", "gelu");
  checkActivation(f, "hidden_act", c);
  c.tied_embeddings = f.optBool("tie_word_embeddings", false);
  c.qkv_bias = c.attn_out_bias = f.optBool("attention_bias", true);
  c.mlp_bias = true;
  c.bos_token_id = f.optTokenId("bos_token_id");
  c.eos_token_id = f.optTokenId("eos_token_id");
}

}  // namespace

const std::vector<std::string>& supportedModelTypes() {
  static const std::vector<std::string> types = {"gpt2",  "llama",    "mistral", "qwen2",
                                                 "qwen3", "gpt_neox", "olmo2"};
  return types;
}

ModelConfig parseHfConfig(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) fail(path, ": expected a JSON object, found ", j.type_name());
  ModelConfig c;
  c.model_type = detectModelType(j, path);
  c.source_format = "hf";
  Fields f(j, path);
  if (c.model_type == "gpt2") {
    parseGpt2(f, c);
  } else if (c.model_type == "gpt_neox") {
    parseGptNeoX(f, c);
  } else {
    parseLlamaLike(f, c);
  }
  // transformers >= 4.56 writes "dtype"; older versions "torch_dtype".
  c.dtype = f.optString("torch_dtype", f.optString("dtype", "float32"));
  if (c.bos_token_id >= c.vocab_size || c.eos_token_id >= c.vocab_size)
    fail(path, ": bos/eos token id (", c.bos_token_id, "/", c.eos_token_id, ") is outside the vocabulary of ",
         c.vocab_size);
  limits::checkModelConfig(c, path);
  return c;
}

ModelConfig readHfConfig(const std::string& configJsonPath) {
  return parseHfConfig(readJsonFile(configJsonPath, json_limits::modelConfig()), configJsonPath);
}

}  // namespace hs
