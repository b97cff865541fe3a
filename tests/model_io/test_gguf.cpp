// GGUF reader: the real stories260K.gguf against the llama2.c .bin it was converted from,
// hand-built Q8_0/Q4_0 blocks, every metadata value type, and broken files.
#include <ATen/ATen.h>
#include <c10/util/Half.h>

#include <QtTest>
#include <cstring>

#include "io_test_util.h"
#include "model/io/gguf.h"
#include "model/io/gguf_writer.h"
#include "model/io/llama2c.h"
#include "test_paths.h"

using namespace hs;
using hs::test::appendPod;
using hs::test::writeBytes;

namespace {

uint16_t halfBits(float x) {
  return c10::Half(x).x;
}

// A minimal llama GGUF (F32) with the given tensors and llama.* keys for a 1-layer model.
GgufWriter tinyLlama(const std::string& arch = "llama") {
  GgufWriter w;
  w.addString("general.architecture", arch);
  w.addU32("llama.block_count", 1);
  w.addU32("llama.embedding_length", 8);
  w.addU32("llama.feed_forward_length", 12);
  w.addU32("llama.attention.head_count", 2);
  w.addU32("llama.attention.head_count_kv", 1);
  w.addU32("llama.context_length", 32);
  w.addF32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w.addF32("llama.rope.freq_base", 500000.0f);
  w.addU32("tokenizer.ggml.bos_token_id", 5);
  w.addU32("tokenizer.ggml.eos_token_id", 6);
  return w;
}

void addTinyTensors(GgufWriter& w, std::map<std::string, at::Tensor>* expected) {
  at::manual_seed(11);
  auto add = [&](const std::string& g, const std::string& hf, at::Tensor t) {
    w.addTensor(g, t);
    (*expected)[hf] = t;
  };
  add("token_embd.weight", "model.embed_tokens.weight", at::randn({10, 8}));
  add("output_norm.weight", "model.norm.weight", at::randn({8}));
  add("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", at::randn({8}));
  add("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", at::randn({8, 8}));
  add("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", at::randn({4, 8}));
  add("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", at::randn({4, 8}));
  add("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", at::randn({8, 8}));
  add("blk.0.ffn_norm.weight", "model.layers.0.post_attention_layernorm.weight", at::randn({8}));
  add("blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight", at::randn({12, 8}));
  add("blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight", at::randn({12, 8}));
  add("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", at::randn({8, 12}));
}

}  // namespace

class TestGguf : public QObject, protected hs::test::TempDirFixture {
  Q_OBJECT

 private:
  std::string write(const std::string& name, const GgufWriter& w) {
    const std::string p = tmp(name);
    w.write(p);
    return p;
  }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void stories260KHeaderAndMetadata() {
    const std::string path = hs::test::sharedData("models/stories260K/stories260K.gguf");
    HS_REQUIRE_FILE(path);
    auto f = GgufFile::open(path);
    QCOMPARE(f->version(), 3u);
    QCOMPARE(f->tensors().size(), size_t(48));
    QCOMPARE(f->metadata().at("general.architecture").get<std::string>(), std::string("llama"));
    QCOMPARE(f->metadata().at("llama.block_count").get<int>(), 5);
    QCOMPARE(f->metadata().at("tokenizer.ggml.tokens").size(), size_t(512));
    QCOMPARE(f->metadata().at("tokenizer.ggml.tokens")[1].get<std::string>(), std::string("<s>"));
    QCOMPARE(f->info("token_embd.weight").shape, (std::vector<int64_t>{512, 64}));  // ne = [64, 512]
    QCOMPARE(f->info("blk.0.ffn_down.weight").shape, (std::vector<int64_t>{64, 172}));
    const at::Tensor t = f->tensor("blk.2.attn_q.weight");
    QVERIFY(f->mapped().contains(t.data_ptr(), 64 * 64 * 4));  // F32 is a zero-copy view
  }

