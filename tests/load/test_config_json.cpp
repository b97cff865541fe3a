// config.json → ModelConfig: every family with real-world configs (copied from the hub's files, trimmed to
// the fields that matter), the per-family HF defaults, and the errors for broken files.
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>

#include "load_error_util.h"
#include "model/load/config_json.h"
#include "util/error.h"

using nlohmann::json;

using hs::test::errorOf;

class TestConfigJson : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void gpt2Defaults() {
    // openai-community/gpt2 config.json (abridged): n_inner null, no tie field → tied.
    const json j = json::parse(R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
      "bos_token_id": 50256, "eos_token_id": 50256, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
      "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12, "n_positions": 1024,
      "vocab_size": 50257})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "gpt2/config.json");
    QCOMPARE(c.arch, hs::Architecture::Gpt2);
    QCOMPARE(c.source_format, std::string("hf"));
    QCOMPARE(c.d_model, 768);
    QCOMPARE(c.n_layers, 12);
    QCOMPARE(c.n_heads, 12);
    QCOMPARE(c.n_kv_heads, 12);
    QCOMPARE(c.d_head, 64);
    QCOMPARE(c.d_mlp, 3072);  // n_inner null → 4 * n_embd
    QCOMPARE(c.context_length, 1024);
    QCOMPARE(c.norm, hs::NormKind::LayerNorm);
    QCOMPARE(c.norm_eps, 1e-5);
    QCOMPARE(c.rope_layout, hs::RopeLayout::None);
    QVERIFY(c.learned_pos_emb);
    QCOMPARE(c.mlp, hs::MlpKind::Gelu);
    QCOMPARE(c.activation, std::string("gelu_new"));
    QVERIFY(c.tied_embeddings);
    QVERIFY(c.qkv_bias && c.attn_out_bias && c.mlp_bias);
    QCOMPARE(c.eos_token_id, 50256);
    QCOMPARE(c.dtype, std::string("float32"));
    // The parameter count of GPT-2 small is the well-known 124,439,808.
    QCOMPARE(hs::parameterCount(c), 124439808LL);
  }

  void llama31() {
    // meta-llama/Llama-3.1-8B config.json (abridged).
    const json j = json::parse(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
      "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
      "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
      "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Llama);
    QCOMPARE(c.n_heads, 32);
    QCOMPARE(c.n_kv_heads, 8);
    QCOMPARE(c.d_head, 128);
    QCOMPARE(c.d_mlp, 14336);
    QCOMPARE(c.rotary_dim, 128);
    QCOMPARE(c.rope_layout, hs::RopeLayout::RotateHalf);
    QCOMPARE(c.rope_theta, 500000.0);
    QCOMPARE(c.rope_scaling.type, std::string("llama3"));
    QCOMPARE(c.rope_scaling.factor, 8.0);
    QCOMPARE(c.rope_scaling.low_freq_factor, 1.0);
    QCOMPARE(c.rope_scaling.high_freq_factor, 4.0);
    QCOMPARE(c.rope_scaling.original_max_position_embeddings, 8192);
    QCOMPARE(c.norm, hs::NormKind::RMSNorm);
    QCOMPARE(c.norm_eps, 1e-5);
    QCOMPARE(c.mlp, hs::MlpKind::SwiGLU);
    QVERIFY(!c.tied_embeddings);
    QVERIFY(!c.qkv_bias && !c.attn_out_bias && !c.mlp_bias);
    QCOMPARE(c.bos_token_id, 128000);
    QCOMPARE(c.eos_token_id, 128001);  // the first of the list
    QCOMPARE(c.dtype, std::string("bfloat16"));
    QCOMPARE(c.context_length, 131072);
    QCOMPARE(hs::parameterCount(c), 8030261248LL);  // Llama-3.1-8B
  }

  void llamaDefaults() {
    // Only the required sizes: the LlamaConfig defaults fill the rest.
    const json j = json::parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.n_kv_heads, 4);   // num_key_value_heads defaults to the query heads
    QCOMPARE(c.d_head, 16);      // head_dim defaults to hidden / heads
    QCOMPARE(c.norm_eps, 1e-6);  // LlamaConfig rms_norm_eps
    QCOMPARE(c.rope_theta, 10000.0);
    QCOMPARE(c.context_length, 2048);
    QVERIFY(!c.tied_embeddings);
    QVERIFY(c.rope_scaling.type.empty());
    QCOMPARE(c.activation, std::string("silu"));
    // rope_scaling with the older "type" spelling, linear.
    json k = j;
    k["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    const hs::ModelConfig lin = hs::parseHfConfig(k, "config.json");
    QCOMPARE(lin.rope_scaling.type, std::string("linear"));
    QCOMPARE(lin.rope_scaling.factor, 4.0);
    // attention_bias gives q/k/v and o biases.
    k = j;
    k["attention_bias"] = true;
    const hs::ModelConfig biased = hs::parseHfConfig(k, "config.json");
    QVERIFY(biased.qkv_bias && biased.attn_out_bias);
  }

  void mistral() {
    // mistralai/Mistral-7B-v0.1 (abridged).
    const json j = json::parse(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
      "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
      "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false, "vocab_size": 32000})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Mistral);
    QCOMPARE(c.d_head, 128);
    QCOMPARE(hs::parameterCount(c), 7241732096LL);  // Mistral-7B
  }

  void qwen2() {
    // Qwen/Qwen2.5-0.5B (abridged): tied, q/k/v biases.
    const json j = json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896,
      "intermediate_size": 4864, "max_position_embeddings": 32768, "model_type": "qwen2",
      "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0, "tie_word_embeddings": true, "vocab_size": 151936})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Qwen2);
    QCOMPARE(c.d_head, 64);
    QVERIFY(c.qkv_bias);
    QVERIFY(!c.attn_out_bias);
    QVERIFY(c.tied_embeddings);
    QCOMPARE(hs::parameterCount(c), 494032768LL);  // Qwen2.5-0.5B
  }

  void qwen3() {
    // Qwen/Qwen3-0.6B (abridged): head_dim 128 with hidden 1024 and 16 heads.
    const json j = json::parse(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
      "head_dim": 128, "hidden_size": 1024, "intermediate_size": 3072, "max_position_embeddings": 40960,
      "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": true, "vocab_size": 151936})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Qwen3);
    QCOMPARE(c.d_head, 128);
    QCOMPARE(c.qk_norm, hs::QkNorm::PerHead);
    QVERIFY(!c.qkv_bias);
    QCOMPARE(hs::parameterCount(c), 596049920LL);  // Qwen3-0.6B
    // Without head_dim, Qwen3Config's default is 128 (not hidden / heads).
    json k = j;
    k.erase("head_dim");
    k["hidden_size"] = 256;
    QCOMPARE(hs::parseHfConfig(k, "config.json").d_head, 128);
  }

  void gptNeoX() {
    // EleutherAI/pythia-70m (abridged).
    const json j = json::parse(R"({"architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0,
      "eos_token_id": 0, "hidden_act": "gelu", "hidden_size": 512, "intermediate_size": 2048,
      "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "model_type": "gpt_neox",
      "num_attention_heads": 8, "num_hidden_layers": 6, "rotary_emb_base": 10000, "rotary_pct": 0.25,
      "tie_word_embeddings": false, "use_parallel_residual": true, "vocab_size": 50304})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::GptNeoX);
    QCOMPARE(c.d_head, 64);
    QCOMPARE(c.rotary_dim, 16);
    QCOMPARE(c.rope_layout, hs::RopeLayout::RotateHalf);
    QVERIFY(c.parallel_residual);
    QCOMPARE(c.norm, hs::NormKind::LayerNorm);
    QCOMPARE(c.activation, std::string("gelu"));
    QVERIFY(c.qkv_bias && c.attn_out_bias && c.mlp_bias);
    QVERIFY(!c.tied_embeddings);
    QCOMPARE(hs::parameterCount(c), 70426624LL);  // pythia-70m
    json k = j;
    k.erase("use_parallel_residual");
    k.erase("rotary_pct");
    QVERIFY(hs::parseHfConfig(k, "config.json").parallel_residual);  // GPTNeoXConfig defaults
    QCOMPARE(hs::parseHfConfig(k, "config.json").rotary_dim, 16);
  }

  void olmo2() {
    // allenai/OLMo-2-0425-1B (abridged).
    const json j = json::parse(R"({"architectures": ["Olmo2ForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "olmo2",
      "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
      "rope_theta": 500000, "tie_word_embeddings": false, "vocab_size": 100352})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Olmo2);
    QVERIFY(c.post_norms);
    QCOMPARE(c.qk_norm, hs::QkNorm::Full);
    QCOMPARE(c.norm_eps, 1e-6);
    json k = j;
    k.erase("rms_norm_eps");
    QCOMPARE(hs::parseHfConfig(k, "config.json").norm_eps, 1e-5);  // Olmo2Config default
  }

  void byArchitectures() {
    const json j = json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 96, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 10})");
    QCOMPARE(hs::parseHfConfig(j, "config.json").arch, hs::Architecture::Qwen2);
    QCOMPARE(hs::parseHfConfig(j, "config.json").model_type, std::string("qwen2"));
  }

  void errors() {
    const json base = json::parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})");
    // The error of parsing `base` with one field set to `value`.
    const auto errorWith = [&](const std::string& field, const json& value) {
      return errorOf([&] {
        json j = base;
        j[field] = value;
        hs::parseHfConfig(j, "/m/config.json");
      });
    };
    std::string m = errorWith("model_type", "bert");
    CHECK_MSG(m, "/m/config.json");
    CHECK_MSG(m, "\"bert\"");
    CHECK_MSG(m, "gpt2, llama, mistral, qwen2, qwen3, gpt_neox, olmo2");
    m = errorOf(
        [&] { hs::parseHfConfig(json::parse(R"({"architectures": ["BertModel"]})"), "/m/config.json"); });
    CHECK_MSG(m, "BertModel");
    m = errorOf([&] { hs::parseHfConfig(json::parse(R"({"hidden_size": 3})"), "/m/config.json"); });
    CHECK_MSG(m, "model_type");
    m = errorOf([&] {
      json j = base;
      j.erase("hidden_size");
      hs::parseHfConfig(j, "/m/config.json");
    });
    CHECK_MSG(m, "/m/config.json");
    CHECK_MSG(m, "missing required field \"hidden_size\"");
    m = errorWith("num_hidden_layers", 0);
    CHECK_MSG(m, "\"num_hidden_layers\" must be positive");
    m = errorWith("num_attention_heads", 3);
    CHECK_MSG(m, "\"num_attention_heads\" (3) does not divide \"hidden_size\" (64)");
    m = errorWith("num_key_value_heads", 3);
    CHECK_MSG(m, "\"num_key_value_heads\" (3) does not divide");
    m = errorWith("vocab_size", "many");
    CHECK_MSG(m, "\"vocab_size\" must be an integer");
    m = errorWith("rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}});
    CHECK_MSG(m, "rope_scaling");
    CHECK_MSG(m, "yarn");
    m = errorWith("rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}});
    CHECK_MSG(m, "low_freq_factor");
    m = errorOf([&] {
      hs::parseHfConfig(json::parse(R"({"model_type": "gpt2", "n_embd": 100, "n_layer": 2, "n_head": 3,
        "vocab_size": 10})"),
                        "/m/config.json");
    });
    CHECK_MSG(m, "\"n_head\" (3) does not divide \"n_embd\" (100)");
    m = errorWith("hidden_act", "relu");
    CHECK_MSG(m, "hidden_act");
    CHECK_MSG(m, "relu");
  }

  void files() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("config.json").toStdString();
    {
      std::ofstream out(path);
      out << R"({"model_type": "llama", "hidden_size": 64,)";  // truncated JSON
    }
    std::string m = errorOf([&] { hs::readHfConfig(path); });
    CHECK_MSG(m, path);
    CHECK_MSG(m, "malformed JSON");
    m = errorOf([&] { hs::readHfConfig(dir.filePath("absent.json").toStdString()); });
    CHECK_MSG(m, "absent.json");
    {
      std::ofstream out(path);
      out << R"({"model_type": "gpt2", "n_embd": 8, "n_layer": 1, "n_head": 2, "vocab_size": 5})";
    }
    QCOMPARE(hs::readHfConfig(path).d_model, 8);
  }
};

QTEST_GUILESS_MAIN(TestConfigJson)
#include "test_config_json.moc"
