#include "model/load/architecture.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <set>

#include "model/huge_page_tensor.h"
#include "model/io/safetensors.h"
#include "util/error.h"

namespace hs {

// ---------------------------------------------------------------------------------------------------
// Lookups

SafetensorsLookup::SafetensorsLookup(std::shared_ptr<const SafetensorsCheckpoint> ckpt)
    : ckpt_(std::move(ckpt)) {}
std::vector<std::string> SafetensorsLookup::names() const {
  return ckpt_->names();
}
at::Tensor SafetensorsLookup::tensor(const std::string& name) const {
  return ckpt_->tensor(name);
}
std::string SafetensorsLookup::fileOf(const std::string& name) const {
  return ckpt_->has(name) ? ckpt_->fileOf(name) : ckpt_->path();
}
std::vector<int64_t> SafetensorsLookup::shape(const std::string& name) const {
  return ckpt_->entry(name).shape;
}
void SafetensorsLookup::release(const std::string& name) const {
  ckpt_->release(name);
}
TensorLookup::Alias SafetensorsLookup::aliasOf(const std::string& name) const {
  for (const auto& [file, metadata] : ckpt_->fileMetadata()) {
    auto it = metadata.find(name);
    if (it != metadata.end()) return {it->second, file};
  }
  return {};
}

MapLookup::MapLookup(std::map<std::string, at::Tensor> tensors, std::string path)
    : tensors_(std::move(tensors)), path_(std::move(path)) {}
std::vector<std::string> MapLookup::names() const {
  std::vector<std::string> out;
  for (const auto& kv : tensors_)
    out.push_back(kv.first);
  return out;
}
at::Tensor MapLookup::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(path_, ": no tensor ", name);
  return it->second;
}

// ---------------------------------------------------------------------------------------------------
// The declarative tables