  void stories260KMatchesTheLlama2cBinBitForBit() {
    const std::string gguf = hs::test::sharedData("models/stories260K/stories260K.gguf");
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(gguf);
    HS_REQUIRE_FILE(bin);
    const RawCheckpoint g = readGgufModel(gguf), b = readLlama2c(bin);
    const ModelConfig& c = g.config;
    HS_CHECK_STORIES260K_SHAPES(c);
    QCOMPARE(c.context_length, 2048);  // what the metadata says (trained at 512)
    QCOMPARE(c.source_format, std::string("gguf"));
    QVERIFY(c.rope_layout == RopeLayout::Interleaved);
    QVERIFY(std::abs(c.norm_eps - 1e-5) < 1e-10);
    QCOMPARE(c.rope_theta, 10000.0);
    QCOMPARE(c.bos_token_id, 1);
    QCOMPARE(c.eos_token_id, 2);
    QVERIFY(!c.tied_embeddings);  // the converter wrote output.weight explicitly
    for (const auto& [name, t] : b.tensors) {
      QVERIFY2(g.tensors.count(name), name.c_str());
      const at::Tensor& u = g.tensors.at(name);
      QVERIFY2(u.sizes() == t.sizes() && u.scalar_type() == t.scalar_type(), name.c_str());
      QVERIFY2(at::equal(u, t), name.c_str());
    }
    QCOMPARE(g.tensors.size(), b.tensors.size() + 1);
    QVERIFY(at::equal(g.tensors.at("lm_head.weight"), b.tensors.at("model.embed_tokens.weight")));
  }

  void readModelFromWrittenFile() {
    GgufWriter w = tinyLlama();
    std::map<std::string, at::Tensor> expected;
    addTinyTensors(w, &expected);
    const RawCheckpoint ck = readGgufModel(write("tiny.gguf", w));
    QCOMPARE(ck.tensors.size(), expected.size());
    for (const auto& [name, t] : expected)
      QVERIFY2(at::equal(ck.tensors.at(name), t), name.c_str());
    QVERIFY(ck.config.tied_embeddings);  // no output.weight
    QCOMPARE(ck.config.n_kv_heads, 1);
    QCOMPARE(ck.config.d_head, 4);
    QCOMPARE(ck.config.vocab_size, 10);
    QCOMPARE(ck.config.rope_theta, 500000.0);
    QCOMPARE(ck.config.bos_token_id, 5);
  }

  void q8_0BlocksDequantise() {
    // torch shape [2, 64] = ne [64, 2] = 4 blocks of 32; scales exact in fp16.
    const float scales[4] = {0.5f, -0.25f, 2.0f, 0.125f};
    std::string bytes;
    at::Tensor expected = at::empty({2, 64});
    float* e = expected.data_ptr<float>();
    for (int b = 0; b < 4; ++b) {
      appendPod<uint16_t>(bytes, halfBits(scales[b]));
      for (int i = 0; i < 32; ++i) {
        const int8_t q = static_cast<int8_t>((i * 37 + b * 11) % 255 - 127);  // spans -127..127
        appendPod<int8_t>(bytes, q);
        e[b * 32 + i] = scales[b] * q;
      }
    }
    QCOMPARE(bytes.size(), size_t(4 * 34));
    GgufWriter w;
    w.addRawTensor("q", {2, 64}, kGgmlQ8_0, bytes);
    auto f = GgufFile::open(write("q8.gguf", w));
    const at::Tensor t = f->tensor("q");
    QCOMPARE(t.scalar_type(), at::kFloat);
    QCOMPARE(t.sizes().vec(), (std::vector<int64_t>{2, 64}));
    QVERIFY(at::equal(t, expected));
    QCOMPARE(t[1][32 + 5].item<float>(), 0.125f * static_cast<int8_t>((5 * 37 + 3 * 11) % 255 - 127));
  }

  void q4_0BlocksDequantise() {
    // One block by hand: low nibbles are elements 0..15, high nibbles 16..31, x = d * (nibble - 8).
    std::string bytes;
    appendPod<uint16_t>(bytes, halfBits(1.5f));
    for (int j = 0; j < 16; ++j)
      appendPod<uint8_t>(bytes, static_cast<uint8_t>((15 - j) << 4 | j));
    appendPod<uint16_t>(bytes, halfBits(-0.5f));  // second block: every byte 0x8F
    for (int j = 0; j < 16; ++j)
      appendPod<uint8_t>(bytes, 0x8F);
    GgufWriter w;
    w.addRawTensor("q", {64}, kGgmlQ4_0, bytes);
    auto f = GgufFile::open(write("q4.gguf", w));
    const at::Tensor t = f->tensor("q");
    QCOMPARE(t.sizes().vec(), std::vector<int64_t>{64});
    for (int j = 0; j < 16; ++j) {
      QCOMPARE(t[j].item<float>(), 1.5f * (j - 8));
      QCOMPARE(t[j + 16].item<float>(), 1.5f * ((15 - j) - 8));
      QCOMPARE(t[32 + j].item<float>(), -0.5f * (15 - 8));  // low nibble 0xF
      QCOMPARE(t[48 + j].item<float>(), -0.5f * (8 - 8));   // high nibble 0x8
    }
  }

