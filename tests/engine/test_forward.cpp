// The forward against an independent reference (stories260K: float64 re-implementation of run.c and
// run.c's own greedy text), and the invariances users rely on: left padding, KV cache, dtype, the two
// RoPE layouts, every family's code path; plus the input errors.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "engine_fixtures.h"
#include "model/onednn_gemm.h"
#include "model/rope.h"
#include "model/thread_policy.h"
#include "test_paths.h"

using namespace hs;
using namespace hs::test;

namespace {

const std::string kStoriesDir = "models/stories260K/";

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// llama2.c tok.bin → pieces; decode as run.c does (strip the space after BOS, <0xNN> → byte).
std::vector<std::string> readTokBin(const std::string& path, int vocab) {
  std::ifstream in(path, std::ios::binary);
  int32_t maxLen = 0;
  in.read(reinterpret_cast<char*>(&maxLen), 4);
  std::vector<std::string> pieces(vocab);
  for (int i = 0; i < vocab; ++i) {
    float score;
    int32_t len;
    in.read(reinterpret_cast<char*>(&score), 4);
    in.read(reinterpret_cast<char*>(&len), 4);
    pieces[i].resize(len);
    in.read(pieces[i].data(), len);
  }
  return pieces;
}

std::string decodeRunC(const std::vector<std::string>& pieces, int64_t prev, int64_t next) {
  std::string p = pieces[next];
  if (prev == 1 && !p.empty() && p[0] == ' ') p.erase(0, 1);
  unsigned int byte = 0;
  if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%02X>", &byte) == 1) return std::string(1, char(byte));
  return p;
}

// Same model with q/k rows of every head permuted from interleaved pairs (2i, 2i+1) to rotate-half
// pairs (i, i + rot/2) — what HF's conversion script does — must give the same logits.
at::Tensor permuteToRotateHalf(const at::Tensor& w, int64_t heads, int64_t dHead, int64_t rot) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rot; i += 2)
    perm.push_back(i);
  for (int64_t i = 1; i < rot; i += 2)
    perm.push_back(i);
  for (int64_t i = rot; i < dHead; ++i)
    perm.push_back(i);
  const at::Tensor idx = at::tensor(perm, at::TensorOptions().dtype(at::kLong));  // [d_head]
  return w.view({heads, dHead, -1}).index_select(1, idx).reshape(w.sizes());      // [heads·d_head, d_model]
}

// Every family's switches on a random model: each must survive padding and caching unchanged.
std::vector<std::pair<std::string, ModelConfig>> familyConfigs() {
  std::vector<std::pair<std::string, ModelConfig>> out;
  ModelConfig llama = tinyLlamaConfig();
  out.push_back({"llama-gqa", llama});
  ModelConfig qwen2 = llama;
  qwen2.arch = Architecture::Qwen2, qwen2.qkv_bias = true;
  out.push_back({"qwen2", qwen2});
  ModelConfig qwen3 = llama;
  qwen3.arch = Architecture::Qwen3, qwen3.qk_norm = QkNorm::PerHead;
  out.push_back({"qwen3", qwen3});
  ModelConfig olmo = llama;
  olmo.arch = Architecture::Olmo2, olmo.qk_norm = QkNorm::Full, olmo.norm_placement = NormPlacement::Post;
  out.push_back({"olmo2", olmo});
  ModelConfig neox = llama;
  neox.arch = Architecture::GptNeoX, neox.norm = NormKind::LayerNorm, neox.parallel_residual = true;
  neox.n_kv_heads = neox.n_heads, neox.rotary_dim = 4, neox.mlp = MlpKind::Gelu, neox.activation = "gelu";
  neox.qkv_bias = neox.attn_out_bias = neox.mlp_bias = true;
  out.push_back({"gpt_neox", neox});
  ModelConfig gpt2 = neox;
  gpt2.arch = Architecture::Gpt2, gpt2.parallel_residual = false, gpt2.rope_layout = RopeLayout::None;
  gpt2.learned_pos_emb = true, gpt2.activation = "gelu_new", gpt2.tied_embeddings = true;
  out.push_back({"gpt2", gpt2});
  ModelConfig llama31 = llama;
  llama31.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 16};
  out.push_back({"llama3.1-rope", llama31});
  // Sliding windows of 3 and 2 positions: shorter than the 7-token prompt and than the cache.
  ModelConfig mistral = llama;
  mistral.arch = Architecture::Mistral, mistral.sliding_window = 3;
  mistral.layer_attention.assign(size_t(mistral.n_layers), LayerAttention::Sliding);
  out.push_back({"mistral-window", mistral});
  ModelConfig gemma2 = llama;
  gemma2.arch = Architecture::Gemma2, gemma2.norm_placement = NormPlacement::PreAndPost;
  gemma2.norm_weight_offset = true, gemma2.scale_embeddings = true, gemma2.activation = "gelu_pytorch_tanh";
  gemma2.query_pre_attn_scalar = 12, gemma2.attn_logit_softcap = 2.0, gemma2.final_logit_softcap = 5.0;
  gemma2.sliding_window = 2, gemma2.tied_embeddings = true;
  gemma2.layer_attention = {LayerAttention::Sliding, LayerAttention::Global, LayerAttention::Sliding};
  out.push_back({"gemma2", gemma2});
  ModelConfig gemma3 = gemma2;
  gemma3.arch = Architecture::Gemma3, gemma3.qk_norm = QkNorm::PerHead, gemma3.rope_local_theta = 50.0;
  gemma3.rope_scaling = {"linear", 4.0, 1.0, 4.0, 8192};
  gemma3.attn_logit_softcap = gemma3.final_logit_softcap = 0;
  gemma3.layer_attention = {LayerAttention::Sliding, LayerAttention::Sliding, LayerAttention::Global};
  out.push_back({"gemma3", gemma3});
  return out;
}

}  // namespace

