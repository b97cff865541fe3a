// llama2.c .bin reader: the real stories260K checkpoint (v0), and synthetic v0/v1/v2 files written
// here the way llama2.c's export.py writes them (legacy_export, version1_export, version2_export).
#include <ATen/ATen.h>

#include <QtTest>
#include <cstring>

#include "io_test_util.h"
#include "model/io/llama2c.h"
#include "test_paths.h"

using namespace hs;
using hs::test::appendPod;
using hs::test::readBytes;
using hs::test::writeBytes;

namespace {

struct Spec {
  int dim, hidden, layers, heads, kv, vocab, seq;
  bool shared;
};

std::string L(int l, const char* s) {
  return "model.layers." + std::to_string(l) + "." + s;
}

// Random weights under HF names, with export.py's shapes.
std::map<std::string, at::Tensor> randomWeights(const Spec& s, uint64_t seed) {
  at::manual_seed(seed);
  const int64_t hs = s.dim / s.heads, kvDim = hs * s.kv;
  std::map<std::string, at::Tensor> w;
  w["model.embed_tokens.weight"] = at::randn({s.vocab, s.dim});
  for (int l = 0; l < s.layers; ++l) {
    w[L(l, "input_layernorm.weight")] = at::rand({s.dim}) + 0.5;
    w[L(l, "self_attn.q_proj.weight")] = at::randn({s.dim, s.dim});
    w[L(l, "self_attn.k_proj.weight")] = at::randn({kvDim, s.dim});
    w[L(l, "self_attn.v_proj.weight")] = at::randn({kvDim, s.dim});
    w[L(l, "self_attn.o_proj.weight")] = at::randn({s.dim, s.dim});
    w[L(l, "post_attention_layernorm.weight")] = at::rand({s.dim}) + 0.5;
    w[L(l, "mlp.gate_proj.weight")] = at::randn({s.hidden, s.dim});
    w[L(l, "mlp.down_proj.weight")] = at::randn({s.dim, s.hidden});
    w[L(l, "mlp.up_proj.weight")] = at::randn({s.hidden, s.dim});
  }
  w["model.norm.weight"] = at::rand({s.dim}) + 0.5;
  if (!s.shared) w["lm_head.weight"] = at::randn({s.vocab, s.dim});
  return w;
}

void putF32(std::string& out, const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  out.append(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * 4);
}

void putHeaderInts(std::string& out, const Spec& s, int vocab) {
  for (int v : {s.dim, s.hidden, s.layers, s.heads, s.kv, vocab, s.seq})
    appendPod<int32_t>(out, v);
}

// Every per-layer tensor of one kind, layer after layer (export.py's *[... for layer in layers]).
void putLayers(std::string& out, const std::map<std::string, at::Tensor>& w, const Spec& s,
               const char* suffix) {
  for (int l = 0; l < s.layers; ++l)
    putF32(out, w.at(L(l, suffix)));
}

const char* const kMatrixOrder[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                    "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                                    "mlp.gate_proj.weight",    "mlp.down_proj.weight",
                                    "mlp.up_proj.weight"};

std::string exportV0(const Spec& s, const std::map<std::string, at::Tensor>& w, bool ropeTable) {
  std::string out;
  putHeaderInts(out, s, s.shared ? s.vocab : -s.vocab);
  putF32(out, w.at("model.embed_tokens.weight"));
  putLayers(out, w, s, "input_layernorm.weight");
  for (const char* m : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                        "self_attn.o_proj.weight"})
    putLayers(out, w, s, m);
  putLayers(out, w, s, "post_attention_layernorm.weight");
  for (const char* m : {"mlp.gate_proj.weight", "mlp.down_proj.weight", "mlp.up_proj.weight"})
    putLayers(out, w, s, m);
  putF32(out, w.at("model.norm.weight"));
  if (ropeTable) putF32(out, at::randn({2, s.seq, s.dim / s.heads / 2}));  // freqs_cos, freqs_sin
  if (!s.shared) putF32(out, w.at("lm_head.weight"));
  return out;
}

std::string versionedHeader(const Spec& s, int version, int groupSize) {
  std::string out;
  appendPod<uint32_t>(out, 0x616b3432);
  appendPod<int32_t>(out, version);
  putHeaderInts(out, s, s.vocab);
  appendPod<uint8_t>(out, s.shared ? 1 : 0);
  if (version == 2) appendPod<int32_t>(out, groupSize);
  out.resize(256, '\0');
  return out;
}