  void halfAndBf16KeepTheirDtype() {
    at::manual_seed(2);
    const at::Tensor h = at::randn({3, 4}).to(at::kHalf), b = at::randn({5}).to(at::kBFloat16);
    const at::Tensor i = at::randint(-1000, 1000, {6}, at::kInt);
    GgufWriter w;
    w.addTensor("h", h);
    w.addTensor("b", b);
    w.addTensor("i", i);
    auto f = GgufFile::open(write("half.gguf", w));
    QCOMPARE(f->tensor("h").scalar_type(), at::kHalf);
    QCOMPARE(f->tensor("b").scalar_type(), at::kBFloat16);
    QVERIFY(at::equal(f->tensor("h"), h));
    QVERIFY(at::equal(f->tensor("b"), b));
    QVERIFY(at::equal(f->tensor("i"), i));
    QVERIFY(f->mapped().contains(f->tensor("h").data_ptr(), 24));
  }

  void everyMetadataTypeReadsBack() {
    GgufWriter w(2);  // v2 has the same layout
    w.addU8("u8", 250);
    w.addI8("i8", -100);
    w.addU16("u16", 65000);
    w.addI16("i16", -32000);
    w.addU32("u32", 4000000000u);
    w.addI32("i32", -2000000000);
    w.addF32("f32", 0.1f);
    w.addBool("bool", true);
    w.addString("str", "héllo");
    w.addU64("u64", (uint64_t(1) << 63) + 5);
    w.addI64("i64", -(int64_t(1) << 62));
    w.addF64("f64", 1.0 / 3.0);
    w.addStringArray("strs", {"a", "", "ccc"});
    w.addF32Array("floats", {1.5f, -2.0f});
    {
      std::string nested;  // array of 2 arrays of i32
      appendPod<uint32_t>(nested, kGgufArray);
      appendPod<uint64_t>(nested, 2);
      for (int k = 0; k < 2; ++k) {
        appendPod<uint32_t>(nested, kGgufI32);
        appendPod<uint64_t>(nested, 2);
        appendPod<int32_t>(nested, k);
        appendPod<int32_t>(nested, -k);
      }
      w.addRawValue("nested", kGgufArray, nested);
    }
    auto f = GgufFile::open(write("meta.gguf", w));
    const auto& m = f->metadata();
    QCOMPARE(f->version(), 2u);
    QCOMPARE(m.at("u8").get<int>(), 250);
    QCOMPARE(m.at("i8").get<int>(), -100);
    QCOMPARE(m.at("u16").get<int>(), 65000);
    QCOMPARE(m.at("i16").get<int>(), -32000);
    QCOMPARE(m.at("u32").get<uint64_t>(), uint64_t(4000000000u));
    QCOMPARE(m.at("i32").get<int>(), -2000000000);
    QCOMPARE(m.at("f32").get<double>(), static_cast<double>(0.1f));
    QCOMPARE(m.at("bool").get<bool>(), true);
    QCOMPARE(m.at("str").get<std::string>(), std::string("héllo"));
    QCOMPARE(m.at("u64").get<uint64_t>(), (uint64_t(1) << 63) + 5);
    QCOMPARE(m.at("i64").get<int64_t>(), -(int64_t(1) << 62));
    QCOMPARE(m.at("f64").get<double>(), 1.0 / 3.0);
    QCOMPARE(m.at("strs"), nlohmann::json({"a", "", "ccc"}));
    QCOMPARE(m.at("floats"), nlohmann::json({1.5, -2.0}));
    QCOMPARE(m.at("nested"), nlohmann::json({{0, 0}, {1, -1}}));
    QVERIFY(f->tensors().empty());
  }