class TestForward : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void stories260KMatchesReferenceLogits() {
    const std::string bin = sharedData(kStoriesDir + "stories260K.bin");
    const std::string ref = sharedData(kStoriesDir + "reference_outputs.json");
    HS_REQUIRE_FILE(bin);
    HS_REQUIRE_FILE(ref);
    const Transformer model = loadStories260K(bin);
    const nlohmann::json j = readJson(ref);
    QCOMPARE(int(j["cases"].size()), 3);
    for (const auto& c : j["cases"]) {
      const std::vector<int64_t> ids = c["token_ids"].get<std::vector<int64_t>>();
      const RunResult r = model.run({row(ids)});
      const at::Tensor last = r.logits[0][-1];  // [vocab]
      const at::Tensor expected =
          at::tensor(c["last_position_logits_full"].get<std::vector<double>>());  // [vocab]
      const double diff = maxAbsDiff(last, expected);
      QVERIFY2(diff <= 1e-4,
               qPrintable(QString("prompt \"%1\": max |Δlogit| = %2 > 1e-4 (fp32, interleaved RoPE)")
                              .arg(QString::fromStdString(c["prompt"].get<std::string>()))
                              .arg(diff)));
      const std::vector<int64_t> argmax = c["argmax_per_position"].get<std::vector<int64_t>>();
      const at::Tensor got = r.logits[0].argmax(-1);  // [pos]
      for (size_t p = 0; p < argmax.size(); ++p)
        QCOMPARE(got[p].item<int64_t>(), argmax[p]);
    }
  }

  void stories260KGreedyReproducesRunC() {
    const std::string bin = sharedData(kStoriesDir + "stories260K.bin");
    const std::string tok = sharedData(kStoriesDir + "tok512.bin");
    const std::string ref = sharedData(kStoriesDir + "reference_outputs.json");
    HS_REQUIRE_FILE(bin);
    HS_REQUIRE_FILE(tok);
    HS_REQUIRE_FILE(ref);
    const Transformer model = loadStories260K(bin);
    const auto pieces = readTokBin(tok, model.config().vocab_size);
    const nlohmann::json j = readJson(ref);
    const std::vector<int64_t> prompt = j["cases"][0]["token_ids"].get<std::vector<int64_t>>();
    QCOMPARE(QString::fromStdString(j["cases"][0]["prompt"].get<std::string>()), QString("Once upon a time"));

    // run.c with steps = 64 runs positions 0..63: 4 forced prompt tokens, then 60 greedy ones,
    // and stops early on BOS (id 1). It prints every token after BOS.
    const std::vector<int64_t> generated = model.generateGreedy(prompt, 64 - int(prompt.size()) + 1, 1);
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), generated.begin(), generated.end());
    std::string text;
    for (size_t i = 1; i < all.size(); ++i)
      text += decodeRunC(pieces, all[i - 1], all[i]);
    std::string expected = j["run_c_greedy_prompt_Once_upon_a_time_n64"].get<std::string>();
    while (!expected.empty() && expected.back() == '\n')
      expected.pop_back();
    QCOMPARE(QString::fromStdString(text), QString::fromStdString(expected));
  }

  void stories260KLeftPaddedBatchMatchesSinglePrompts() {
    const std::string bin = sharedData(kStoriesDir + "stories260K.bin");
    const std::string ref = sharedData(kStoriesDir + "reference_outputs.json");
    HS_REQUIRE_FILE(bin);
    HS_REQUIRE_FILE(ref);
    const Transformer model = loadStories260K(bin);
    std::vector<std::vector<int64_t>> prompts;
    const nlohmann::json j = readJson(ref);
    for (const auto& c : j["cases"])
      prompts.push_back(c["token_ids"].get<std::vector<int64_t>>());
    QVERIFY(prompts[0].size() != prompts[1].size() || prompts[1].size() != prompts[2].size());
    const auto [tokens, mask] = leftPadded(prompts);
    RunRequest batch{tokens, mask};
    batch.last_logits_only = true;
    const at::Tensor batched = model.run(batch).logits;  // [3, 1, vocab]
    for (size_t b = 0; b < prompts.size(); ++b) {
      const at::Tensor single = model.run({row(prompts[b])}).logits[0][-1];  // [vocab]
      // Logits reach ~20 here: GEMMs of other shapes round differently by a few float32 ulps, so
      // the tolerance is 1e-5 relative to the largest logit (the random-model test uses 1e-5 absolute).
      const double diff = maxAbsDiff(batched[b][0], single);
      const double tol = 1e-5 * std::max(1.0, single.abs().max().item<double>());
      QVERIFY2(diff <= tol,
               qPrintable(QString("row %1: padded vs unpadded Δ = %2 > %3").arg(b).arg(diff).arg(tol)));
    }
  }

  void leftPaddingAndKvCacheAreInvisibleInEveryFamily() {
    for (const auto& [name, config] : familyConfigs()) {
      const Transformer model(config, randomWeights(config, 11));
      const std::vector<std::vector<int64_t>> prompts = {{3, 17, 22, 9, 41, 5, 8}, {12, 4}, {33, 2, 7, 49}};
      const auto [tokens, mask] = leftPadded(prompts, 0);
      const RunResult batched = model.run({tokens, mask});  // [3, 7, vocab]
      QVERIFY2(at::isfinite(batched.logits).all().item<bool>(), name.c_str());
      for (size_t b = 0; b < prompts.size(); ++b) {
        const int64_t n = prompts[b].size(), P = tokens.size(1);
        const at::Tensor single = model.run({row(prompts[b])}).logits[0];  // [n, vocab]
        const double diff = maxAbsDiff(batched.logits[b].narrow(0, P - n, n), single);
        // float32 rounding of GEMMs of other shapes: 1e-5 relative to the largest logit (the Gemma
        // configs, without soft-caps, reach logits of ~30 through the sqrt(d_model) embedding scale).
        const double tol = 1e-5 * std::max(1.0, single.abs().max().item<double>());
        QVERIFY2(diff <= tol, qPrintable(QString("%1 row %2: padded vs unpadded Δ = %3 > %4")
                                             .arg(name.c_str())
                                             .arg(b)
                                             .arg(diff)
                                             .arg(tol)));
      }

      // KV cache: prefill 3 positions, then one token, then a chunk of 2, then one — same logits
      // as one full forward, for the padded batch too.
      const at::Tensor full = batched.logits;  // [3, 7, vocab]
      KVCache cache;
      std::vector<at::Tensor> pieces;
      int64_t start = 0;
      for (int64_t len : {3, 1, 2, 1}) {
        RunRequest step{tokens.narrow(1, start, len), mask.narrow(1, start, len)};
        step.kv = &cache;
        pieces.push_back(model.run(step).logits);
        start += len;
        QCOMPARE(cache.length(), start);
      }
      const double diff = maxAbsDiff(at::cat(pieces, 1), full);
      const double tol = 1e-5 * std::max(1.0, full.abs().max().item<double>());
      QVERIFY2(diff <= tol,
               qPrintable(QString("%1: cached vs full Δ = %2 > %3").arg(name.c_str()).arg(diff).arg(tol)));
    }
  }

  // last_layer_from (a patching sweep's base runs): the last layer computes queries on from that position;
  // what it returns equals the full run's at those positions, and the cache gets every position's keys.
  void lastLayerFromKeepsTheLaterPositionsInEveryFamily() {
    for (const auto& [name, config] : familyConfigs()) {
      const Transformer model(config, randomWeights(config, 12));
      const int last = config.n_layers - 1;
      const auto [tokens, mask] = leftPadded({{3, 17, 22, 9, 41, 5, 8}, {12, 4, 30}}, 0);  // [2, 7]
      RunRequest full{tokens, mask};
      full.capture = {residPre(last), attnPattern(last), attnZ(last), residPost(last)};
      KVCache fullCache, tailCache;
      full.kv = &fullCache;
      RunRequest tail = full;
      tail.kv = &tailCache;
      tail.last_layer_from = 4;
      const RunResult a = model.run(full), b = model.run(tail);
      auto same = [&](const at::Tensor& x, const at::Tensor& y, const char* what) {
        const double tol = 1e-5 * std::max(1.0, x.abs().max().item<double>());
        QVERIFY2(x.sizes() == y.sizes() && maxAbsDiff(x, y) <= tol, (name + ": " + what).c_str());
      };
      same(a.logits.narrow(1, 4, 3), b.logits, "logits");
      same(a.cache.at(residPre(last)), b.cache.at(residPre(last)), "hook_resid_pre");
      same(a.cache.at(attnPattern(last)).narrow(2, 4, 3), b.cache.at(attnPattern(last)), "hook_pattern");
      same(a.cache.at(attnZ(last)).narrow(1, 4, 3), b.cache.at(attnZ(last)), "hook_z");
      same(a.cache.at(residPost(last)).narrow(1, 4, 3), b.cache.at(residPost(last)), "hook_resid_post");
      same(fullCache.k[last], tailCache.k[last], "cached keys");
      same(fullCache.v[last], tailCache.v[last], "cached values");
    }
    const Transformer model = tinyLlama();
    RunRequest req{row({4, 8, 15})};
    req.last_layer_from = 3;
    QVERIFY_THROWS_EXCEPTION(Error, model.run(req));  // must leave a position
    req.last_layer_from = 1;
    Intervention iv;
    iv.site = attnZ(0), iv.op = InterventionOp::Zero;
    req.interventions = {iv};
    QVERIFY_THROWS_EXCEPTION(Error, model.run(req));
  }

  void padOnlyRowsGiveNoNaN() {
    const Transformer model = tinyLlama();
    const auto [tokens, mask] = leftPadded({{1, 2, 3, 4}, {5}});
    RunRequest req{tokens, mask};
    req.capture = {attnPattern(0), attnZ(2)};
    const RunResult r = model.run(req);
    QVERIFY(at::isfinite(r.logits).all().item<bool>());
    // Padded query rows attend to nothing; real rows are distributions over real keys only.
    const at::Tensor pattern = r.cache.at(attnPattern(0));  // [batch, head, pos, k_pos]
    QCOMPARE(pattern[1].narrow(1, 0, 3).abs().sum().item<double>(), 0.0);
    QVERIFY(std::abs(pattern[1][0][3].sum().item<double>() - 1.0) < 1e-6);
    QCOMPARE(pattern[1][0][3].narrow(0, 0, 3).abs().sum().item<double>(), 0.0);
  }

  void ropeLayoutsAgreeWhenRowsArePermuted() {
    for (int rot : {8, 4}) {  // full and partial rotary (GPT-NeoX style)
      ModelConfig inter = tinyLlamaConfig();
      inter.rope_layout = RopeLayout::Interleaved;
      inter.rotary_dim = rot;
      const ModelWeights w = randomWeights(inter, 5);
      ModelConfig half = inter;
      half.rope_layout = RopeLayout::RotateHalf;
      ModelWeights wHalf = w;
      for (LayerWeights& lw : wHalf.layers) {
        lw.wq = permuteToRotateHalf(lw.wq, inter.n_heads, inter.d_head, rot);
        lw.wk = permuteToRotateHalf(lw.wk, inter.n_kv_heads, inter.d_head, rot);
      }
      const at::Tensor tokens = row({1, 9, 8, 30, 2, 44, 17, 17, 3});
      const at::Tensor a = Transformer(inter, w).run({tokens}).logits;
      const at::Tensor b = Transformer(half, wHalf).run({tokens}).logits;
      QVERIFY2(maxAbsDiff(a, b) <= 1e-5,
               qPrintable(QString("rotary_dim %1: Δ = %2").arg(rot).arg(maxAbsDiff(a, b))));
      // And RoPE matters: the unpermuted weights under the other layout give other logits.
      QVERIFY(maxAbsDiff(a, Transformer(half, w).run({tokens}).logits) > 1e-3);
    }
  }

  void llama3RopeScalingMatchesHuggingFace() {
    // Values from HF transformers `_compute_llama3_parameters` (theta 500000, head 128, factor 8,
    // low 1, high 4, original context 8192), float32: high frequencies kept, low ones / 8, index 30
    // smoothed in between.
    ModelConfig c;
    c.d_head = 128, c.rotary_dim = 128, c.rope_theta = 500000.0;
    c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
    const at::Tensor f = ropeInverseFrequencies(c);  // [64]
    QCOMPARE(f.size(0), int64_t(64));
    const std::vector<std::pair<int, double>> expected = {{0, 1.0},
                                                          {10, 0.12868738174438477},
                                                          {20, 0.016560440883040428},
                                                          {30, 0.0013718936825171113},
                                                          {40, 3.428102354519069e-05},
                                                          {50, 4.411534519022098e-06},
                                                          {63, 3.068925877869333e-07}};
    for (const auto& [i, v] : expected)
      QVERIFY2(std::abs(f[i].item<double>() - v) <= 1e-6 * v,
               qPrintable(QString("θ[%1] = %2, expected %3").arg(i).arg(f[i].item<double>()).arg(v)));
    c.rope_scaling = {"linear", 4.0};
    QVERIFY(std::abs(ropeInverseFrequencies(c)[10].item<double>() - 0.12868738174438477 / 4) < 1e-9);
    c.rope_scaling.type = "yarn";
    QVERIFY_THROWS_EXCEPTION(Error, ropeInverseFrequencies(c));
  }

  void bfloat16StaysCloseToFloat32() {
    const std::string bin = sharedData(kStoriesDir + "stories260K.bin");
    HS_REQUIRE_FILE(bin);
    Transformer model = loadStories260K(bin);
    const at::Tensor tokens = row({1, 403, 407, 261, 378, 432, 357, 373, 263, 378, 302});
    const at::Tensor fp32 = model.run({tokens}).logits;  // [1, pos, vocab]
    model.to(at::kBFloat16, at::kCPU);
    QVERIFY(model.dtype() == at::kBFloat16);
    QVERIFY(model.weights().unembed.is_same(model.weights().tok_emb));  // tied stays tied
    const at::Tensor bf16 = model.run({tokens}).logits;
    QVERIFY(bf16.scalar_type() == at::kFloat);  // logits always float32
    // bf16 keeps 8 mantissa bits: logits of magnitude ~20 may move by a few tenths. Stated
    // tolerance: 0.5 absolute on every logit, and the same top token at every position.
    const double diff = maxAbsDiff(bf16, fp32);
    qInfo("bf16 vs fp32 max |Δlogit| = %g", diff);
    QVERIFY2(diff <= 0.5, qPrintable(QString("bf16 Δ = %1").arg(diff)));
    QVERIFY(bf16.argmax(-1).equal(fp32.argmax(-1)));
  }

  // A bf16 model's logits are the float32-accurate product of the bf16-rounded final-norm output and the
  // bf16 unembedding (oneDNN with a float32 result, or two compensating GEMMs where gradients flow), not
  // that product rounded to bf16 (8 significant bits: ~0.1 on logits of magnitude 20).
  void bfloat16LogitsAreTheUnroundedProduct() {
    const std::string bin = sharedData(kStoriesDir + "stories260K.bin");
    HS_REQUIRE_FILE(bin);
    Transformer model = loadStories260K(bin);
    model.to(at::kBFloat16, at::kCPU);
    const at::Tensor tokens = row({1, 403, 407, 261, 378, 432, 357, 373, 263, 378, 302});
    RunRequest req{tokens};
    req.capture = {lnFinal()};
    const RunResult r = model.run(req);
    const at::Tensor normed =
        r.cache.at(lnFinal()).to(at::kBFloat16);  // [1, pos, d_model] as the GEMM reads it
    const at::Tensor exact = at::matmul(normed.to(at::kDouble), model.weights().unembed.to(at::kDouble).t());
    const double scale = exact.abs().max().item<double>();
    const double diff = maxAbsDiff(r.logits.to(at::kDouble), exact);
    qInfo("bf16 logits vs the float64 product: max |Δ| = %g (max |logit| %g)", diff, scale);
    QVERIFY2(diff <= 1e-5 * scale, qPrintable(QString("Δ = %1").arg(diff)));
    // With gradients on (attribution patching's path) the same numbers, through ATen's own GEMMs.
    at::Tensor lens;
    {
      RunRequest again{tokens};
      again.capture = {residPost(model.config().n_layers - 1)};
      const at::Tensor last = model.run(again).cache.at(residPost(model.config().n_layers - 1));
      lens = model.logitLens(last.detach().requires_grad_(true));  // [1, pos, vocab]
    }
    QVERIFY(lens.requires_grad());
    QVERIFY2(maxAbsDiff(lens.detach().to(at::kDouble), exact) <= 1e-5 * scale, "with gradients");
  }

  // transformers' sliding_window_overlay: key j is visible from query i iff i − window < j ≤ i, so a
  // query sees `window` positions, itself included; with a KV cache the rule uses absolute positions.
  void slidingWindowSeesTheLastWindowPositions() {
    for (const int window : {1, 3}) {
      ModelConfig c = tinyLlamaConfig();
      c.sliding_window = window;
      c.layer_attention = {LayerAttention::Global, LayerAttention::Sliding, LayerAttention::Global};
      const Transformer model(c, randomWeights(c, 3));
      const at::Tensor tokens = row({4, 9, 13, 21, 2, 40, 7, 7});  // [1, 8]
      RunRequest req{tokens};
      req.capture = {attnPattern(0), attnPattern(1)};
      const RunResult r = model.run(req);
      const at::Tensor global = r.cache.at(attnPattern(0))[0];  // [head, pos, k_pos]
      const at::Tensor local = r.cache.at(attnPattern(1))[0];   // [head, pos, k_pos]
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t j = 0; j < 8; ++j) {
          const bool visible = j <= i && j > i - window;
          QVERIFY2((local.select(1, i).select(1, j).abs().min().item<double>() > 0) == visible &&
                       (local.select(1, i).select(1, j).abs().max().item<double>() > 0) == visible,
                   qPrintable(QString("window %1: query %2, key %3").arg(window).arg(i).arg(j)));
          QCOMPARE(global.select(1, i).select(1, j).abs().min().item<double>() > 0, j <= i);
        }
      // Decoding one token at a time through the cache sees the same window.
      KVCache cache;
      RunRequest prefill{tokens.narrow(1, 0, 5)};
      prefill.kv = &cache;
      model.run(prefill);
      RunRequest step{tokens.narrow(1, 5, 3)};
      step.kv = &cache;
      step.capture = {attnPattern(1)};
      const at::Tensor cached = model.run(step).cache.at(attnPattern(1))[0];  // [head, 3, 8]
      QVERIFY(maxAbsDiff(cached, local.narrow(1, 5, 3)) <= 1e-6);
    }
  }

  // Gemma: the sqrt(d_model) factor is rounded to the compute dtype before it multiplies the embeddings
  // (HF: torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)); soft-capped logits stay inside the cap.
  void gemmaEmbeddingScaleAndSoftcaps() {
    ModelConfig c = tinyLlamaConfig();
    c.arch = Architecture::Gemma2, c.norm_placement = NormPlacement::PreAndPost, c.norm_weight_offset = true;
    c.scale_embeddings = true, c.final_logit_softcap = 1.5, c.attn_logit_softcap = 0.5;
    c.d_model = 48, c.d_head = 12, c.n_heads = 4, c.n_kv_heads = 2, c.rotary_dim = 12;  // sqrt(48) = 6.9282
    Transformer model(c, randomWeights(c, 8));
    const at::Tensor tokens = row({1, 2, 3, 4});
    RunRequest req{tokens};
    req.capture = {residPre(0), attnPattern(0)};
    RunResult r = model.run(req);
    const at::Tensor emb = model.weights().tok_emb.index_select(0, tokens[0]);  // [pos, d_model]
    QVERIFY(maxAbsDiff(r.cache.at(residPre(0))[0], emb * std::sqrt(48.0)) <= 1e-5);
    QVERIFY(r.logits.abs().max().item<double>() < 1.5);
    model.to(at::kBFloat16, at::kCPU);
    r = model.run(req);
    const at::Tensor embBf16 = model.weights().tok_emb.index_select(0, tokens[0]);  // [pos, d_model] bf16
    const double factor = at::scalar_tensor(std::sqrt(48.0), at::kBFloat16).item<double>();
    QCOMPARE(factor, 6.9375);  // 8 significant bits
    QVERIFY(r.cache.at(residPre(0))[0].equal(
        (embBf16 * at::scalar_tensor(factor, at::kBFloat16)).to(at::kFloat)));
    QVERIFY(r.logits.abs().max().item<double>() < 1.5);
  }

  void logitLensOfLastResidualIsTheLogits() {
    for (const auto& [name, config] : familyConfigs()) {  // final norm, unembedding and soft-cap
      const Transformer m(config, randomWeights(config, 4));
      RunRequest req{row({4, 8, 15, 16, 23, 42})};
      req.capture = {residPost(config.n_layers - 1)};
      const RunResult r = m.run(req);
      QVERIFY2(maxAbsDiff(m.logitLens(r.cache.at(residPost(config.n_layers - 1))), r.logits) <= 1e-5,
               name.c_str());
    }
    const Transformer model = tinyLlama();
    RunRequest req{row({4, 8, 15, 16, 23, 42})};
    req.capture = {residPost(2), lnFinal()};
    const RunResult r = model.run(req);
    QVERIFY(maxAbsDiff(model.logitLens(r.cache.at(residPost(2))), r.logits) <= 1e-5);
    // last_logits_only gives the last row of the full logits
    req.last_logits_only = true;
    const at::Tensor last = model.run(req).logits;  // [1, 1, vocab]
    QCOMPARE(last.size(1), int64_t(1));
    QVERIFY(maxAbsDiff(last[0][0], r.logits[0][-1]) <= 1e-6);
  }

  // One thread pool: the programs (and these tests) load Debian's OpenMP build of OpenBLAS, whose threads are
  // libgomp's, not the pthreads build the system's BLAS alternative points at (docs/performance.md).
  void openBlasSharesLibtorchsThreadPool() {
    const std::string expected = HEADSCOPE_EXPECTED_BLAS_THREADS;
    if (expected.empty()) QSKIP("built without libopenblas0-openmp (HEADSCOPE_OPENMP_BLAS)");
    QCOMPARE(std::string(hs::blasThreading()), expected);
    // The kernels the benchmarks report: OPENBLAS_CORETYPE's when it names kernels every x86-64 OpenBLAS
    // accepts by that name (others fall back to the CPU's), else the CPU's.
    const std::string core = hs::blasCore();
    QVERIFY(!core.empty());
    const QString forced = QString(std::getenv("OPENBLAS_CORETYPE")).toLower();
    if (QStringList{"haswell", "skylakex", "zen", "sandybridge"}.contains(forced))
      QCOMPARE(QString::fromStdString(core).toLower(), forced);
    // And float32 GEMMs go through it: a product OpenBLAS computes matches a double-precision one.
    const at::Tensor a = at::randn({64, 96}), b = at::randn({96, 80});
    QVERIFY(
        at::allclose(at::mm(a, b), at::mm(a.to(at::kDouble), b.to(at::kDouble)).to(at::kFloat), 1e-4, 1e-4));
  }

  // Float32 projections go through oneDNN where the build has it (onednn_gemm.h): the same products as
  // ATen's, for any row count (a sweep's variants have few rows), strided operands, bias or none, and
  // autograd falls back to ATen's differentiable op.
  void float32AffineMatchesDoublePrecision() {
    if (!hs::onednnFloatGemmAvailable())
      QSKIP("float32 products use ATen here (no oneDNN, or HEADSCOPE_GEMM=aten)");
    const at::Tensor wFull = at::randn({80, 128});  // [out, in + 32]
    const at::Tensor w = wFull.narrow(1, 16, 96);   // [out, in], rows strided by 128
    const at::Tensor b = at::randn({80});
    auto reference = [&](const at::Tensor& x, bool bias) {  // float64 x·wᵀ (+ b)
      at::Tensor y = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
      return bias ? y + b.to(at::kDouble) : y;
    };
    for (int64_t rows : {0, 1, 7, 130})
      for (bool bias : {false, true}) {
        const at::Tensor x = at::randn({96, rows}).t();  // [rows, in], not contiguous
        const at::Tensor y = hs::affine(x, w, bias ? b : at::Tensor());
        QCOMPARE(y.sizes(), at::IntArrayRef({rows, 80}));
        QVERIFY2(at::allclose(y.to(at::kDouble), reference(x, bias), 1e-5, 1e-4),
                 qPrintable(QString("rows %1, bias %2").arg(rows).arg(bias)));
      }
    const at::Tensor x3 = at::randn({2, 5, 96});  // [batch, pos, in]
    const at::Tensor y3 = hs::affine(x3, w, b);
    QCOMPARE(y3.sizes(), at::IntArrayRef({2, 5, 80}));
    QVERIFY(at::allclose(y3.to(at::kDouble), reference(x3, true), 1e-5, 1e-4));
    // With gradients wanted: ATen's op, whose gradient is x's true one.
    const at::Tensor xg = at::randn({3, 96}).requires_grad_(true);
    hs::affine(xg, w, b).sum().backward();
    QVERIFY(xg.grad().defined());
    QVERIFY(at::allclose(xg.grad(), w.sum(0).expand({3, 96}), 1e-5, 1e-5));
  }

  // Attention's batched products (q·kᵀ and pattern·v) in the layouts the forward hands them over.
  void float32BatchedMatmulMatchesDoublePrecision() {
    if (!hs::onednnFloatGemmAvailable())
      QSKIP("float32 products use ATen here (no oneDNN, or HEADSCOPE_GEMM=aten)");
    auto check = [](const at::Tensor& a, const at::Tensor& b, const char* what) {
      const at::Tensor y = hs::batchedMatmul(a, b);
      const at::Tensor ref = at::matmul(a.to(at::kDouble), b.to(at::kDouble));
      QVERIFY2(y.sizes() == ref.sizes(), what);
      QVERIFY2(y.scalar_type() == at::kFloat, what);
      QVERIFY2(at::allclose(y.to(at::kDouble), ref, 1e-5, 1e-4), what);
    };
    const at::Tensor q = at::randn({2, 3, 7, 16});  // [batch, head, q_pos, d_head]
    const at::Tensor k = at::randn({2, 3, 9, 16});  // [batch, head, k_pos, d_head]
    check(q, k.transpose(-1, -2), "scores: keys transposed (a view)");
    check(q.transpose(1, 2).contiguous().transpose(1, 2), k.transpose(-1, -2), "queries with strided batch");
    const at::Tensor p = at::randn({2, 3, 7, 12});  // [batch, head, q_pos, cached + fresh]
    check(p.narrow(-1, 3, 9), k, "pattern narrowed to the fresh keys");
    check(p.narrow(-1, 0, 3).transpose(0, 1).reshape({3, 14, 3}), at::randn({3, 3, 16}), "3-D, cached keys");
    check(at::randn({2, 3, 1, 16}), at::randn({2, 3, 16, 1}), "one query, one key");
    check(at::randn({5, 16, 4}).transpose(-1, -2), at::randn({5, 16, 6}), "both operands column-major");
    check(at::randn({2, 4, 6}).slice(-1, 0, 6, 2), at::randn({2, 3, 5}), "every other column (no dense dim)");
    check(at::randn({2, 1, 16}).expand({2, 4, 16}), at::randn({2, 16, 3}), "expanded rows");
    check(at::randn({0, 3, 4}), at::randn({0, 4, 2}), "empty batch");
    check(at::randn({2, 3, 0}), at::randn({2, 0, 5}), "empty inner dimension");
    // With gradients wanted: ATen's op and its gradient.
    const at::Tensor ag = at::randn({2, 3, 4}).requires_grad_(true);
    const at::Tensor bg = at::randn({2, 4, 5});
    hs::batchedMatmul(ag, bg).sum().backward();
    QVERIFY(ag.grad().defined());
    QVERIFY(at::allclose(ag.grad(), bg.sum(-1).unsqueeze(1).expand({2, 3, 4}), 1e-5, 1e-5));
  }

  void inputErrorsNameWhatIsWrong() {
    const Transformer model = tinyLlama();
    auto message = [&](const RunRequest& req) -> std::string {
      try {
        model.run(req);
      } catch (const Error& e) {
        return e.what();
      }
      return "no error";
    };
    const std::string badToken = message({row({1, 2, 50, 3})});
    QVERIFY2(badToken.find("token id 50") != std::string::npos &&
                 badToken.find("position 2") != std::string::npos &&
                 badToken.find("50 tokens") != std::string::npos,
             badToken.c_str());
    const std::string tooLong = message({at::zeros({1, 65}, at::kLong)});
    QVERIFY2(tooLong.find("prompt of 65 tokens exceeds the model's context of 64") != std::string::npos,
             tooLong.c_str());
    KVCache cache;
    RunRequest prefill{at::zeros({1, 60}, at::kLong)};
    prefill.kv = &cache;
    model.run(prefill);
    RunRequest more{at::zeros({1, 5}, at::kLong)};
    more.kv = &cache;
    const std::string cached = message(more);
    QVERIFY2(cached.find("prompt of 65 tokens") != std::string::npos, cached.c_str());
    QCOMPARE(cache.length(), int64_t(60));  // a failed run leaves the cache as it was
    const std::string badMask = message({row({1, 2, 3}), at::ones({1, 4}, at::kLong)});
    QVERIFY2(badMask.find("attention_mask has shape [1, 4], expected [1, 3]") != std::string::npos,
             badMask.c_str());
  }

  void generationWithCacheEqualsRecomputation() {
    const Transformer model = tinyLlama(3);
    std::vector<int64_t> ids = {1, 7, 7, 30, 12};
    const std::vector<int64_t> gen = model.generateGreedy(ids, 8);
    QCOMPARE(int(gen.size()), 8);
    for (int64_t next : gen) {  // greedy by full recomputation, one token at a time
      const int64_t argmax = model.run({row(ids)}).logits[0][-1].argmax().item<int64_t>();
      QCOMPARE(next, argmax);
      ids.push_back(argmax);
    }
  }
};

QTEST_GUILESS_MAIN(TestForward)
#include "test_forward.moc"