namespace {

enum class Transform {
  Copy,       // stored as the canonical tensor
  Transpose,  // GPT-2 Conv1D weight: stored [in, out], canonical [out, in]
  Gpt2Qkv,    // GPT-2 c_attn: weight [d, 3d] (Conv1D) / bias [3d]; q, k, v are consecutive thirds
  NeoXQkv,    // GPT-NeoX query_key_value: rows [n_heads, 3, d_head] interleaved per head
};

// Where a (transformed) tensor goes: a member of one layer, or of the model.
struct Slot {
  int layer = -1;
  at::Tensor LayerWeights::*layerMember = nullptr;
  at::Tensor ModelWeights::*modelMember = nullptr;
};

struct TensorSpec {
  std::string key;             // checkpoint key
  std::vector<int64_t> shape;  // as stored
  std::string meaning;         // the shape in config terms, for error messages
  Transform transform = Transform::Copy;
  std::vector<Slot> slots;      // one, or q/k/v for the fused splits; empty = checked, then dropped
  bool optional = false;        // may be absent (lm_head.weight of a tied checkpoint)
  std::string tiedAlternative;  // tied embedding: the head's key, read when only the head was kept
};

class Table {
 public:
  void add(std::string key, std::vector<int64_t> shape, std::string meaning, std::vector<Slot> slots,
           Transform t = Transform::Copy, bool optional = false) {
    specs.push_back({std::move(key), std::move(shape), std::move(meaning), t, std::move(slots), optional});
  }
  std::vector<TensorSpec> specs;
  // Key prefixes of parts the text forward does not use (Gemma-3's vision tower), accounted and never read.
  std::vector<std::string> unusedPrefixes;
};

Slot model(at::Tensor ModelWeights::*m) {
  return {-1, nullptr, m};
}
Slot layer(int l, at::Tensor LayerWeights::*m) {
  return {l, m, nullptr};
}

// GPT-2: transformer.h.N.* (GPT2LMHeadModel) or h.N.* (GPT2Model, the hub's gpt2 files).
Table gpt2Table(const ModelConfig& c, const std::string& p) {
  const int64_t d = c.d_model, m = c.d_mlp, V = c.vocab_size, P = c.context_length;
  Table t;
  t.add(p + "wte.weight", {V, d}, "[vocab_size, n_embd]", {model(&ModelWeights::tok_emb)});
  t.add(p + "wpe.weight", {P, d}, "[n_positions, n_embd]", {model(&ModelWeights::pos_emb)});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string h = p + "h." + std::to_string(l) + ".";
    using L = LayerWeights;
    t.add(h + "ln_1.weight", {d}, "[n_embd]", {layer(l, &L::attn_norm_w)});
    t.add(h + "ln_1.bias", {d}, "[n_embd]", {layer(l, &L::attn_norm_b)});
    t.add(h + "attn.c_attn.weight", {d, 3 * d}, "[n_embd, 3*n_embd] (Conv1D: in, out)",
          {layer(l, &L::wq), layer(l, &L::wk), layer(l, &L::wv)}, Transform::Gpt2Qkv);
    t.add(h + "attn.c_attn.bias", {3 * d}, "[3*n_embd]",
          {layer(l, &L::bq), layer(l, &L::bk), layer(l, &L::bv)}, Transform::Gpt2Qkv);
    t.add(h + "attn.c_proj.weight", {d, d}, "[n_embd, n_embd]", {layer(l, &L::wo)}, Transform::Transpose);
    t.add(h + "attn.c_proj.bias", {d}, "[n_embd]", {layer(l, &L::bo)});
    t.add(h + "ln_2.weight", {d}, "[n_embd]", {layer(l, &L::mlp_norm_w)});
    t.add(h + "ln_2.bias", {d}, "[n_embd]", {layer(l, &L::mlp_norm_b)});
    t.add(h + "mlp.c_fc.weight", {d, m}, "[n_embd, n_inner] (Conv1D: in, out)", {layer(l, &L::w_up)},
          Transform::Transpose);
    t.add(h + "mlp.c_fc.bias", {m}, "[n_inner]", {layer(l, &L::b_up)});
    t.add(h + "mlp.c_proj.weight", {m, d}, "[n_inner, n_embd] (Conv1D: in, out)", {layer(l, &L::w_down)},
          Transform::Transpose);
    t.add(h + "mlp.c_proj.bias", {d}, "[n_embd]", {layer(l, &L::b_down)});
  }
  t.add(p + "ln_f.weight", {d}, "[n_embd]", {model(&ModelWeights::final_norm_w)});
  t.add(p + "ln_f.bias", {d}, "[n_embd]", {model(&ModelWeights::final_norm_b)});
  if (c.tied_embeddings)
    t.add("lm_head.weight", {V, d}, "[vocab_size, n_embd]", {}, Transform::Copy, true);
  else
    t.add("lm_head.weight", {V, d}, "[vocab_size, n_embd]", {model(&ModelWeights::unembed)});
  return t;
}