std::string exportV1(const Spec& s, const std::map<std::string, at::Tensor>& w) {
  std::string out = versionedHeader(s, 1, 0);
  putLayers(out, w, s, "input_layernorm.weight");
  putLayers(out, w, s, "post_attention_layernorm.weight");
  putF32(out, w.at("model.norm.weight"));
  putF32(out, w.at("model.embed_tokens.weight"));
  for (const char* m : kMatrixOrder)
    putLayers(out, w, s, m);
  if (!s.shared) putF32(out, w.at("lm_head.weight"));
  return out;
}

// export.py quantize_q80: per group of `gs` values, scale = max|w| / 127, q = round(w / scale).
// Stores int8 values then fp32 scales; *dequant receives q * scale (what runq.c computes).
void putQ80(std::string& out, const at::Tensor& w, int gs, at::Tensor* dequant) {
  const at::Tensor g = w.reshape({-1, gs});                              // [groups, gs]
  const at::Tensor scale = std::get<0>(g.abs().max(1)) / 127.0;          // [groups]
  const at::Tensor q = at::round(g / scale.unsqueeze(1)).to(at::kChar);  // [groups, gs]
  out.append(static_cast<const char*>(q.contiguous().data_ptr()), static_cast<size_t>(q.numel()));
  putF32(out, scale);
  *dequant = (q.to(at::kFloat) * scale.unsqueeze(1)).reshape(w.sizes());
}

std::string exportV2(const Spec& s, const std::map<std::string, at::Tensor>& w, int gs,
                     std::map<std::string, at::Tensor>* expected) {
  std::string out = versionedHeader(s, 2, gs);
  *expected = w;
  putLayers(out, w, s, "input_layernorm.weight");
  putLayers(out, w, s, "post_attention_layernorm.weight");
  putF32(out, w.at("model.norm.weight"));
  std::vector<std::string> quantised = {"model.embed_tokens.weight"};
  for (const char* m : kMatrixOrder)
    for (int l = 0; l < s.layers; ++l)
      quantised.push_back(L(l, m));
  if (!s.shared) quantised.push_back("lm_head.weight");
  for (const auto& name : quantised)
    putQ80(out, w.at(name), gs, &(*expected)[name]);
  return out;
}

bool bitEqual(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && at::equal(a, b);
}

void compareAll(const RawCheckpoint& ck, const std::map<std::string, at::Tensor>& expected) {
  QCOMPARE(ck.tensors.size(), expected.size());
  for (const auto& [name, t] : expected) {
    QVERIFY2(ck.tensors.count(name), name.c_str());
    QVERIFY2(bitEqual(ck.tensors.at(name), t), name.c_str());
  }
}

}  // namespace

class TestLlama2c : public QObject, protected hs::test::TempDirFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void stories260KConfigAndNames() {
    const std::string path = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(path);
    const RawCheckpoint ck = readLlama2c(path);
    const ModelConfig& c = ck.config;
    QCOMPARE(ck.path, path);
    HS_CHECK_STORIES260K_SHAPES(c);
    QCOMPARE(c.context_length, 512);
    QVERIFY(c.tied_embeddings);
    QVERIFY(c.rope_layout == RopeLayout::Interleaved);
    QVERIFY(c.arch == Architecture::Llama);
    QVERIFY(c.mlp == MlpKind::SwiGLU);
    QCOMPARE(c.source_format, std::string("llama2c"));
    QCOMPARE(c.model_type, std::string("llama"));
    QCOMPARE(c.norm_eps, 1e-5);
    QCOMPARE(c.rope_theta, 10000.0);
    QCOMPARE(c.bos_token_id, 1);
    QCOMPARE(c.eos_token_id, 2);

