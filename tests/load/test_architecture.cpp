// Strict checkpoint → ModelWeights mapping: every family's transforms put the right numbers in the right
// place (GPT-2 Conv1D transpose and c_attn split, GPT-NeoX per-head fused QKV, tied embeddings), and every
// missing / unknown / misshaped key is an error naming the key and the file.
#include <ATen/ATen.h>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "load_error_util.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
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
};

QTEST_GUILESS_MAIN(TestArchitecture)
#include "test_architecture.moc"
