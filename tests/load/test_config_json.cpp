// config.json → ModelConfig: every family with real-world configs (copied from the hub's files, trimmed to
// the fields that matter), the per-family HF defaults, and the errors for broken files.
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>

#include "load_error_util.h"
#include "model/load/config_json.h"
#include "test_paths.h"
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
    QCOMPARE(c.norm_placement, hs::NormPlacement::Post);
    QCOMPARE(c.qk_norm, hs::QkNorm::Full);
    QCOMPARE(c.norm_eps, 1e-6);
    json k = j;
    k.erase("rms_norm_eps");
    QCOMPARE(hs::parseHfConfig(k, "config.json").norm_eps, 1e-5);  // Olmo2Config default
  }

  void slidingWindows() {
    // Mistral-7B-v0.1 slides every layer over 4096 positions; v0.2+ set it to null (none).
    json j = json::parse(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
      "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
      "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false, "vocab_size": 32000})");
    hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.sliding_window, 4096);
    QCOMPARE(int(c.layer_attention.size()), 32);
    QVERIFY(hs::isSlidingLayer(c, 0) && hs::isSlidingLayer(c, 31));
    j["sliding_window"] = nullptr;
    c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.sliding_window, 0);
    QVERIFY(!hs::isSlidingLayer(c, 0));
    j.erase("sliding_window");  // MistralConfig's default
    QCOMPARE(hs::parseHfConfig(j, "config.json").sliding_window, 4096);

    // Qwen/Qwen2.5-7B-Instruct (abridged): a window is configured but use_sliding_window is false.
    json q = json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584,
      "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
      "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
      "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false,
      "use_sliding_window": false, "vocab_size": 152064})");
    c = hs::parseHfConfig(q, "config.json");
    QCOMPARE(c.sliding_window, 0);
    QVERIFY(c.layer_attention.empty());
    // With use_sliding_window, the layers from max_window_layers on slide (Qwen2Config.__post_init__).
    q["use_sliding_window"] = true;
    q["sliding_window"] = 4096;
    q["max_window_layers"] = 21;
    c = hs::parseHfConfig(q, "config.json");
    QCOMPARE(c.sliding_window, 4096);
    QVERIFY(!hs::isSlidingLayer(c, 20) && hs::isSlidingLayer(c, 21) && hs::isSlidingLayer(c, 27));
    // layer_types, when given, decides.
    q["layer_types"] = json::array();
    for (int l = 0; l < 28; ++l)
      q["layer_types"].push_back(l % 2 ? "full_attention" : "sliding_attention");
    c = hs::parseHfConfig(q, "config.json");
    QVERIFY(hs::isSlidingLayer(c, 0) && !hs::isSlidingLayer(c, 1) && hs::isSlidingLayer(c, 26));
    q["layer_types"][3] = "chunked_attention";
    std::string m = errorOf([&] { hs::parseHfConfig(q, "/m/config.json"); });
    CHECK_MSG(m, "/m/config.json");
    CHECK_MSG(m, "layer_types");
    CHECK_MSG(m, "chunked_attention");
    q["layer_types"] = json::array({"sliding_attention"});
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(q, "/m/config.json"); }), "list of 28 layer types");
  }

  void ropeParametersOfTransformers5() {
    // meta-llama/Llama-3.2-1B as transformers 5 writes it: no top-level rope_theta.
    const json j = json::parse(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 128000, "dtype": "bfloat16", "eos_token_id": 128001,
      "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
      "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
      "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
      "rms_norm_eps": 1e-05, "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0,
      "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
      "rope_type": "llama3"}, "tie_word_embeddings": true, "transformers_version": "5.0.0", "use_cache": true,
      "vocab_size": 128256})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.rope_theta, 500000.0);  // not the 10000 default
    QCOMPARE(c.rope_scaling.type, std::string("llama3"));
    QCOMPARE(c.rope_scaling.factor, 32.0);
    QCOMPARE(c.rope_scaling.original_max_position_embeddings, 8192);
    QCOMPARE(c.dtype, std::string("bfloat16"));
    QCOMPARE(hs::parameterCount(c), 1235814400LL);  // Llama-3.2-1B
    // A plain one.
    json k = j;
    k["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
    QCOMPARE(hs::parseHfConfig(k, "config.json").rope_theta, 250000.0);
    QVERIFY(hs::parseHfConfig(k, "config.json").rope_scaling.type.empty());
    // A contradicting top-level rope_theta, rope_scaling beside rope_parameters, an unsupported type,
    // a key the type does not use, partial rotary on a Llama: refused, naming what.
    k["rope_theta"] = 10000.0;
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "contradicts");
    k.erase("rope_theta");
    k["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "both \"rope_parameters\" and");
    k.erase("rope_scaling");
    k["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 1e6}, {"factor", 4.0}};
    std::string m = errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); });
    CHECK_MSG(m, "rope_parameters");
    CHECK_MSG(m, "yarn");
    k["rope_parameters"] = {
        {"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 4.0}, {"attention_factor", 1.2}};
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "\"attention_factor\"");
    k["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.5}};
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "partial_rotary_factor 0.5");
    // GPT-NeoX: partial rotary and the base inside rope_parameters.
    const json n = json::parse(R"({"model_type": "gpt_neox", "hidden_size": 512, "intermediate_size": 2048,
      "num_attention_heads": 8, "num_hidden_layers": 6, "vocab_size": 50304, "rope_parameters":
      {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25}})");
    QCOMPARE(hs::parseHfConfig(n, "config.json").rotary_dim, 16);
  }

  void gemma2() {
    // google/gemma-2-2b config.json.
    const json j = json::parse(R"({"architectures": ["Gemma2ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "attn_logit_softcapping": 50.0, "bos_token_id": 2,
      "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256,
      "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304,
      "initializer_range": 0.02, "intermediate_size": 9216, "max_position_embeddings": 8192,
      "model_type": "gemma2", "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
      "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
      "sliding_window": 4096, "torch_dtype": "float32", "transformers_version": "4.42.4", "use_cache": true,
      "vocab_size": 256000})");
    const hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Gemma2);
    QCOMPARE(c.norm_placement, hs::NormPlacement::PreAndPost);
    QVERIFY(c.norm_weight_offset && c.scale_embeddings && c.tied_embeddings);
    QCOMPARE(c.mlp, hs::MlpKind::SwiGLU);
    QCOMPARE(c.activation, std::string("gelu_pytorch_tanh"));
    QCOMPARE(c.query_pre_attn_scalar, 256.0);
    QCOMPARE(c.attn_logit_softcap, 50.0);
    QCOMPARE(c.final_logit_softcap, 30.0);
    QCOMPARE(c.sliding_window, 4096);
    QVERIFY(hs::isSlidingLayer(c, 0) && !hs::isSlidingLayer(c, 1) && hs::isSlidingLayer(c, 24));
    QVERIFY(!hs::isSlidingLayer(c, 25));
    QCOMPARE(c.qk_norm, hs::QkNorm::None);
    QCOMPARE(c.rope_local_theta, 0.0);
    QCOMPARE(hs::parameterCount(c), 2614341888LL);  // gemma-2-2b
    // google/gemma-2-9b's sizes; its 27B sibling scales queries by 144, not head_dim.
    json k = j;
    k["hidden_size"] = 3584, k["intermediate_size"] = 14336, k["num_hidden_layers"] = 42;
    k["num_attention_heads"] = 16, k["num_key_value_heads"] = 8;
    QCOMPARE(hs::parameterCount(hs::parseHfConfig(k, "config.json")), 9241705984LL);
    k["query_pre_attn_scalar"] = 144;
    QCOMPARE(hs::parseHfConfig(k, "config.json").query_pre_attn_scalar, 144.0);
    // null soft-caps switch them off; absent ones take Gemma2Config's defaults.
    k["attn_logit_softcapping"] = nullptr;
    k.erase("final_logit_softcapping");
    QCOMPARE(hs::parseHfConfig(k, "config.json").attn_logit_softcap, 0.0);
    QCOMPARE(hs::parseHfConfig(k, "config.json").final_logit_softcap, 30.0);
    k["use_bidirectional_attention"] = true;
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "use_bidirectional_attention");
    k.erase("use_bidirectional_attention");
    k["hidden_activation"] = "silu";
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "hidden_activation");
    k["hidden_activation"] = "gelu_pytorch_tanh";
    k["sliding_window_size"] = 2048;  // older files repeat the window under this name
    CHECK_MSG(errorOf([&] { hs::parseHfConfig(k, "/m/config.json"); }), "sliding_window_size");
  }

  void gemma3() {
    // google/gemma-3-1b-it config.json.
    const json j = json::parse(R"({"architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2,
      "cache_implementation": "hybrid", "eos_token_id": [1, 106], "final_logit_softcapping": null,
      "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
      "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
      "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
      "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
      "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
      "vocab_size": 262144})");
    hs::ModelConfig c = hs::parseHfConfig(j, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Gemma3);
    QCOMPARE(c.qk_norm, hs::QkNorm::PerHead);
    QCOMPARE(c.attn_logit_softcap, 0.0);
    QCOMPARE(c.final_logit_softcap, 0.0);
    QCOMPARE(c.rope_theta, 1e6);
    QCOMPARE(c.rope_local_theta, 10000.0);
    QCOMPARE(c.sliding_window, 512);
    // Every 6th layer (5, 11, ...) is global.
    for (int l = 0; l < 26; ++l)
      QCOMPARE(hs::isSlidingLayer(c, l), (l + 1) % 6 != 0);
    QCOMPARE(c.eos_token_id, 1);
    QCOMPARE(hs::parameterCount(c), 999885952LL);  // gemma-3-1b

    // google/gemma-3-4b-it: an image-text config whose text_config leaves most fields to the defaults.
    const json mm = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106],
      "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
      "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
      "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
      "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "vision_config": {"hidden_size": 1152,
      "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
      "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})");
    c = hs::parseHfConfig(mm, "config.json");
    QCOMPARE(c.arch, hs::Architecture::Gemma3);
    QCOMPARE(c.model_type, std::string("gemma3"));
    QCOMPARE(c.n_heads, 8);  // Gemma3TextConfig defaults
    QCOMPARE(c.n_kv_heads, 4);
    QCOMPARE(c.d_head, 256);
    QCOMPARE(c.vocab_size, 262208);
    QCOMPARE(c.rope_scaling.type, std::string("linear"));  // global layers only
    QCOMPARE(c.rope_scaling.factor, 8.0);
    QVERIFY(c.rope_local_scaling.type.empty());
    QCOMPARE(c.rope_local_theta, 10000.0);
    QCOMPARE(c.eos_token_id, 1);
    QCOMPARE(c.dtype, std::string("bfloat16"));
    QCOMPARE(hs::parameterCount(c), 3880263168LL);  // gemma-3-4b's text model
    json bad = mm;
    bad["text_config"]["attention_chunk_size"] = 128;
    std::string m = errorOf([&] { hs::parseHfConfig(bad, "/m/config.json"); });
    CHECK_MSG(m, "/m/config.json: text_config");
    CHECK_MSG(m, "attention_chunk_size");

    // transformers 5: rope_parameters per layer type, layer_types instead of the pattern.
    json v5 = j;
    for (const char* key : {"rope_theta", "rope_local_base_freq", "rope_scaling", "sliding_window_pattern"})
      v5.erase(key);
    v5["rope_parameters"] = json::parse(R"({"full_attention": {"rope_type": "linear", "factor": 8.0,
      "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})");
    v5["layer_types"] = json::array();
    for (int l = 0; l < 26; ++l)
      v5["layer_types"].push_back((l + 1) % 6 ? "sliding_attention" : "full_attention");
    c = hs::parseHfConfig(v5, "config.json");
    QCOMPARE(c.rope_theta, 1e6);
    QCOMPARE(c.rope_scaling.factor, 8.0);
    QCOMPARE(c.rope_local_theta, 10000.0);
    QVERIFY(c.rope_local_scaling.type.empty());
    QVERIFY(hs::isSlidingLayer(c, 4) && !hs::isSlidingLayer(c, 5));
    // transformers 5 also writes the pattern it derived layer_types from as "_sliding_window_pattern"; alone
    // it gives the layers as "sliding_window_pattern" does.
    v5["_sliding_window_pattern"] = 6;
    c = hs::parseHfConfig(v5, "config.json");
    QVERIFY(hs::isSlidingLayer(c, 4) && !hs::isSlidingLayer(c, 5));
    v5.erase("layer_types");
    v5["_sliding_window_pattern"] = 3;
    c = hs::parseHfConfig(v5, "config.json");
    for (int l = 0; l < 26; ++l)
      QCOMPARE(hs::isSlidingLayer(c, l), (l + 1) % 3 != 0);
  }

  // Every key is read by the family, known not to change the forward, or the file is refused naming it.
  void unknownFieldsAreRefused() {
    const json base = json::parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "use_cache": true,
      "initializer_range": 0.02, "transformers_version": "4.45.0", "pretraining_tp": 1, "pruned_heads": {}})");
    hs::parseHfConfig(base, "config.json");  // harmless keys pass
    const auto errorWith = [&](const std::string& key, const json& value) {
      return errorOf([&] {
        json j = base;
        j[key] = value;
        hs::parseHfConfig(j, "/m/config.json");
      });
    };
    std::string m = errorWith("logits_scaling", 4.0);  // Granite's, not Llama's
    CHECK_MSG(m, "/m/config.json");
    CHECK_MSG(m, "\"logits_scaling\"");
    CHECK_MSG(m, "llama");
    // A field another family reads is still unknown to this one (transformers' Llama ignores it).
    CHECK_MSG(errorWith("sliding_window", 4096), "\"sliding_window\"");
    CHECK_MSG(errorWith("attn_logit_softcapping", 50.0), "\"attn_logit_softcapping\"");
    CHECK_MSG(errorWith("quantization_config", {{"quant_method", "gptq"}}), "quantized checkpoints");
    CHECK_MSG(errorWith("auto_map", {{"AutoModelForCausalLM", "modeling_x.X"}}), "auto_map");
    CHECK_MSG(errorWith("pruned_heads", {{"0", {1}}}), "pruned_heads");
    // null means "not set": accepted for any key.
    QCOMPARE(errorWith("logits_scaling", nullptr), std::string());
    // Mistral does not read layer_types (transformers ignores it there, with a warning).
    m = errorOf([&] {
      hs::parseHfConfig(json::parse(R"({"model_type": "mistral", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
        "layer_types": ["sliding_attention", "full_attention"]})"),
                        "/m/config.json");
    });
    CHECK_MSG(m, "\"layer_types\"");
    // The toy model's own config.json passes.
    const std::string toy = hs::test::sourceDir("resources/models/toy-icl/config.json");
    QCOMPARE(hs::readHfConfig(toy).n_layers, 4);
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
