// Strict checkpoint → ModelWeights mapping: every family's transforms put the right numbers in the right
// place (GPT-2 Conv1D transpose and c_attn split, GPT-NeoX per-head fused QKV, tied embeddings), and every
// missing / unknown / misshaped key is an error naming the key and the file. A bf16 checkpoint loaded as
// float32 (one pass of copies, model/huge_page_tensor.h) gives every weight bit for bit as Tensor::to.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>

#include "load_error_util.h"
#include "model/huge_page_tensor.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
#include "model/load/silent_heads.h"
#include "util/error.h"

using nlohmann::json;
using Tensors = std::map<std::string, at::Tensor>;

using hs::test::errorOf;

namespace {

at::Tensor rnd(std::vector<int64_t> shape) {
  return at::randn(shape, at::kFloat);
}

hs::ModelConfig llamaConfig(bool tied, const std::string& type = "llama") {
  json j = {{"model_type", type},     {"hidden_size", 32},          {"intermediate_size", 48},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4},   {"num_key_value_heads", 2},
            {"vocab_size", 50},       {"tie_word_embeddings", tied}};
  if (type == "qwen3") j["head_dim"] = 8;
  return hs::parseHfConfig(j, "test/config.json");
}

// Every tensor a llama-like config needs, under HF names.
Tensors llamaTensors(const hs::ModelConfig& c) {
  const int64_t d = c.d_model, m = c.d_mlp, V = c.vocab_size, q = c.n_heads * c.d_head,
                kv = c.n_kv_heads * c.d_head;
  Tensors t;
  t["model.embed_tokens.weight"] = rnd({V, d});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    if (c.norm_placement != hs::NormPlacement::Post) t[p + "input_layernorm.weight"] = rnd({d});
    t[p + "self_attn.q_proj.weight"] = rnd({q, d});
    t[p + "self_attn.k_proj.weight"] = rnd({kv, d});
    t[p + "self_attn.v_proj.weight"] = rnd({kv, d});
    t[p + "self_attn.o_proj.weight"] = rnd({d, q});
    if (c.qkv_bias) {
      t[p + "self_attn.q_proj.bias"] = rnd({q});
      t[p + "self_attn.k_proj.bias"] = rnd({kv});
      t[p + "self_attn.v_proj.bias"] = rnd({kv});
    }
    if (c.qk_norm == hs::QkNorm::PerHead) {
      t[p + "self_attn.q_norm.weight"] = rnd({c.d_head});
      t[p + "self_attn.k_norm.weight"] = rnd({c.d_head});
    }
    t[p + "post_attention_layernorm.weight"] = rnd({d});
    t[p + "mlp.gate_proj.weight"] = rnd({m, d});
    t[p + "mlp.up_proj.weight"] = rnd({m, d});
    t[p + "mlp.down_proj.weight"] = rnd({d, m});
  }
  t["model.norm.weight"] = rnd({d});
  if (!c.tied_embeddings) t["lm_head.weight"] = rnd({V, d});
  return t;
}

hs::ModelWeights map(const hs::ModelConfig& c, const Tensors& t, at::ScalarType dtype = at::kFloat) {
  hs::MapLookup lookup(t, "/ckpt/model.safetensors");
  return hs::mapWeights(c, lookup, "/ckpt", dtype);
}

// ---------------------------------------------------------------------------------------------------
// bf16 checkpoints at sizes that split unevenly: over 1 Mi values (a copy's unit is 4 MiB of float32, its
// piece 256 KiB) in odd counts, over an odd number of threads.

// The bits of a float32 or bfloat16 tensor, as integers of the same width (row-major order).
at::Tensor bits(const at::Tensor& t) {
  return t.contiguous().view(t.element_size() == 4 ? at::kInt : at::kShort);
}

// True when `got` is contiguous, of `dtype`, of `want`'s shape, and holds want.to(dtype)'s bits.
bool sameBits(const at::Tensor& got, const at::Tensor& want, at::ScalarType dtype) {
  return got.defined() && got.is_contiguous() && got.scalar_type() == dtype && got.sizes() == want.sizes() &&
         at::equal(bits(got), bits(want.to(dtype)));
}

