#include "model/load/config_json.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "model/config_limits.h"
#include "model/load/config_fields.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

const std::map<std::string, std::string>& architectureToModelType() {
  static const std::map<std::string, std::string> m = {
      {"GPT2LMHeadModel", "gpt2"},
      {"GPT2Model", "gpt2"},
      {"LlamaForCausalLM", "llama"},
      {"LlamaModel", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"MistralModel", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen2Model", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"},
      {"Qwen3Model", "qwen3"},
      {"GPTNeoXForCausalLM", "gpt_neox"},
      {"GPTNeoXModel", "gpt_neox"},
      {"Olmo2ForCausalLM", "olmo2"},
      {"Olmo2Model", "olmo2"},
      {"Gemma2ForCausalLM", "gemma2"},
      {"Gemma2Model", "gemma2"},
      {"Gemma3ForCausalLM", "gemma3_text"},
      {"Gemma3TextModel", "gemma3_text"},
      {"Gemma3ForConditionalGeneration", "gemma3"},
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
  bool isNull(const std::string& key) const { return j_.contains(key) && j_.at(key).is_null(); }

  int requiredInt(const std::string& key) const {
    if (!has(key)) fail(path_, ": missing required field \"", key, "\"");
    return intOf(key);
  }
  int optInt(const std::string& key, int dflt) const { return has(key) ? intOf(key) : dflt; }
  int positiveInt(const std::string& key) const { return positive(key, requiredInt(key)); }
  int optPositiveInt(const std::string& key, int dflt) const { return positive(key, optInt(key, dflt)); }
  double optDouble(const std::string& key, double dflt) const {
    return optOf(key, dflt, &json::is_number, "a number");
  }
  double optPositiveDouble(const std::string& key, double dflt) const {
    const double v = optDouble(key, dflt);
    if (!(std::isfinite(v) && v > 0))
      fail(path_, ": field \"", key, "\" must be a finite number > 0, found ", v);
    return v;
  }
  bool optBool(const std::string& key, bool dflt) const {
    return optOf(key, dflt, &json::is_boolean, "true or false");
  }
  std::string optString(const std::string& key, const std::string& dflt) const {
    return optOf(key, dflt, &json::is_string, "a string");
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

  int positive(const std::string& key, int v) const {
    if (v <= 0) fail(path_, ": field \"", key, "\" must be positive, found ", v);
    return v;
  }

  // The field as a T, dflt when absent; a value isType refuses fails, naming the type it `mustBe`.
  template <typename T, typename IsType>
  T optOf(const std::string& key, const T& dflt, IsType isType, const char* mustBe) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!(v.*isType)()) fail(path_, ": field \"", key, "\" must be ", mustBe, ", found ", jsonExcerpt(v));
    return v.get<T>();
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

// ---- RoPE: rope_theta / rope_scaling / partial_rotary_factor (transformers 4) or rope_parameters (5) ----

// One RoPE description: a rope_scaling object, a rope_parameters object, or one layer type's entry of it.
struct RopeBlock {
  double theta = 0;  // 0 = not given here
  RopeScaling scaling;
  double partial = 0;  // partial_rotary_factor; 0 = not given here
};

// Reads one such object. Types HeadScope computes: default, linear, llama3; any other type, and any key
// the type does not use, is refused (e.g. attention_factor would rescale cos/sin).
RopeBlock parseRopeObject(const json& o, const std::string& where) {
  if (!o.is_object()) fail(where, " must be an object or null, found ", o.type_name());
  Fields r(o, where);
  RopeBlock b;
  const std::string type = r.optString("rope_type", r.optString("type", "default"));
  std::vector<std::string> keys = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  if (type == "linear") keys.insert(keys.end(), {"factor"});
  if (type == "llama3")
    keys.insert(keys.end(),
                {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  if (type != "default" && type != "linear" && type != "llama3")
    fail(where, ": rope type \"", type, "\" is not supported (supported: default, linear, llama3)");
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!it.value().is_null() && std::find(keys.begin(), keys.end(), it.key()) == keys.end())
      fail(where, ": key \"", it.key(), "\" is not supported with rope type \"", type, "\"");
  b.theta = r.has("rope_theta") ? r.optPositiveDouble("rope_theta", 1.0) : 0.0;
  b.partial = r.has("partial_rotary_factor") ? r.optPositiveDouble("partial_rotary_factor", 1.0) : 0.0;
  if (type == "default") return b;
  b.scaling.type = type;
  if (!r.has("factor")) fail(where, ": missing \"factor\"");
  b.scaling.factor = r.optPositiveDouble("factor", 1.0);
  if (type == "llama3") {
    for (const char* k : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!r.has(k)) fail(where, ": missing \"", k, "\" (required for rope type llama3)");
    b.scaling.low_freq_factor = r.optPositiveDouble("low_freq_factor", 1.0);
    b.scaling.high_freq_factor = r.optPositiveDouble("high_freq_factor", 4.0);
    b.scaling.original_max_position_embeddings = r.positiveInt("original_max_position_embeddings");
    if (b.scaling.high_freq_factor <= b.scaling.low_freq_factor)
      fail(where, ": high_freq_factor (", b.scaling.high_freq_factor, ") must exceed low_freq_factor (",
           b.scaling.low_freq_factor, ")");
  }
  return b;
}

// The RoPE of a config, resolved as transformers 5 standardises it (RotaryEmbeddingConfigMixin): values
// inside rope_parameters first, then the top-level rope_theta / partial_rotary_factor; a top-level value
// that contradicts rope_parameters is refused as ambiguous. rope_parameters keyed by layer type
// ("full_attention", "sliding_attention": Gemma-3) gives the sliding layers their own RoPE.
struct Rope {
  RopeBlock global;
  RopeBlock sliding;  // meaningful only when perLayerType
  bool perLayerType = false;
};

Rope readRope(const Fields& f, double defaultTheta, double defaultPartial = 1.0) {
  Rope rope;
  const double topTheta = f.has("rope_theta") ? f.optPositiveDouble("rope_theta", defaultTheta) : 0.0;
  const double topPartial =
      f.has("partial_rotary_factor") ? f.optPositiveDouble("partial_rotary_factor", 1.0) : 0.0;
  if (f.has("rope_parameters")) {
    const json& rp = f.raw("rope_parameters");
    const std::string where = f.path() + ": field \"rope_parameters\"";
    if (f.has("rope_scaling"))
      fail(f.path(), ": both \"rope_parameters\" and \"rope_scaling\" are given (ambiguous: keep one)");
    if (!rp.is_object()) fail(where, " must be an object or null, found ", rp.type_name());
    bool byType = !rp.empty();
    for (auto it = rp.begin(); it != rp.end(); ++it)
      byType = byType && (it.key() == "full_attention" || it.key() == "sliding_attention");
    if (byType) {
      rope.perLayerType = true;
      if (rp.contains("full_attention"))
        rope.global = parseRopeObject(rp.at("full_attention"), where + ".full_attention");
      if (rp.contains("sliding_attention"))
        rope.sliding = parseRopeObject(rp.at("sliding_attention"), where + ".sliding_attention");
      else
        rope.sliding = rope.global;
    } else {
      rope.global = parseRopeObject(rp, where);
    }
  } else if (f.has("rope_scaling")) {
    rope.global = parseRopeObject(f.raw("rope_scaling"), f.path() + ": field \"rope_scaling\"");
  }
  for (RopeBlock* b : {&rope.global, &rope.sliding}) {
    if (topTheta > 0 && b->theta > 0 && b->theta != topTheta && !rope.perLayerType)
      fail(f.path(), ": rope_theta ", topTheta, " contradicts the RoPE parameters' rope_theta ", b->theta);
    if (topPartial > 0 && b->partial > 0 && b->partial != topPartial)
      fail(f.path(), ": partial_rotary_factor ", topPartial, " contradicts the RoPE parameters' ",
           b->partial);
    if (b->theta == 0) b->theta = topTheta > 0 ? topTheta : defaultTheta;
    if (b->partial == 0) b->partial = topPartial > 0 ? topPartial : defaultPartial;
  }
  return rope;
}

void applyGlobalRope(const Rope& rope, ModelConfig& c) {
  c.rope_theta = rope.global.theta;
  c.rope_scaling = rope.global.scaling;
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

// ---- sliding-window attention ----

// layer_types (transformers >= 4.53): one "full_attention" or "sliding_attention" per layer.
std::vector<LayerAttention> readLayerTypes(const Fields& f, int nLayers) {
  const json& lt = f.raw("layer_types");
  const std::string where = f.path() + ": field \"layer_types\"";
  if (!lt.is_array() || int(lt.size()) != nLayers)
    fail(where, " must be a list of ", nLayers, " layer types (one per layer), found ",
         lt.is_array() ? std::to_string(lt.size()) + " entries" : std::string(lt.type_name()));
  std::vector<LayerAttention> out;
  for (size_t i = 0; i < lt.size(); ++i) {
    const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : std::string(lt[i].type_name());
    if (t == "full_attention") {
      out.push_back(LayerAttention::Global);
    } else if (t == "sliding_attention") {
      out.push_back(LayerAttention::Sliding);
    } else {
      fail(where, ": entry ", i, " is \"", t, "\" (supported: full_attention, sliding_attention)");
    }
  }
  return out;
}

// Which layers attend through a sliding window, by transformers' rules:
//  mistral:       every layer when sliding_window is set (MistralConfig default 4096; null = none);
//  qwen2, qwen3:  only with use_sliding_window (default false); then layer_types when given, else the
//                 layers i >= max_window_layers (default 28) — Qwen2Config.__post_init__;
//  llama, olmo2:  never (their configs have no such field; one present is refused by the accounting).
// A sliding layer's query sees the last sliding_window positions, itself included.
void readSlidingWindow(const Fields& f, const Rope& rope, ModelConfig& c) {
  const std::string& mt = c.model_type;
  if (mt == "mistral") {
    c.sliding_window = f.isNull("sliding_window") ? 0 : f.optPositiveInt("sliding_window", 4096);
    if (c.sliding_window > 0) c.layer_attention.assign(size_t(c.n_layers), LayerAttention::Sliding);
  } else if (mt == "qwen2" || mt == "qwen3") {
    const bool use = f.optBool("use_sliding_window", false);
    const int window = f.isNull("sliding_window") ? 0 : f.optPositiveInt("sliding_window", 4096);
    const int firstSliding = f.optInt("max_window_layers", 28);
    if (firstSliding < 0) fail(f.path(), ": field \"max_window_layers\" must not be negative");
    c.sliding_window = use ? window : 0;
    if (f.has("layer_types")) {
      c.layer_attention = readLayerTypes(f, c.n_layers);
    } else if (c.sliding_window > 0) {
      for (int l = 0; l < c.n_layers; ++l)
        c.layer_attention.push_back(l >= firstSliding ? LayerAttention::Sliding : LayerAttention::Global);
    }
    const bool anySliding =
        std::count(c.layer_attention.begin(), c.layer_attention.end(), LayerAttention::Sliding) > 0;
    if (anySliding && c.sliding_window == 0)
      fail(f.path(), ": layer_types names sliding_attention layers but there is no window (",
           use ? "sliding_window is null" : "use_sliding_window is false", ")");
  }
  if (rope.perLayerType) {
    c.rope_local_theta = rope.sliding.theta;
    c.rope_local_scaling = rope.sliding.scaling;
  }
}

// The sizes of a model whose heads each have their own K/V and split d_model evenly (GPT-2, GPT-NeoX),
// under the file's own field names.
void readMhaSizes(const Fields& f, ModelConfig& c, const char* dModel, const char* layers,
                  const char* heads) {
  c.d_model = f.positiveInt(dModel);
  c.n_layers = f.positiveInt(layers);
  c.n_heads = f.positiveInt(heads);
  c.n_kv_heads = c.n_heads;
  if (c.d_model % c.n_heads != 0)
    fail(f.path(), ": field \"", heads, "\" (", c.n_heads, ") does not divide \"", dModel, "\" (", c.d_model,
         ")");
  c.d_head = c.d_model / c.n_heads;
}

void parseGpt2(const Fields& f, ModelConfig& c) {
  c.arch = Architecture::Gpt2;
  readMhaSizes(f, c, "n_embd", "n_layer", "n_head");
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
  c.rotary_dim = c.d_head;
  const Rope rope = readRope(f, 10000.0);
  applyGlobalRope(rope, c);
  for (const RopeBlock* b : {&rope.global, &rope.sliding})
    if (b->partial != 1.0)
      fail(f.path(), ": partial_rotary_factor ", b->partial, " is not supported for ", mt,
           " (its forward rotates whole heads)");
  readSlidingWindow(f, rope, c);
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
    c.norm_placement = NormPlacement::Post;
  }
  c.bos_token_id = f.optTokenId("bos_token_id");
  c.eos_token_id = f.optTokenId("eos_token_id");
}

void parseGptNeoX(const Fields& f, ModelConfig& c) {
  c.arch = Architecture::GptNeoX;
  readMhaSizes(f, c, "hidden_size", "num_hidden_layers", "num_attention_heads");
  c.d_mlp = f.positiveInt("intermediate_size");
  c.vocab_size = f.positiveInt("vocab_size");
  c.context_length = f.optPositiveInt("max_position_embeddings", 2048);
  c.norm = NormKind::LayerNorm;
  c.norm_eps = f.optPositiveDouble("layer_norm_eps", 1e-5);
  c.rope_layout = RopeLayout::RotateHalf;
  // Newer configs say rope_theta / partial_rotary_factor (transformers 5: inside rope_parameters); older
  // ones rotary_emb_base / rotary_pct.
  const Rope rope =
      readRope(f, f.optPositiveDouble("rotary_emb_base", 10000.0), f.optDouble("rotary_pct", 0.25));
  if (rope.perLayerType) fail(f.path(), ": rope_parameters per layer type are not supported for gpt_neox");
  applyGlobalRope(rope, c);
  const double pct = rope.global.partial;
  if (!(pct > 0 && pct <= 1)) fail(f.path(), ": field \"rotary_pct\" must be in (0, 1], found ", pct);
  c.rotary_dim = static_cast<int>(c.d_head * pct);  // int(head_size * rotary_pct), as GPTNeoXAttention
  if (c.rotary_dim <= 0 || c.rotary_dim % 2 != 0)
    fail(f.path(), ": field \"rotary_pct\" ", pct, " gives ", c.rotary_dim, " rotary dims of a ", c.d_head,
         "-dim head; expected a positive even number");
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

// ---- Gemma-2 and Gemma-3 ----

// A soft-cap: absent = the family default, null = none, otherwise a positive number.
double readSoftcap(const Fields& f, const std::string& key, double dflt) {
  if (f.isNull(key)) return 0.0;
  return f.has(key) ? f.optPositiveDouble(key, 1.0) : dflt;
}

// gemma2 and gemma3_text (also the text_config of a gemma3 image-text config). Every field the file omits
// takes the default of transformers' Gemma2Config / Gemma3TextConfig (Gemma-3's image-text configs omit
// most of them); the tensor shapes then confirm the sizes. modeling_gemma2.py / modeling_gemma3.py:
//  - embeddings × sqrt(hidden_size), the factor in the compute dtype;
//  - RMSNorm × (1 + w) in float32, before and after both the attention and the MLP;
//  - GeGLU MLP (hidden_activation, gelu_pytorch_tanh); no hidden_act (that key is ignored by transformers);
//  - scores × query_pre_attn_scalar^-0.5; Gemma-2 soft-caps the scores (50) and the logits (30);
//  - sliding layers: Gemma-2 every other one from layer 0, Gemma-3 all but every sliding_window_pattern-th
//    (layer_types when given); Gemma-3's sliding layers rotate with rope_local_base_freq, unscaled;
//  - Gemma-3: per-head q/k RMSNorm (1 + w) before RoPE.
void parseGemma(const Fields& f, ModelConfig& c, bool gemma3) {
  c.arch = gemma3 ? Architecture::Gemma3 : Architecture::Gemma2;
  c.d_model = f.optPositiveInt("hidden_size", 2304);
  c.n_layers = f.optPositiveInt("num_hidden_layers", 26);
  c.n_heads = f.optPositiveInt("num_attention_heads", 8);
  c.n_kv_heads = f.optPositiveInt("num_key_value_heads", 4);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(f.path(), ": field \"num_key_value_heads\" (", c.n_kv_heads,
         ") does not divide \"num_attention_heads\" (", c.n_heads, ")");
  c.d_head = f.optPositiveInt("head_dim", 256);
  if (c.d_head % 2 != 0) fail(f.path(), ": head_dim ", c.d_head, " must be even for rotary embeddings");
  c.d_mlp = f.optPositiveInt("intermediate_size", 9216);
  c.vocab_size = f.optPositiveInt("vocab_size", gemma3 ? 262208 : 256000);
  c.context_length = f.optPositiveInt("max_position_embeddings", gemma3 ? 131072 : 8192);
  c.norm = NormKind::RMSNorm;
  c.norm_eps = f.optPositiveDouble("rms_norm_eps", 1e-6);
  c.norm_placement = NormPlacement::PreAndPost;
  c.norm_weight_offset = true;
  c.scale_embeddings = true;
  c.rope_layout = RopeLayout::RotateHalf;
  c.rotary_dim = c.d_head;
  c.mlp = MlpKind::SwiGLU;
  c.activation = f.isNull("hidden_activation") ? "gelu_pytorch_tanh"
                                               : f.optString("hidden_activation", "gelu_pytorch_tanh");
  static const std::vector<std::string> gelu = {"gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu"};
  if (std::find(gelu.begin(), gelu.end(), c.activation) == gelu.end())
    fail(f.path(), ": field \"hidden_activation\" is \"", c.activation, "\"; supported for ", c.model_type,
         ": ", joined(gelu));
  c.tied_embeddings = f.optBool("tie_word_embeddings", true);
  c.qkv_bias = c.attn_out_bias = f.optBool("attention_bias", false);
  c.mlp_bias = false;
  if (gemma3) c.qk_norm = QkNorm::PerHead;
  c.query_pre_attn_scalar = f.optPositiveDouble("query_pre_attn_scalar", 256);
  c.attn_logit_softcap = readSoftcap(f, "attn_logit_softcapping", gemma3 ? 0.0 : 50.0);
  c.final_logit_softcap = readSoftcap(f, "final_logit_softcapping", gemma3 ? 0.0 : 30.0);
  if (f.optBool("use_bidirectional_attention", false))
    fail(f.path(), ": field \"use_bidirectional_attention\" = true (a non-causal encoder) is not supported");

  // Which layers slide, and over how many positions.
  if (f.isNull("sliding_window"))
    fail(f.path(), ": field \"sliding_window\" is null, but ", c.model_type, " has sliding-window layers");
  c.sliding_window = f.optPositiveInt("sliding_window", 4096);
  if (f.has("sliding_window_size") && f.positiveInt("sliding_window_size") != c.sliding_window)
    fail(f.path(), ": field \"sliding_window_size\" (", f.positiveInt("sliding_window_size"),
         ") differs from \"sliding_window\" (", c.sliding_window,
         "); transformers reads only sliding_window");
  if (f.has("layer_types")) {
    c.layer_attention = readLayerTypes(f, c.n_layers);
  } else {
    // transformers 5 writes the pattern as "_sliding_window_pattern" (beside layer_types, which it derives
    // from it); older files as "sliding_window_pattern".
    const int pattern =
        gemma3 ? f.optPositiveInt("sliding_window_pattern", f.optPositiveInt("_sliding_window_pattern", 6))
               : 2;
    for (int l = 0; l < c.n_layers; ++l)
      c.layer_attention.push_back((l + 1) % pattern != 0 ? LayerAttention::Sliding : LayerAttention::Global);
  }

  // RoPE: Gemma-2 one base for all layers; Gemma-3 rope_theta (+ rope_scaling) for the global layers and
  // rope_local_base_freq, unscaled, for the sliding ones — or rope_parameters per layer type.
  const Rope rope = readRope(f, gemma3 ? 1e6 : 10000.0);
  applyGlobalRope(rope, c);
  for (const RopeBlock* b : {&rope.global, &rope.sliding})
    if (b->partial != 1.0)
      fail(f.path(), ": partial_rotary_factor ", b->partial, " is not supported for ", c.model_type);
  if (rope.perLayerType) {
    c.rope_local_theta = rope.sliding.theta;
    c.rope_local_scaling = rope.sliding.scaling;
  } else if (gemma3) {
    if (f.has("rope_parameters") && f.has("rope_local_base_freq"))
      fail(f.path(),
           ": rope_local_base_freq beside a rope_parameters without per-layer-type entries (ambiguous)");
    c.rope_local_theta = f.optPositiveDouble("rope_local_base_freq", 10000.0);
  }
  c.bos_token_id = f.optTokenId("bos_token_id");
  c.eos_token_id = f.optTokenId("eos_token_id");
}

// ---- config keys each reader accounts for (beside harmlessConfigKeys()) ----

const std::vector<std::string>& familyConfigKeys(const std::string& mt) {
  static const std::vector<std::string> gpt2 = {
      "n_embd", "n_layer", "n_head", "n_inner", "vocab_size", "n_positions", "n_ctx", "layer_norm_epsilon",
      "activation_function", "tie_word_embeddings", "scale_attn_by_inverse_layer_idx", "scale_attn_weights",
      // float32 upcast of the attention (numerics only) and the sequence-summary head (not the LM).
      "reorder_and_upcast_attn", "summary_type", "summary_use_proj", "summary_activation",
      "summary_proj_to_labels", "summary_first_dropout"};
  static const std::vector<std::string> llama = {"hidden_size",
                                                 "num_hidden_layers",
                                                 "num_attention_heads",
                                                 "num_key_value_heads",
                                                 "head_dim",
                                                 "intermediate_size",
                                                 "vocab_size",
                                                 "max_position_embeddings",
                                                 "rms_norm_eps",
                                                 "rope_theta",
                                                 "rope_scaling",
                                                 "rope_parameters",
                                                 "partial_rotary_factor",
                                                 "hidden_act",
                                                 "tie_word_embeddings",
                                                 "attention_bias",
                                                 "mlp_bias"};
  static const std::vector<std::string> mistral = [] {
    std::vector<std::string> k = llama;
    k.push_back("sliding_window");
    return k;
  }();
  static const std::vector<std::string> qwen = [] {
    std::vector<std::string> k = llama;
    k.insert(k.end(), {"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"});
    return k;
  }();
  static const std::vector<std::string> neox = {"hidden_size",
                                                "num_hidden_layers",
                                                "num_attention_heads",
                                                "intermediate_size",
                                                "vocab_size",
                                                "max_position_embeddings",
                                                "layer_norm_eps",
                                                "rope_theta",
                                                "rotary_emb_base",
                                                "rotary_pct",
                                                "partial_rotary_factor",
                                                "rope_scaling",
                                                "rope_parameters",
                                                "use_parallel_residual",
                                                "hidden_act",
                                                "tie_word_embeddings",
                                                "attention_bias"};
  static const std::vector<std::string> gemma2 = {
      "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
      "intermediate_size", "vocab_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
      "rope_scaling", "rope_parameters", "partial_rotary_factor", "hidden_activation",
      // transformers' Gemma-2/3 ignore hidden_act (the MLP uses hidden_activation); older files have both.
      "hidden_act", "tie_word_embeddings", "attention_bias", "query_pre_attn_scalar", "sliding_window",
      "sliding_window_size", "layer_types", "final_logit_softcapping", "attn_logit_softcapping",
      "use_bidirectional_attention"};
  static const std::vector<std::string> gemma3 = [] {
    std::vector<std::string> k = gemma2;
    k.insert(k.end(), {"rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern"});
    return k;
  }();
  // The image-text wrapper: its text model is text_config; the rest describes images.
  static const std::vector<std::string> gemma3Wrapper = {
      "text_config",       "vision_config",  "mm_tokens_per_image", "boi_token_index", "eoi_token_index",
      "image_token_index", "image_token_id", "boi_token_id",        "eoi_token_id"};
  if (mt == "gpt2") return gpt2;
  if (mt == "mistral") return mistral;
  if (mt == "qwen2" || mt == "qwen3") return qwen;
  if (mt == "gpt_neox") return neox;
  if (mt == "gemma2") return gemma2;
  if (mt == "gemma3_text") return gemma3;
  if (mt == "gemma3") return gemma3Wrapper;
  return llama;  // llama, olmo2
}

// gemma3 (Gemma3ForConditionalGeneration): the text model is text_config; HeadScope runs only that part
// (the vision tower's tensors are accounted for and left unread, see architecture.cpp).
void parseGemma3TextConfig(const Fields& f, ModelConfig& c) {
  if (!f.has("text_config")) fail(f.path(), ": a gemma3 config needs \"text_config\" (its text model)");
  const json& tc = f.raw("text_config");
  const std::string where = f.path() + ": text_config";
  if (!tc.is_object()) fail(where, " must be an object, found ", tc.type_name());
  const Fields t(tc, where);
  if (t.has("model_type") && t.optString("model_type", "") != "gemma3_text")
    fail(where, ": model_type \"", t.optString("model_type", ""), "\", expected \"gemma3_text\"");
  parseGemma(t, c, true);
  refuseUnaccountedKeys(tc, where, "gemma3_text", familyConfigKeys("gemma3_text"));
  if (c.bos_token_id < 0) c.bos_token_id = f.optTokenId("bos_token_id");
  if (c.eos_token_id < 0) c.eos_token_id = f.optTokenId("eos_token_id");
}

}  // namespace

const std::vector<std::string>& supportedModelTypes() {
  static const std::vector<std::string> types = {"gpt2",     "llama", "mistral", "qwen2",       "qwen3",
                                                 "gpt_neox", "olmo2", "gemma2",  "gemma3_text", "gemma3"};
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
  } else if (c.model_type == "gemma2" || c.model_type == "gemma3_text") {
    parseGemma(f, c, c.model_type == "gemma3_text");
  } else if (c.model_type == "gemma3") {
    parseGemma3TextConfig(f, c);
  } else {
    parseLlamaLike(f, c);
  }
  refuseUnaccountedKeys(j, path, c.model_type, familyConfigKeys(c.model_type));
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