  void brokenFilesAreRejected() {
    GgufWriter good = tinyLlama();
    std::map<std::string, at::Tensor> unused;
    addTinyTensors(good, &unused);
    const std::string bytes = good.serialize();

    std::string bad = bytes;
    bad[0] = 'X';
    const std::string badMagic = tmp("magic.gguf");
    writeBytes(badMagic, bad);
    HS_EXPECT_ERROR(GgufFile::open(badMagic), badMagic, "bad magic \"XGUF\", expected \"GGUF\"");

    for (uint32_t v : {1u, 4u}) {
      bad = bytes;
      std::memcpy(&bad[4], &v, 4);
      const std::string p = tmp("version.gguf");
      writeBytes(p, bad);
      HS_EXPECT_ERROR(GgufFile::open(p), p,
                      "GGUF version " + std::to_string(v) + " is not supported (expected 2 or 3)");
    }

    const std::string truncated = tmp("truncated.gguf");
    writeBytes(truncated, bytes.substr(0, 100));  // cut inside the metadata
    HS_EXPECT_ERROR(GgufFile::open(truncated), truncated, "truncated GGUF file");

    const std::string pastEnd = tmp("pastend.gguf");
    writeBytes(pastEnd, bytes.substr(0, bytes.size() - 64));  // last tensor loses its tail
    HS_EXPECT_ERROR(GgufFile::open(pastEnd), pastEnd, "tensor blk.0.ffn_down.weight",
                    "runs past the end of the file");

    GgufWriter k;
    k.addRawTensor("blk.0.x", {2, 256}, kGgmlQ4_K, std::string(2 * 144, '\0'));
    const std::string q4k = write("q4k.gguf", k);
    auto f = GgufFile::open(q4k);  // listed, so metadata stays readable...
    QCOMPARE(f->info("blk.0.x").type, uint32_t(kGgmlQ4_K));
    // ...but its data cannot be decoded.
    HS_EXPECT_ERROR(f->tensor("blk.0.x"), q4k,
                    "tensor blk.0.x has type Q4_K (12), supported: F32, F16, BF16, Q8_0, Q4_0");

    GgufWriter u;
    u.addRawValue("weird.key", 99, std::string(8, '\0'));
    const std::string unknownType = write("kvtype.gguf", u);
    HS_EXPECT_ERROR(GgufFile::open(unknownType), unknownType,
                    "metadata key weird.key has unknown value type 99");

    GgufWriter r;
    r.addRawTensor("q", {30}, kGgmlQ8_0, std::string(34, '\0'));  // 30 is not a whole number of blocks
    const std::string rows = write("rows.gguf", r);
    HS_EXPECT_ERROR(GgufFile::open(rows), rows, "tensor q", "blocks of 32 values but the row length is 30");

    GgufWriter t;
    t.addRawTensor("x", {4}, 77, std::string(16, '\0'));
    const std::string unknownTensorType = write("ttype.gguf", t);
    HS_EXPECT_ERROR(GgufFile::open(unknownTensorType), unknownTensorType,
                    "tensor x: has unknown ggml type id 77");
  }

  void modelLevelErrors() {
    GgufWriter g = tinyLlama("gpt2");
    std::map<std::string, at::Tensor> unused;
    addTinyTensors(g, &unused);
    const std::string gpt2 = write("gpt2.gguf", g);
    HS_EXPECT_ERROR(readGgufModel(gpt2), gpt2, "general.architecture is \"gpt2\"");

    GgufWriter x = tinyLlama();
    addTinyTensors(x, &unused);
    x.addTensor("blk.0.attn_q.bias", at::zeros({8}));
    const std::string extra = write("extra.gguf", x);
    HS_EXPECT_ERROR(readGgufModel(extra), extra, "tensor blk.0.attn_q.bias has no Llama mapping");

    GgufWriter l = tinyLlama();
    addTinyTensors(l, &unused);
    l.addTensor("blk.1.attn_norm.weight", at::zeros({8}));
    const std::string layer = write("layer.gguf", l);
    HS_EXPECT_ERROR(readGgufModel(layer), layer, "tensor blk.1.attn_norm.weight belongs to layer 1",
                    "block_count is 1");

    GgufWriter q = tinyLlama();
    addTinyTensors(q, &unused);
    q.addRawTensor("blk.0.k", {256}, kGgmlQ4_K, std::string(144, '\0'));
    const std::string quant = write("quant.gguf", q);
    HS_EXPECT_ERROR(readGgufModel(quant), quant, "blk.0.k");

    GgufWriter m;
    m.addString("general.architecture", "llama");
    const std::string missing = write("missing.gguf", m);
    HS_EXPECT_ERROR(readGgufModel(missing), missing, "metadata key llama.block_count is missing");
  }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