#define CHECK_BITS(got, want, dtype) QVERIFY2(sameBits(got, want, dtype), #got " != (" #want ").to(dtype)")

// bf16 normals, with every kind of special value near the start (Tensor::to keeps each bit of them).
at::Tensor bf16(std::vector<int64_t> shape) {
  at::Tensor t = at::randn(shape).to(at::kBFloat16);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-40f /* subnormal */,
                            -3.0e38f};
  at::Tensor flat = t.view(-1);
  for (int64_t i = 0; i < int64_t(std::size(specials)) && i < flat.numel(); ++i)
    flat[i] = specials[i];
  return t;
}

// GPT-2 (Conv1D weights stored [in, out], fused c_attn): n_embd 1032, n_inner 1100, vocab 1031, so each
// q/k/v third and c_fc, c_proj are transposed copies of over 1 Mi values.
hs::ModelConfig bigGpt2() {
  return hs::parseHfConfig({{"model_type", "gpt2"},
                            {"n_embd", 1032},
                            {"n_inner", 1100},
                            {"n_layer", 1},
                            {"n_head", 8},
                            {"vocab_size", 1031},
                            {"n_positions", 9}},
                           "gpt2/config.json");
}

Tensors bigGpt2Tensors() {
  const int64_t d = 1032, m = 1100;
  Tensors t;
  t["wte.weight"] = bf16({1031, d});
  t["wpe.weight"] = bf16({9, d});
  for (const char* n : {"ln_1", "ln_2", "ln_f"}) {
    const std::string p = std::string(n) == "ln_f" ? "" : "h.0.";
    t[p + n + ".weight"] = bf16({d});
    t[p + n + ".bias"] = bf16({d});
  }
  t["h.0.attn.c_attn.weight"] = bf16({d, 3 * d});
  t["h.0.attn.c_attn.bias"] = bf16({3 * d});
  t["h.0.attn.c_proj.weight"] = bf16({d, d});
  t["h.0.attn.c_proj.bias"] = bf16({d});
  t["h.0.mlp.c_fc.weight"] = bf16({d, m});
  t["h.0.mlp.c_fc.bias"] = bf16({m});
  t["h.0.mlp.c_proj.weight"] = bf16({m, d});
  t["h.0.mlp.c_proj.bias"] = bf16({d});
  return t;
}

// Every weight of bigGpt2 against Tensor::to of what the stored tensor holds for it.
void checkGpt2(const hs::ModelWeights& w, const Tensors& t, at::ScalarType dt) {
  const hs::LayerWeights& l = w.layers.at(0);
  CHECK_BITS(w.tok_emb, t.at("wte.weight"), dt);
  CHECK_BITS(w.pos_emb, t.at("wpe.weight"), dt);
  const std::vector<at::Tensor> qkv = t.at("h.0.attn.c_attn.weight").t().chunk(3, 0);  // 3 x [out, in]
  const std::vector<at::Tensor> qkvB = t.at("h.0.attn.c_attn.bias").chunk(3, 0);
  CHECK_BITS(l.wq, qkv[0], dt);
  CHECK_BITS(l.wk, qkv[1], dt);
  CHECK_BITS(l.wv, qkv[2], dt);
  CHECK_BITS(l.bq, qkvB[0], dt);
  CHECK_BITS(l.bk, qkvB[1], dt);
  CHECK_BITS(l.bv, qkvB[2], dt);
  CHECK_BITS(l.wo, t.at("h.0.attn.c_proj.weight").t(), dt);
  CHECK_BITS(l.bo, t.at("h.0.attn.c_proj.bias"), dt);
  CHECK_BITS(l.w_up, t.at("h.0.mlp.c_fc.weight").t(), dt);
  CHECK_BITS(l.b_up, t.at("h.0.mlp.c_fc.bias"), dt);
  CHECK_BITS(l.w_down, t.at("h.0.mlp.c_proj.weight").t(), dt);
  CHECK_BITS(l.b_down, t.at("h.0.mlp.c_proj.bias"), dt);
  CHECK_BITS(l.attn_norm_w, t.at("h.0.ln_1.weight"), dt);
  CHECK_BITS(l.attn_norm_b, t.at("h.0.ln_1.bias"), dt);
  CHECK_BITS(l.mlp_norm_w, t.at("h.0.ln_2.weight"), dt);
  CHECK_BITS(l.mlp_norm_b, t.at("h.0.ln_2.bias"), dt);
  CHECK_BITS(w.final_norm_w, t.at("ln_f.weight"), dt);
  CHECK_BITS(w.final_norm_b, t.at("ln_f.bias"), dt);
  QCOMPARE(w.unembed.data_ptr(), w.tok_emb.data_ptr());
}