// Llama, Mistral, Qwen2 (+ q/k/v biases), Qwen3 (+ per-head q/k norms), OLMo-2 (post-norms, full q/k norms),
// Gemma-2/3 (pre- and post-norms around both blocks; Gemma-3 per-head q/k norms). `p` is the decoder's
// prefix ("model." or, in a Gemma-3 image-text checkpoint, "language_model.model." /
// "model.language_model.").
Table llamaTable(const ModelConfig& c, const std::string& p, const std::string& lmHead) {
  const int64_t d = c.d_model, m = c.d_mlp, V = c.vocab_size;
  const int64_t q = static_cast<int64_t>(c.n_heads) * c.d_head,
                kv = static_cast<int64_t>(c.n_kv_heads) * c.d_head;
  Table t;
  t.add(p + "embed_tokens.weight", {V, d}, "[vocab_size, hidden_size]", {model(&ModelWeights::tok_emb)});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = p + "layers." + std::to_string(l) + ".";
    const std::string a = b + "self_attn.";
    using L = LayerWeights;
    t.add(a + "q_proj.weight", {q, d}, "[num_attention_heads*head_dim, hidden_size]", {layer(l, &L::wq)});
    t.add(a + "k_proj.weight", {kv, d}, "[num_key_value_heads*head_dim, hidden_size]", {layer(l, &L::wk)});
    t.add(a + "v_proj.weight", {kv, d}, "[num_key_value_heads*head_dim, hidden_size]", {layer(l, &L::wv)});
    t.add(a + "o_proj.weight", {d, q}, "[hidden_size, num_attention_heads*head_dim]", {layer(l, &L::wo)});
    if (c.qkv_bias) {
      t.add(a + "q_proj.bias", {q}, "[num_attention_heads*head_dim]", {layer(l, &L::bq)});
      t.add(a + "k_proj.bias", {kv}, "[num_key_value_heads*head_dim]", {layer(l, &L::bk)});
      t.add(a + "v_proj.bias", {kv}, "[num_key_value_heads*head_dim]", {layer(l, &L::bv)});
    }
    if (c.attn_out_bias) t.add(a + "o_proj.bias", {d}, "[hidden_size]", {layer(l, &L::bo)});
    if (c.qk_norm == QkNorm::PerHead) {
      t.add(a + "q_norm.weight", {c.d_head}, "[head_dim]", {layer(l, &L::q_norm_w)});
      t.add(a + "k_norm.weight", {c.d_head}, "[head_dim]", {layer(l, &L::k_norm_w)});
    } else if (c.qk_norm == QkNorm::Full) {
      t.add(a + "q_norm.weight", {q}, "[num_attention_heads*head_dim]", {layer(l, &L::q_norm_w)});
      t.add(a + "k_norm.weight", {kv}, "[num_key_value_heads*head_dim]", {layer(l, &L::k_norm_w)});
    }
    // HF names by position: post_attention_layernorm is the pre-MLP norm of Llama but the norm of the
    // attention output of OLMo-2 and Gemma; Gemma's pre-MLP norm is pre_feedforward_layernorm.
    const auto norm = [&](const std::string& name, at::Tensor L::*slot) {
      t.add(b + name + ".weight", {d}, "[hidden_size]", {layer(l, slot)});
    };
    switch (c.norm_placement) {
      case NormPlacement::Pre:
        norm("input_layernorm", &L::attn_norm_w);
        norm("post_attention_layernorm", &L::mlp_norm_w);
        break;
      case NormPlacement::Post:
        norm("post_attention_layernorm", &L::post_attn_norm_w);
        norm("post_feedforward_layernorm", &L::post_mlp_norm_w);
        break;
      case NormPlacement::PreAndPost:
        norm("input_layernorm", &L::attn_norm_w);
        norm("post_attention_layernorm", &L::post_attn_norm_w);
        norm("pre_feedforward_layernorm", &L::mlp_norm_w);
        norm("post_feedforward_layernorm", &L::post_mlp_norm_w);
        break;
    }
    t.add(b + "mlp.gate_proj.weight", {m, d}, "[intermediate_size, hidden_size]", {layer(l, &L::w_gate)});
    t.add(b + "mlp.up_proj.weight", {m, d}, "[intermediate_size, hidden_size]", {layer(l, &L::w_up)});
    t.add(b + "mlp.down_proj.weight", {d, m}, "[hidden_size, intermediate_size]", {layer(l, &L::w_down)});
  }
  t.add(p + "norm.weight", {d}, "[hidden_size]", {model(&ModelWeights::final_norm_w)});
  if (c.tied_embeddings)
    t.add(lmHead, {V, d}, "[vocab_size, hidden_size]", {}, Transform::Copy, true);
  else
    t.add(lmHead, {V, d}, "[vocab_size, hidden_size]", {model(&ModelWeights::unembed)});
  return t;
}

// Gemma-3 image-text checkpoints (model_type "gemma3") hold the text decoder under one of two prefixes,
// depending on the transformers version that saved them, beside the vision tower and its projector.
Table gemma3Table(const ModelConfig& c, const std::vector<std::string>& names) {
  const auto has = [&](const std::string& k) {
    return std::find(names.begin(), names.end(), k) != names.end();
  };
  if (c.model_type != "gemma3") return llamaTable(c, "model.", "lm_head.weight");
  Table t;
  if (has("language_model.model.embed_tokens.weight")) {  // transformers < 4.52
    t = llamaTable(c, "language_model.model.", "language_model.lm_head.weight");
    t.unusedPrefixes = {"vision_tower.", "multi_modal_projector."};
  } else {  // transformers >= 4.52
    t = llamaTable(c, "model.language_model.", "lm_head.weight");
    t.unusedPrefixes = {"model.vision_tower.", "model.multi_modal_projector."};
  }
  return t;
}