    QCOMPARE(ck.tensors.size(), size_t(2 + 9 * 5));  // embeddings, final norm, 9 per layer; no lm_head
    QVERIFY(!ck.tensors.count("lm_head.weight"));
    const std::map<std::string, std::vector<int64_t>> shapes = {
        {"model.embed_tokens.weight", {512, 64}},
        {"model.norm.weight", {64}},
        {"model.layers.4.input_layernorm.weight", {64}},
        {"model.layers.4.self_attn.q_proj.weight", {64, 64}},
        {"model.layers.4.self_attn.k_proj.weight", {32, 64}},
        {"model.layers.4.self_attn.v_proj.weight", {32, 64}},
        {"model.layers.4.self_attn.o_proj.weight", {64, 64}},
        {"model.layers.4.post_attention_layernorm.weight", {64}},
        {"model.layers.4.mlp.gate_proj.weight", {172, 64}},
        {"model.layers.4.mlp.down_proj.weight", {64, 172}},
        {"model.layers.4.mlp.up_proj.weight", {172, 64}},
    };
    for (const auto& [name, shape] : shapes) {
      QVERIFY2(ck.tensors.count(name), name.c_str());
      QCOMPARE(ck.tensors.at(name).sizes().vec(), shape);
      QCOMPARE(ck.tensors.at(name).scalar_type(), at::kFloat);
    }
  }

  void stories260KValuesAtTheirFileOffsets() {
    const std::string path = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(path);
    const RawCheckpoint ck = readLlama2c(path);
    const std::string bytes = readBytes(path);
    // Offsets (in floats after the 28-byte header) from the layout in shared/data/README.md.
    const int64_t emb = 512 * 64, rmsAtt = 5 * 64, wq = 5 * 64 * 64, wk = 5 * 32 * 64, wo = wq,
                  rmsFfn = rmsAtt;
    const int64_t w1 = 5 * 172 * 64;
    auto at = [&](int64_t floatOffset, std::vector<int64_t> shape) {
      at::Tensor t = at::empty(shape, at::kFloat);
      std::memcpy(t.data_ptr(), bytes.data() + 28 + floatOffset * 4, static_cast<size_t>(t.numel()) * 4);
      return t;
    };
    QVERIFY(bitEqual(ck.tensors.at("model.embed_tokens.weight"), at(0, {512, 64})));
    QVERIFY(bitEqual(ck.tensors.at("model.layers.2.input_layernorm.weight"), at(emb + 2 * 64, {64})));
    QVERIFY(bitEqual(ck.tensors.at("model.layers.3.self_attn.q_proj.weight"),
                     at(emb + rmsAtt + 3 * 4096, {64, 64})));
    QVERIFY(bitEqual(ck.tensors.at("model.layers.1.self_attn.v_proj.weight"),
                     at(emb + rmsAtt + wq + wk + 1 * 2048, {32, 64})));
    const int64_t afterAttn = emb + rmsAtt + wq + 2 * wk + wo;
    QVERIFY(bitEqual(ck.tensors.at("model.layers.0.post_attention_layernorm.weight"), at(afterAttn, {64})));
    QVERIFY(bitEqual(ck.tensors.at("model.layers.4.mlp.down_proj.weight"),
                     at(afterAttn + rmsFfn + w1 + 4 * 172 * 64, {64, 172})));
    QVERIFY(bitEqual(ck.tensors.at("model.norm.weight"), at(afterAttn + rmsFfn + 3 * w1, {64})));
    // fp32 tensors are views of one mapped block, not per-layer copies.
    QCOMPARE(ck.tensors.at("model.layers.0.self_attn.q_proj.weight").storage().data(),
             ck.tensors.at("model.layers.4.self_attn.q_proj.weight").storage().data());
  }

  void stories260KWithAByteCutOrAppendedIsRejected() {
    const std::string path = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(path);
    const std::string bytes = readBytes(path);
    QCOMPARE(bytes.size(), size_t(1056540));
    const std::string cut = tmp("cut.bin"), longer = tmp("longer.bin");
    writeBytes(cut, bytes.substr(0, bytes.size() - 1));
    writeBytes(longer, bytes + std::string(1, '\0'));
    HS_EXPECT_ERROR(readLlama2c(cut), cut, "file has 1056539 bytes, header implies 1056540");
    HS_EXPECT_ERROR(readLlama2c(longer), longer, "file has 1056541 bytes, header implies 1056540");
  }

  void version0TiedAndUntied() {
    for (bool shared : {true, false})
      for (bool rope : {true, false}) {
        const Spec s{16, 24, 2, 4, 2, 11, 6, shared};
        const auto w = randomWeights(s, 3);
        const std::string path = tmp("v0.bin");
        writeBytes(path, exportV0(s, w, rope));
        const RawCheckpoint ck = readLlama2c(path);
        QCOMPARE(ck.config.tied_embeddings, shared);
        QCOMPARE(ck.config.vocab_size, 11);
        QCOMPARE(ck.config.n_kv_heads, 2);
        compareAll(ck, w);
      }
  }

  void version1TiedAndUntied() {
    for (bool shared : {true, false}) {
      const Spec s{16, 40, 3, 4, 1, 13, 8, shared};
      const auto w = randomWeights(s, 5);
      const std::string path = tmp("v1.bin");
      writeBytes(path, exportV1(s, w));
      const RawCheckpoint ck = readLlama2c(path);
      QCOMPARE(ck.config.tied_embeddings, shared);
      QCOMPARE(ck.config.n_layers, 3);
      QCOMPARE(ck.config.d_mlp, 40);
      QCOMPARE(ck.config.context_length, 8);
      compareAll(ck, w);
      // Cutting the classifier's last float is a size error, not a silent short read.
      const std::string bytes = readBytes(path);
      writeBytes(path, bytes.substr(0, bytes.size() - 4));
      HS_EXPECT_ERROR(readLlama2c(path), path, "file has " + std::to_string(bytes.size() - 4) + " bytes",
                      "header implies " + std::to_string(bytes.size()));
    }
  }

  void version2DequantisesQ80() {
    for (bool shared : {true, false}) {
      const Spec s{32, 48, 2, 4, 2, 10, 8, shared};
      const auto w = randomWeights(s, 9);
      std::map<std::string, at::Tensor> expected;
      const std::string path = tmp("v2.bin");
      writeBytes(path, exportV2(s, w, 16, &expected));
      const RawCheckpoint ck = readLlama2c(path);
      QCOMPARE(ck.config.tied_embeddings, shared);
      compareAll(ck, expected);  // q * scale exactly, as runq.c dequantises
      // And the dequantised weights are within half a quantisation step of the originals.
      const at::Tensor orig = w.at("model.layers.1.mlp.down_proj.weight").reshape({-1, 16});
      const at::Tensor step = std::get<0>(orig.abs().max(1, true)) / 127.0;
      const at::Tensor err =
          (ck.tensors.at("model.layers.1.mlp.down_proj.weight").reshape({-1, 16}) - orig).abs();
      QVERIFY((err <= step * 0.5 + 1e-6).all().item<bool>());
      QVERIFY(!at::equal(ck.tensors.at("model.layers.1.mlp.down_proj.weight"),
                         w.at("model.layers.1.mlp.down_proj.weight")));
    }
  }

  void nonsenseHeadersAreRejected_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    auto v0 = [](std::vector<int> ints) {
      std::string b;
      for (int v : ints)
        appendPod<int32_t>(b, v);
      b.resize(4096, '\0');
      return QByteArray(b.data(), static_cast<int>(b.size()));
    };
    QTest::newRow("dim 0") << v0({0, 8, 1, 1, 1, 10, 4}) << "dim must be in 1..65536";
    QTest::newRow("negative layers") << v0({8, 8, -1, 2, 2, 10, 4}) << "n_layers must be in 1..1024";
    QTest::newRow("heads do not divide dim")
        << v0({10, 8, 1, 4, 4, 10, 4}) << "dim must be a multiple of n_heads";
    QTest::newRow("kv heads above heads") << v0({8, 8, 1, 2, 4, 10, 4}) << "n_kv_heads must be in 1..n_heads";
    QTest::newRow("heads not a multiple of kv") << v0({12, 8, 1, 3, 2, 10, 4}) << "multiple of n_kv_heads";
    QTest::newRow("odd head size") << v0({6, 8, 1, 2, 2, 10, 4}) << "head size dim/n_heads must be even";
    QTest::newRow("vocab 0") << v0({8, 8, 1, 2, 2, 0, 4}) << "vocab_size must be in";
    QTest::newRow("absurd hidden") << v0({8, 1 << 30, 1, 2, 2, 10, 4}) << "hidden_dim must be in";
    {
      std::string b;
      appendPod<uint32_t>(b, 0x616b3432);
      appendPod<int32_t>(b, 3);
      b.resize(300, '\0');
      QTest::newRow("unknown version")
          << QByteArray(b.data(), int(b.size())) << "llama2.c version 3 is not supported";
    }
    {
      std::string b;
      appendPod<uint32_t>(b, 0x616b3432);
      appendPod<int32_t>(b, 2);
      for (int v : {32, 8, 1, 4, 4, 10, 4})
        appendPod<int32_t>(b, v);
      appendPod<uint8_t>(b, 1);
      appendPod<int32_t>(b, 12);  // group size that does not divide dim
      b.resize(300, '\0');
      QTest::newRow("bad group size")
          << QByteArray(b.data(), int(b.size())) << "group_size 12 must divide dim";
    }
    QTest::newRow("too short") << QByteArray("\x08\0\0\0", 4) << "too short for a llama2.c header";
  }

  void nonsenseHeadersAreRejected() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const std::string path = tmp("bad.bin");
    writeBytes(path, bytes.toStdString());
    HS_EXPECT_ERROR(readLlama2c(path), path, expected.toStdString());
  }
};

QTEST_GUILESS_MAIN(TestLlama2c)
#include "test_llama2c.moc"