// GPT-NeoX (fused query_key_value with rows [head, {q,k,v}, d_head]): hidden 1040 = 8 heads x 130, so each
// q/k/v part gathers 8 strided blocks of rows, over 1 Mi values.
hs::ModelConfig bigNeox() {
  return hs::parseHfConfig({{"model_type", "gpt_neox"},
                            {"hidden_size", 1040},
                            {"intermediate_size", 1100},
                            {"num_hidden_layers", 1},
                            {"num_attention_heads", 8},
                            {"vocab_size", 1031},
                            {"rotary_pct", 0.25}},
                           "neox/config.json");
}

Tensors bigNeoxTensors() {
  const int64_t d = 1040, m = 1100;
  const std::string p = "gpt_neox.layers.0.";
  Tensors t;
  t["gpt_neox.embed_in.weight"] = bf16({1031, d});
  for (const std::string& n :
       {p + "input_layernorm", p + "post_attention_layernorm", std::string("gpt_neox.final_layer_norm")}) {
    t[n + ".weight"] = bf16({d});
    t[n + ".bias"] = bf16({d});
  }
  t[p + "attention.query_key_value.weight"] = bf16({3 * d, d});
  t[p + "attention.query_key_value.bias"] = bf16({3 * d});
  t[p + "attention.dense.weight"] = bf16({d, d});
  t[p + "attention.dense.bias"] = bf16({d});
  t[p + "mlp.dense_h_to_4h.weight"] = bf16({m, d});
  t[p + "mlp.dense_h_to_4h.bias"] = bf16({m});
  t[p + "mlp.dense_4h_to_h.weight"] = bf16({d, m});
  t[p + "mlp.dense_4h_to_h.bias"] = bf16({d});
  t["embed_out.weight"] = bf16({1031, d});
  return t;
}

void checkNeox(const hs::ModelWeights& w, const Tensors& t, at::ScalarType dt) {
  const int64_t h = 8, dh = 130, d = 1040;
  const std::string p = "gpt_neox.layers.0.";
  const hs::LayerWeights& l = w.layers.at(0);
  const at::Tensor qkv = t.at(p + "attention.query_key_value.weight").reshape({h, 3, dh, d});
  const at::Tensor qkvB = t.at(p + "attention.query_key_value.bias").reshape({h, 3, dh});
  const at::Tensor* parts[] = {&l.wq, &l.wk, &l.wv};
  const at::Tensor* biases[] = {&l.bq, &l.bk, &l.bv};
  for (int64_t i = 0; i < 3; ++i) {
    CHECK_BITS(*parts[i], qkv.select(1, i).reshape({h * dh, d}), dt);
    CHECK_BITS(*biases[i], qkvB.select(1, i).reshape({h * dh}), dt);
  }
  CHECK_BITS(w.tok_emb, t.at("gpt_neox.embed_in.weight"), dt);
  CHECK_BITS(l.wo, t.at(p + "attention.dense.weight"), dt);
  CHECK_BITS(l.bo, t.at(p + "attention.dense.bias"), dt);
  CHECK_BITS(l.w_up, t.at(p + "mlp.dense_h_to_4h.weight"), dt);
  CHECK_BITS(l.b_up, t.at(p + "mlp.dense_h_to_4h.bias"), dt);
  CHECK_BITS(l.w_down, t.at(p + "mlp.dense_4h_to_h.weight"), dt);
  CHECK_BITS(l.b_down, t.at(p + "mlp.dense_4h_to_h.bias"), dt);
  CHECK_BITS(l.attn_norm_w, t.at(p + "input_layernorm.weight"), dt);
  CHECK_BITS(l.attn_norm_b, t.at(p + "input_layernorm.bias"), dt);
  CHECK_BITS(l.mlp_norm_w, t.at(p + "post_attention_layernorm.weight"), dt);
  CHECK_BITS(l.mlp_norm_b, t.at(p + "post_attention_layernorm.bias"), dt);
  CHECK_BITS(w.final_norm_w, t.at("gpt_neox.final_layer_norm.weight"), dt);
  CHECK_BITS(w.final_norm_b, t.at("gpt_neox.final_layer_norm.bias"), dt);
  CHECK_BITS(w.unembed, t.at("embed_out.weight"), dt);
}