// GPT-NeoX / Pythia.
Table neoxTable(const ModelConfig& c) {
  const int64_t d = c.d_model, m = c.d_mlp, V = c.vocab_size;
  Table t;
  t.add("gpt_neox.embed_in.weight", {V, d}, "[vocab_size, hidden_size]", {model(&ModelWeights::tok_emb)});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    using L = LayerWeights;
    t.add(p + "input_layernorm.weight", {d}, "[hidden_size]", {layer(l, &L::attn_norm_w)});
    t.add(p + "input_layernorm.bias", {d}, "[hidden_size]", {layer(l, &L::attn_norm_b)});
    t.add(p + "post_attention_layernorm.weight", {d}, "[hidden_size]", {layer(l, &L::mlp_norm_w)});
    t.add(p + "post_attention_layernorm.bias", {d}, "[hidden_size]", {layer(l, &L::mlp_norm_b)});
    t.add(p + "attention.query_key_value.weight", {3 * d, d}, "[3*hidden_size, hidden_size]",
          {layer(l, &L::wq), layer(l, &L::wk), layer(l, &L::wv)}, Transform::NeoXQkv);
    if (c.qkv_bias)
      t.add(p + "attention.query_key_value.bias", {3 * d}, "[3*hidden_size]",
            {layer(l, &L::bq), layer(l, &L::bk), layer(l, &L::bv)}, Transform::NeoXQkv);
    t.add(p + "attention.dense.weight", {d, d}, "[hidden_size, hidden_size]", {layer(l, &L::wo)});
    if (c.attn_out_bias) t.add(p + "attention.dense.bias", {d}, "[hidden_size]", {layer(l, &L::bo)});
    t.add(p + "mlp.dense_h_to_4h.weight", {m, d}, "[intermediate_size, hidden_size]", {layer(l, &L::w_up)});
    t.add(p + "mlp.dense_h_to_4h.bias", {m}, "[intermediate_size]", {layer(l, &L::b_up)});
    t.add(p + "mlp.dense_4h_to_h.weight", {d, m}, "[hidden_size, intermediate_size]", {layer(l, &L::w_down)});
    t.add(p + "mlp.dense_4h_to_h.bias", {d}, "[hidden_size]", {layer(l, &L::b_down)});
  }
  t.add("gpt_neox.final_layer_norm.weight", {d}, "[hidden_size]", {model(&ModelWeights::final_norm_w)});
  t.add("gpt_neox.final_layer_norm.bias", {d}, "[hidden_size]", {model(&ModelWeights::final_norm_b)});
  if (c.tied_embeddings)
    t.add("embed_out.weight", {V, d}, "[vocab_size, hidden_size]", {}, Transform::Copy, true);
  else
    t.add("embed_out.weight", {V, d}, "[vocab_size, hidden_size]", {model(&ModelWeights::unembed)});
  return t;
}

Table familyTable(const ModelConfig& c, const std::vector<std::string>& names) {
  switch (c.arch) {
    case Architecture::Gpt2: {
      // GPT2LMHeadModel saves "transformer.wte.weight"; GPT2Model (the hub's gpt2 files) "wte.weight".
      const bool prefixed = std::find(names.begin(), names.end(), "transformer.wte.weight") != names.end();
      return gpt2Table(c, prefixed ? "transformer." : "");
    }
    case Architecture::GptNeoX:
      return neoxTable(c);
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::Olmo2:
    case Architecture::Gemma2:
      return llamaTable(c, "model.", "lm_head.weight");
    case Architecture::Gemma3:
      return gemma3Table(c, names);
  }
  fail("no tensor table for architecture ", toString(c.arch));
}