// Runs `f` with ATen's pool at `n` threads, then restores it.
template <typename F>
void withThreads(int n, F f) {
  const int before = at::get_num_threads();
  at::set_num_threads(n);
  try {
    f();
  } catch (...) {
    at::set_num_threads(before);
    throw;
  }
  at::set_num_threads(before);
}

}  // namespace

class TestArchitecture : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { at::manual_seed(7); }

  void llamaMapsEveryTensor() {
    const hs::ModelConfig c = llamaConfig(false);
    const Tensors t = llamaTensors(c);
    const hs::ModelWeights w = map(c, t);
    QCOMPARE(int(w.layers.size()), 2);
    QVERIFY(at::equal(w.layers[1].wk, t.at("model.layers.1.self_attn.k_proj.weight")));
    QVERIFY(at::equal(w.layers[0].mlp_norm_w, t.at("model.layers.0.post_attention_layernorm.weight")));
    QVERIFY(at::equal(w.layers[1].w_gate, t.at("model.layers.1.mlp.gate_proj.weight")));
    QVERIFY(at::equal(w.unembed, t.at("lm_head.weight")));
    QVERIFY(!w.layers[0].bq.defined());
    QVERIFY(!w.pos_emb.defined());
    for (const auto& l : w.layers)
      QVERIFY(l.wq.is_contiguous() && l.wq.scalar_type() == at::kFloat);
    QCOMPARE(int(hs::expectedKeys(c, hs::MapLookup(t, "x")).size()), int(t.size()));
  }

  void tiedEmbeddingsShareStorage() {
    const hs::ModelConfig c = llamaConfig(true);
    Tensors t = llamaTensors(c);
    hs::ModelWeights w = map(c, t);
    QCOMPARE(w.unembed.data_ptr(), w.tok_emb.data_ptr());
    // Some exporters also save the tied lm_head: accepted (checked for shape), the embedding still wins.
    t["lm_head.weight"] = rnd({50, 32});
    w = map(c, t);
    QCOMPARE(w.unembed.data_ptr(), w.tok_emb.data_ptr());
    t["lm_head.weight"] = rnd({51, 32});
    CHECK_MSG(errorOf([&] { map(c, t); }), "lm_head.weight has shape [51, 32], expected [50, 32]");
  }

  void gpt2Conv1DAndFusedQkv() {
    const hs::ModelConfig c = hs::parseHfConfig({{"model_type", "gpt2"},
                                                 {"n_embd", 16},
                                                 {"n_layer", 1},
                                                 {"n_head", 2},
                                                 {"vocab_size", 30},
                                                 {"n_positions", 8}},
                                                "gpt2/config.json");
    for (const std::string pre : {"transformer.", ""}) {
      Tensors t;
      const int64_t d = 16, m = 64;
      t[pre + "wte.weight"] = rnd({30, d});
      t[pre + "wpe.weight"] = rnd({8, d});
      t[pre + "h.0.ln_1.weight"] = rnd({d});
      t[pre + "h.0.ln_1.bias"] = rnd({d});
      t[pre + "h.0.attn.c_attn.weight"] = rnd({d, 3 * d});  // Conv1D [in, out]
      t[pre + "h.0.attn.c_attn.bias"] = rnd({3 * d});
      t[pre + "h.0.attn.c_proj.weight"] = rnd({d, d});
      t[pre + "h.0.attn.c_proj.bias"] = rnd({d});
      t[pre + "h.0.ln_2.weight"] = rnd({d});
      t[pre + "h.0.ln_2.bias"] = rnd({d});
      t[pre + "h.0.mlp.c_fc.weight"] = rnd({d, m});
      t[pre + "h.0.mlp.c_fc.bias"] = rnd({m});
      t[pre + "h.0.mlp.c_proj.weight"] = rnd({m, d});
      t[pre + "h.0.mlp.c_proj.bias"] = rnd({d});
      t[pre + "ln_f.weight"] = rnd({d});
      t[pre + "ln_f.bias"] = rnd({d});
      t[pre + "h.0.attn.bias"] = at::ones({1, 1, 8, 8});  // causal-mask buffer: ignored
      t[pre + "h.0.attn.masked_bias"] = at::full({}, -1e4);
      const hs::ModelWeights w = map(c, t);
      const at::Tensor cAttn = t.at(pre + "h.0.attn.c_attn.weight");  // [in, 3*out]
      // y = x @ W_conv: the canonical [out, in] q weight is the first third of the columns, transposed.
      QVERIFY(at::equal(w.layers[0].wq, cAttn.slice(1, 0, d).t()));
      QVERIFY(at::equal(w.layers[0].wk, cAttn.slice(1, d, 2 * d).t()));
      QVERIFY(at::equal(w.layers[0].wv, cAttn.slice(1, 2 * d, 3 * d).t()));
      QVERIFY(at::equal(w.layers[0].bv, t.at(pre + "h.0.attn.c_attn.bias").slice(0, 2 * d, 3 * d)));
      QVERIFY(at::equal(w.layers[0].wo, t.at(pre + "h.0.attn.c_proj.weight").t()));
      QCOMPARE(w.layers[0].w_up.sizes(), (at::IntArrayRef{m, d}));
      QCOMPARE(w.layers[0].w_down.sizes(), (at::IntArrayRef{d, m}));
      QVERIFY(w.layers[0].wq.is_contiguous());
      // A Linear computes the same as the Conv1D.
      const at::Tensor x = rnd({3, d});
      QVERIFY(
          at::allclose(at::linear(x, w.layers[0].w_up, w.layers[0].b_up),
                       at::matmul(x, t.at(pre + "h.0.mlp.c_fc.weight")) + t.at(pre + "h.0.mlp.c_fc.bias")));
      QCOMPARE(w.unembed.data_ptr(), w.tok_emb.data_ptr());  // GPT-2 ties by default
      QVERIFY(at::equal(w.pos_emb, t.at(pre + "wpe.weight")));
    }
  }

  void neoxFusedQkvPerHead() {
    const hs::ModelConfig c = hs::parseHfConfig({{"model_type", "gpt_neox"},
                                                 {"hidden_size", 12},
                                                 {"intermediate_size", 24},
                                                 {"num_hidden_layers", 1},
                                                 {"num_attention_heads", 3},
                                                 {"vocab_size", 20},
                                                 {"rotary_pct", 0.5}},
                                                "neox/config.json");
    const int64_t d = 12, m = 24, dh = 4;
    Tensors t;
    const std::string p = "gpt_neox.layers.0.";
    t["gpt_neox.embed_in.weight"] = rnd({20, d});
    t[p + "input_layernorm.weight"] = rnd({d});
    t[p + "input_layernorm.bias"] = rnd({d});
    t[p + "post_attention_layernorm.weight"] = rnd({d});
    t[p + "post_attention_layernorm.bias"] = rnd({d});
    t[p + "attention.query_key_value.weight"] = rnd({3 * d, d});
    t[p + "attention.query_key_value.bias"] = rnd({3 * d});
    t[p + "attention.dense.weight"] = rnd({d, d});
    t[p + "attention.dense.bias"] = rnd({d});
    t[p + "mlp.dense_h_to_4h.weight"] = rnd({m, d});
    t[p + "mlp.dense_h_to_4h.bias"] = rnd({m});
    t[p + "mlp.dense_4h_to_h.weight"] = rnd({d, m});
    t[p + "mlp.dense_4h_to_h.bias"] = rnd({d});
    t["gpt_neox.final_layer_norm.weight"] = rnd({d});
    t["gpt_neox.final_layer_norm.bias"] = rnd({d});
    t["embed_out.weight"] = rnd({20, d});
    t[p + "attention.rotary_emb.inv_freq"] = rnd({2});
    t[p + "attention.bias"] = at::ones({1, 1, 4, 4});
    t[p + "attention.masked_bias"] = at::full({}, -1e9);
    const hs::ModelWeights w = map(c, t);
    const at::Tensor qkv = t.at(p + "attention.query_key_value.weight");  // rows [head, {q,k,v}, d_head]
    const at::Tensor bias = t.at(p + "attention.query_key_value.bias");
    for (int64_t h = 0; h < 3; ++h) {
      for (int64_t j = 0; j < 3; ++j) {
        const at::Tensor& canon = j == 0 ? w.layers[0].wq : j == 1 ? w.layers[0].wk : w.layers[0].wv;
        const at::Tensor& canonB = j == 0 ? w.layers[0].bq : j == 1 ? w.layers[0].bk : w.layers[0].bv;
        QVERIFY(at::equal(canon.slice(0, h * dh, (h + 1) * dh),
                          qkv.slice(0, (h * 3 + j) * dh, (h * 3 + j + 1) * dh)));
        QVERIFY(at::equal(canonB.slice(0, h * dh, (h + 1) * dh),
                          bias.slice(0, (h * 3 + j) * dh, (h * 3 + j + 1) * dh)));
      }
    }
    QVERIFY(at::equal(w.unembed, t.at("embed_out.weight")));
  }

  void missingKeyNamesKeyAndOrigin() {
    const hs::ModelConfig c = llamaConfig(false);
    Tensors t = llamaTensors(c);
    t.erase("model.layers.1.mlp.up_proj.weight");
    const std::string m = errorOf([&] { map(c, t); });
    CHECK_MSG(m, "/ckpt");
    CHECK_MSG(m, "missing tensor model.layers.1.mlp.up_proj.weight");
    CHECK_MSG(m, "[48, 32]");
  }

  void unknownKeyIsAnError() {
    const hs::ModelConfig c = llamaConfig(false);
    Tensors t = llamaTensors(c);
    t["model.layers.0.self_attn.extra_proj.weight"] = rnd({4});
    const std::string m = errorOf([&] { map(c, t); });
    CHECK_MSG(m, "/ckpt/model.safetensors");
    CHECK_MSG(m, "unexpected tensor model.layers.0.self_attn.extra_proj.weight");
    // A bias the config does not ask for is an unknown key too (no silent drop of real weights).
    t = llamaTensors(c);
    t["model.layers.0.self_attn.q_proj.bias"] = rnd({32});
    CHECK_MSG(errorOf([&] { map(c, t); }), "unexpected tensor model.layers.0.self_attn.q_proj.bias");
    // The rotary buffer is harmless.
    t = llamaTensors(c);
    t["model.layers.0.self_attn.rotary_emb.inv_freq"] = rnd({4});
    QCOMPARE(errorOf([&] { map(c, t); }), std::string());
  }

  void wrongShapeNamesBothShapes() {
    const hs::ModelConfig c = llamaConfig(false);
    Tensors t = llamaTensors(c);
    t["model.layers.0.self_attn.k_proj.weight"] = rnd({17, 32});
    const std::string m = errorOf([&] { map(c, t); });
    CHECK_MSG(m, "/ckpt/model.safetensors");
    CHECK_MSG(m, "model.layers.0.self_attn.k_proj.weight has shape [17, 32], expected [16, 32]");
    CHECK_MSG(m, "num_key_value_heads*head_dim");
    // Qwen3 norms are per head ([head_dim]); an OLMo-2-shaped one ([heads*head_dim]) is rejected.
    const hs::ModelConfig q3 = llamaConfig(false, "qwen3");
    t = llamaTensors(q3);
    t["model.layers.1.self_attn.q_norm.weight"] = rnd({32});
    CHECK_MSG(errorOf([&] { map(q3, t); }), "q_norm.weight has shape [32], expected [8]");
  }

  void wrongFamilyHintsAtUnusedKeys() {
    const hs::ModelConfig gpt2 = hs::parseHfConfig(
        {{"model_type", "gpt2"}, {"n_embd", 32}, {"n_layer", 2}, {"n_head", 4}, {"vocab_size", 50}},
        "c.json");
    const std::string m = errorOf([&] { map(gpt2, llamaTensors(llamaConfig(false))); });
    CHECK_MSG(m, "missing tensor wte.weight");
    CHECK_MSG(m, "model_type gpt2");
    CHECK_MSG(m, "does not use, e.g. model.embed_tokens.weight");
  }

  void dtypes() {
    const hs::ModelConfig c = llamaConfig(false);
    Tensors t = llamaTensors(c);
    for (auto& kv : t)
      kv.second = kv.second.to(at::kBFloat16);
    hs::ModelWeights w = map(c, t);
    QCOMPARE(w.layers[0].wq.scalar_type(), at::kFloat);
    QVERIFY(at::equal(w.layers[0].wq, t.at("model.layers.0.self_attn.q_proj.weight").to(at::kFloat)));
    w = map(c, t, at::kBFloat16);
    QCOMPARE(w.layers[1].w_down.scalar_type(), at::kBFloat16);
    t["model.norm.weight"] = at::ones({32}, at::kInt);
    CHECK_MSG(errorOf([&] { map(c, t); }), "model.norm.weight has dtype Int, expected a floating-point type");
  }

  // The load's copies one by one, against Tensor::to: every layout (contiguous, transposed, rows gathered
  // per head, anything else) and dtype pair, at sizes that split unevenly into units, pieces and threads.
  void loadCopiesMatchTensorTo() {
    withThreads(3, [] {
      const int64_t n = (int64_t(1) << 21) + 777;         // two 4 MiB units and a bit, of float32
      const at::Tensor flat = bf16({n + 3});              // the copy reads from value 3 on: not aligned
      const at::Tensor conv = bf16({1031, 3 * 1029});     // Conv1D [in, 3*out]
      const at::Tensor fused = bf16({7 * 3 * 67, 2311});  // NeoX-like rows [head, {q,k,v}, d_head]
      const at::Tensor f32 = at::randn({1301, 1029});     // float32 stored, computed in bf16
      const at::Tensor f16 = at::randn({1 << 20 | 5}).to(at::kHalf);
      struct Case {
        const char* what;
        at::Tensor src;
        at::ScalarType dtype;
        std::vector<int64_t> shape;  // the destination's
      };
      const std::vector<Case> cases = {
          {"contiguous bf16 -> float32", flat.narrow(0, 3, n), at::kFloat, {n}},
          {"contiguous bf16 copy, unaligned", flat.narrow(0, 3, n), at::kBFloat16, {n}},
          {"transposed third bf16 -> float32", conv.t().chunk(3, 0)[1], at::kFloat, {1029, 1031}},
          {"transposed bf16 copy", conv.t(), at::kBFloat16, {3 * 1029, 1031}},
          {"per-head rows bf16 -> float32",
           fused.reshape({7, 3, 67, 2311}).select(1, 2),
           at::kFloat,
           {7 * 67, 2311}},
          {"float32 -> bf16 (rounded by ATen)", f32, at::kBFloat16, {1301, 1029}},
          {"transposed float32 -> bf16", f32.t(), at::kBFloat16, {1029, 1301}},
          {"float16 -> float32", f16, at::kFloat, {f16.numel()}},
          {"empty", at::empty({0, 5}, at::kBFloat16), at::kFloat, {0, 5}},
      };
      std::vector<hs::LoadCopy> copies;
      std::vector<std::atomic<int>> done(cases.size());
      for (size_t i = 0; i < cases.size(); ++i) {
        done[i] = 0;
        copies.push_back(
            {cases[i].src, hs::emptyForLoad(cases[i].shape, cases[i].dtype), [&done, i] { ++done[i]; }});
      }
      hs::runLoadCopies(copies);
      for (size_t i = 0; i < cases.size(); ++i) {
        QVERIFY2(sameBits(copies[i].dst, cases[i].src.reshape(cases[i].shape), cases[i].dtype),
                 cases[i].what);
        QVERIFY2(done[i] == 1, cases[i].what);
      }
      // One at a time, as convertForLoad and copyForLoad make them.
      CHECK_BITS(hs::convertForLoad(conv.t(), at::kCPU, at::kFloat), conv.t(), at::kFloat);
      CHECK_BITS(hs::copyForLoad(flat.narrow(0, 1, n), at::kFloat), flat.narrow(0, 1, n), at::kFloat);
      QCOMPARE(hs::convertForLoad(f32, at::kCPU, at::kFloat).data_ptr(), f32.data_ptr());  // nothing to do
    });
  }

  // The heads whose W_O columns are all ±0, read from the first row on, against ne/any over the whole
  // matrix, in every dtype and layout: a head whose only value is in its last row (or a NaN) writes.
  void silentHeadsReadTheirColumns() {
    hs::ModelConfig c = llamaConfig(false);  // 2 layers, 4 heads of 8, d_model 32
    c.n_layers = 5;
    std::vector<hs::HeadRef> want;
    hs::ModelWeights w;
    w.layers.resize(5);
    const at::ScalarType dtypes[] = {at::kFloat, at::kBFloat16, at::kHalf, at::kFloat, at::kDouble};
    for (int l = 0; l < 5; ++l) {
      at::Tensor wo = at::zeros({32, 32});                // [d_model, n_heads * d_head]
      wo.slice(1, 8, 16).fill_(-0.0);                     // head 1: -0 is zero
      wo[31][2 * 8 + 7] = l == 2 ? std::nan("") : 1e-30;  // head 2: one value, in the last row
      wo.slice(1, 24, 32).copy_(at::randn({32, 8}));      // head 3: everywhere
      wo = wo.to(dtypes[l]);
      if (l == 3) wo = wo.t().contiguous().t();  // not contiguous: ATen's reduction
      w.layers[size_t(l)].wo = wo;
      const at::Tensor nonzero = wo.ne(0).reshape({32, 4, 8}).any(2).any(0);
      for (int h = 0; h < 4; ++h)
        if (!nonzero[h].item<bool>()) want.push_back({l, h});
    }
    const std::vector<hs::HeadRef> got = hs::silentHeads(w, c);
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY(got[i].layer == want[i].layer && got[i].head == want[i].head);
    QCOMPARE(got.size(), size_t(10));  // heads 0 and 1 of every layer
  }

  // bf16 checkpoints with transposed and fused weights mapped as float32 (and as bf16, the transposes and
  // splits copied): every weight bit for bit what Tensor::to gives, one thread or several.
  void bf16CheckpointAsFloat32IsExact() {
    const Tensors gpt2 = bigGpt2Tensors(), neox = bigNeoxTensors();
    for (int threads : {1, 3}) {
      withThreads(threads, [&] {
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
          checkGpt2(map(bigGpt2(), gpt2, dt), gpt2, dt);
          checkNeox(map(bigNeox(), neox, dt), neox, dt);
        }
      });
    }
  }

  // The same through a memory-mapped safetensors file, whose pages each tensor releases once copied, with
  // the bf16 copies made for alignment (MemoryPlan::copy_weights).
  void mappedBf16CheckpointAsFloat32IsExact() {
    QTemporaryDir dir;
    const Tensors gpt2 = bigGpt2Tensors(), neox = bigNeoxTensors();
    for (const auto& [name, tensors] : {std::pair{"gpt2", &gpt2}, std::pair{"neox", &neox}}) {
      const std::string file = dir.path().toStdString() + "/" + name + ".safetensors";
      hs::writeSafetensors(file,
                           std::vector<std::pair<std::string, at::Tensor>>(tensors->begin(), tensors->end()),
                           {{"format", "pt"}});
      const auto ckpt =
          std::make_shared<const hs::SafetensorsCheckpoint>(hs::SafetensorsCheckpoint::open(file));
      withThreads(3, [&] {
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
          hs::SafetensorsLookup lookup(ckpt);
          const bool isGpt2 = std::string(name) == "gpt2";
          const hs::ModelWeights w =
              hs::mapWeights(isGpt2 ? bigGpt2() : bigNeox(), lookup, file, dt, nullptr, /*alignCopies=*/true);
          if (isGpt2)
            checkGpt2(w, *tensors, dt);
          else
            checkNeox(w, *tensors, dt);
          hs::forEachWeight(w, [](const at::Tensor& t) {
            QVERIFY(!t.defined() || reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
          });
        }
      });
    }
  }
};

QTEST_GUILESS_MAIN(TestArchitecture)
#include "test_architecture.moc"