// The family's table; with tied embeddings the embedding may be stored under the head's name (the one
// tensor is both, and savers keep either name).
Table tableFor(const ModelConfig& c, const std::vector<std::string>& names) {
  Table t = familyTable(c, names);
  if (!c.tied_embeddings) return t;
  TensorSpec* embed = nullptr;
  const TensorSpec* head = nullptr;
  for (auto& spec : t.specs) {
    if (spec.slots.size() == 1 && spec.slots[0].modelMember == &ModelWeights::tok_emb) embed = &spec;
    if (spec.optional && spec.slots.empty()) head = &spec;
  }
  if (embed && head) embed->tiedAlternative = head->key;
  return t;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Buffers some exporters save that carry no weights: causal masks, -inf fill values, RoPE frequencies.
bool harmlessBuffer(const std::string& key) {
  return endsWith(key, ".attn.bias") || endsWith(key, ".attn.masked_bias") ||
         endsWith(key, ".attention.bias") || endsWith(key, ".attention.masked_bias") ||
         endsWith(key, "rotary_emb.inv_freq");
}

std::string shapeString(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The stored tensor each spec of `table` reads, in table order: its own key; else the kept tensor a
// metadata alias record names for it; else, for a tied embedding, the head's key when that is the only gap
// (a checkpoint of another family keeps its own missing keys reported as before); empty when absent. An
// alias record naming a tensor no file holds, or one of another shape, is an error naming its file.
std::vector<std::string> resolveKeys(const Table& table, const TensorLookup& lookup,
                                     const std::set<std::string>& present) {
  std::vector<std::string> keys;
  size_t tiedAt = table.specs.size();  // the embedding stored under the head's name, if so
  bool otherMissing = false;
  for (const auto& spec : table.specs) {
    std::string key;
    if (present.count(spec.key)) {
      key = spec.key;
    } else if (const TensorLookup::Alias alias = lookup.aliasOf(spec.key); !alias.target.empty()) {
      if (!present.count(alias.target))
        fail(alias.file, ": metadata records tensor ", spec.key, " as shared with ", alias.target,
             ", which no file of the checkpoint holds (expected ", spec.key, " ", shapeString(spec.shape),
             " stored under one of the two names)");
      const std::vector<int64_t> shape = lookup.shape(alias.target);
      if (shape != spec.shape)
        fail(alias.file, ": metadata records tensor ", spec.key, " as shared with ", alias.target,
             ", but that has shape ", shapeString(shape), ", expected ", shapeString(spec.shape), " ",
             spec.meaning);
      key = alias.target;
    } else if (!spec.tiedAlternative.empty() && present.count(spec.tiedAlternative)) {
      tiedAt = keys.size();
    } else if (!spec.optional) {
      otherMissing = true;
    }
    keys.push_back(key);
  }
  if (tiedAt < keys.size() && !otherMissing) keys[tiedAt] = table.specs[tiedAt].tiedAlternative;
  return keys;
}

// One canonical tensor of a stored one: a view of the stored tensor (no data copied) and the shape the
// weight has, which a fused split's view reaches only by a copy (NeoX: its rows are strided per head).
struct Part {
  at::Tensor view;
  std::vector<int64_t> shape;
};

// Apply the spec's transform to a stored tensor; returns one canonical part per slot.
std::vector<Part> transform(const TensorSpec& spec, const at::Tensor& stored, const ModelConfig& c) {
  auto whole = [](const at::Tensor& t) { return Part{t, t.sizes().vec()}; };
  switch (spec.transform) {
    case Transform::Copy:
      return {whole(stored)};
    case Transform::Transpose:
      return {whole(stored.t())};  // [in, out] -> [out, in]
    case Transform::Gpt2Qkv: {
      // weight [d, 3d] -> [3d, d]; rows (or bias entries) [0, d) are q, [d, 2d) k, [2d, 3d) v.
      const at::Tensor rows = stored.dim() == 2 ? stored.t() : stored;  // [3*d_model, (d_model)]
      auto parts = rows.chunk(3, 0);                                    // 3 x [d_model, (d_model)]
      return {whole(parts[0]), whole(parts[1]), whole(parts[2])};
    }
    case Transform::NeoXQkv: {
      // GPTNeoXAttention views the fused output as [.., n_heads, 3*d_head]: rows are [head, {q,k,v}, d_head].
      const int64_t h = c.n_heads, dh = c.d_head;
      std::vector<int64_t> view = {h, 3, dh};
      if (stored.dim() == 2) view.push_back(stored.size(1));
      const at::Tensor v = stored.reshape(view);  // [n_heads, 3, d_head, (d_model)], a view
      std::vector<int64_t> shape = {h * dh};
      if (stored.dim() == 2) shape.push_back(stored.size(1));
      std::vector<Part> out;
      for (int64_t i = 0; i < 3; ++i)  // [n_heads, d_head, (d_model)], as [n_heads*d_head, (d_model)]
        out.push_back({v.select(1, i), shape});
      return out;
    }
  }
  return {};
}

void store(ModelWeights& w, const Slot& s, at::Tensor t) {
  if (s.modelMember) {
    w.*(s.modelMember) = std::move(t);
  } else {
    w.layers.at(s.layer).*(s.layerMember) = std::move(t);
  }
}

}  // namespace

std::vector<std::string> expectedKeys(const ModelConfig& config, const TensorLookup& lookup) {
  std::vector<std::string> keys;
  for (const auto& s : tableFor(config, lookup.names()).specs)
    keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

long long checkWeights(const ModelConfig& config, const TensorLookup& lookup, const std::string& origin) {
  const std::vector<std::string> names = lookup.names();
  const std::set<std::string> present(names.begin(), names.end());
  const Table table = tableFor(config, names);
  const std::vector<std::string> keys = resolveKeys(table, lookup, present);
  const char* family = config.model_type.empty() ? toString(config.arch) : config.model_type.c_str();

  // Account for every key: first what the table needs, then what the checkpoint has beyond it.
  std::set<std::string> claimed;
  std::vector<const TensorSpec*> missing;
  for (size_t i = 0; i < table.specs.size(); ++i) {
    const TensorSpec& spec = table.specs[i];
    claimed.insert(spec.key);
    if (!keys[i].empty()) claimed.insert(keys[i]);
    if (keys[i].empty() && !spec.optional) missing.push_back(&spec);
  }
  const auto unusedPart = [&](const std::string& n) {
    for (const auto& prefix : table.unusedPrefixes)
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  std::vector<std::string> unknown;
  for (const auto& n : names)
    if (!claimed.count(n) && !harmlessBuffer(n) && !unusedPart(n)) unknown.push_back(n);
  if (!missing.empty()) {
    std::string more;
    if (missing.size() > 1) more = hs::cat(" (and ", missing.size() - 1, " more missing tensors)");
    std::string hint;
    if (!unknown.empty())
      hint = hs::cat("; the checkpoint has ", unknown.size(), " tensors the ", family,
                     " layout does not use, e.g. ", unknown.front());
    const std::string& tiedAlternative = missing.front()->tiedAlternative;
    const std::string alternative =
        tiedAlternative.empty() || present.count(tiedAlternative)
            ? std::string()
            : hs::cat(" (nor ", tiedAlternative, ", which a tied checkpoint may keep instead)");
    fail(origin, ": missing tensor ", missing.front()->key, alternative, ", expected shape ",
         shapeString(missing.front()->shape), " ", missing.front()->meaning, " for model_type ", family, more,
         hint);
  }
  if (!unknown.empty()) {
    std::string more;
    if (unknown.size() > 1) more = hs::cat(" (and ", unknown.size() - 1, " more)");
    fail(lookup.fileOf(unknown.front()), ": unexpected tensor ", unknown.front(), more, ": not part of the ",
         family, " layout for this config (", config.n_layers, " layers",
         config.tied_embeddings ? ", tied embeddings" : "", config.qkv_bias ? ", q/k/v biases" : "", ")");
  }
  long long params = 0;
  for (size_t i = 0; i < table.specs.size(); ++i) {
    const TensorSpec& spec = table.specs[i];
    if (keys[i].empty()) continue;  // an optional tensor that is absent
    const std::vector<int64_t> stored = lookup.shape(keys[i]);
    if (stored != spec.shape)
      fail(lookup.fileOf(keys[i]), ": tensor ", keys[i],
           keys[i] == spec.key ? "" : hs::cat(" (read as ", spec.key, ")"), " has shape ",
           shapeString(stored), ", expected ", shapeString(spec.shape), " ", spec.meaning);
    if (!spec.slots.empty()) {
      long long n = 1;
      for (int64_t s : stored)
        n *= s;
      params += n;
    }
  }
  return params;
}

ModelWeights mapWeights(const ModelConfig& config, TensorLookup& lookup, const std::string& origin,
                        at::ScalarType dtype, const DeviceMap* devices, bool alignCopies) {
  checkWeights(config, lookup, origin);
  const std::vector<std::string> names = lookup.names();
  const std::set<std::string> present(names.begin(), names.end());
  const Table table = tableFor(config, names);
  const std::vector<std::string> keys = resolveKeys(table, lookup, present);
  // Stored tensors that some weight reads (a checked-only spec sharing one of them must not release it).
  std::set<std::string> read;
  for (size_t i = 0; i < table.specs.size(); ++i)
    if (!table.specs[i].slots.empty() && !keys[i].empty()) read.insert(keys[i]);
  auto deviceOf = [&](const Slot& s) -> at::Device {
    if (!devices) return at::kCPU;
    if (s.layer >= 0) return devices->layers.at(static_cast<size_t>(s.layer));
    const bool embedding = s.modelMember == &ModelWeights::tok_emb || s.modelMember == &ModelWeights::pos_emb;
    return embedding ? devices->embed : devices->head;
  };

  // Each stored tensor's file pages are released once nothing reads them: after its last copy is written
  // (the CPU's copies are made together below), or right away when none is to be made (moved to a GPU);
  // never while a weight uses them in place.
  struct Source {
    std::atomic<int> copies{0};
    bool inPlace = false;
  };
  std::map<std::string, Source> sources;
  std::vector<LoadCopy> copies;  // every CPU conversion and copy, made in one pass once all are known
  ModelWeights w;
  w.layers.resize(config.n_layers);
  for (size_t k = 0; k < table.specs.size(); ++k) {
    const TensorSpec& spec = table.specs[k];
    const std::string& key = keys[k];
    if (key.empty()) continue;                            // an optional tensor that is absent
    if (spec.slots.empty() && read.count(key)) continue;  // checked only, and read by another weight
    const at::Tensor stored = lookup.tensor(key);
    if (!at::isFloatingType(stored.scalar_type()))
      fail(lookup.fileOf(key), ": tensor ", key, " has dtype ", c10::toString(stored.scalar_type()),
           ", expected a floating-point type");
    Source& source = sources[key];
    const std::vector<Part> parts = transform(spec, stored, config);
    for (size_t i = 0; i < spec.slots.size(); ++i) {
      const Part& part = parts.at(i);
      const at::Device device = deviceOf(spec.slots[i]);
      at::Tensor t;
      if (!device.is_cpu()) {
        // One tensor at a time, straight there.
        t = part.view.reshape(part.shape).to(device, dtype).contiguous();
        source.inPlace = source.inPlace || t.storage().is_alias_of(stored.storage());
      } else if (part.view.scalar_type() == dtype && part.view.is_contiguous() &&
                 !(alignCopies && reinterpret_cast<uintptr_t>(part.view.data_ptr()) % 64 != 0)) {
        t = part.view.view(part.shape);  // in place
        source.inPlace = source.inPlace || t.storage().is_alias_of(stored.storage());
      } else {  // converted, transposed, split or aligned: written by the pass below
        t = emptyForLoad(part.shape, dtype);
        ++source.copies;
        copies.push_back({part.view, t, [&lookup, &source, &key] {
                            if (--source.copies == 0 && !source.inPlace) lookup.release(key);
                          }});
      }
      store(w, spec.slots[i], std::move(t));
    }
    if (source.copies == 0 && !source.inPlace) lookup.release(key);  // moved to a GPU, or not read
  }
  runLoadCopies(copies);
  if (config.tied_embeddings)  // [vocab, d_model], the same storage when on the same device
    w.unembed = devices && devices->head != devices->embed ? w.tok_emb.to(devices->head) : w.tok_emb;
  return w;
}

}  // namespace hs
