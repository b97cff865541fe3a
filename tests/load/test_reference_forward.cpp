// Every family end to end: reference_forward.py writes a small random checkpoint in HF layout and the
// all-position logits of an independent float64 PyTorch forward written from the HF modeling files;
// loadModel reads the folder and our forward must agree within 1e-4 absolute (fp32) at every position.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>

#include "load_test_util.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
#include "model/load/memory_plan.h"
#include "model/load/model_loader.h"

namespace {

constexpr double kFp32Tol = 1e-4;

// Generates `family` into dir; QFAILs the caller on a script error through the returned message.
QString generate(const QTemporaryDir& dir, const QString& family, int seed,
                 const QString& dtype = "float32") {
  QString error;
  hs::test::runReference(
      {"gen", "--family", family, "--seed", QString::number(seed), "--out", dir.path(), "--dtype", dtype},
      &error);
  return error;
}

// Ours vs the reference, with the parameters printed on failure (as llm.c's test_gpt2 does).
QString describe(const QString& family, const at::Tensor& ours, const at::Tensor& ref) {
  const at::Tensor diff = (ours - ref).abs();  // [batch, pos, vocab]
  const int64_t worst = diff.argmax().item<int64_t>();
  const int64_t v = diff.size(2), p = diff.size(1);
  return QString(
             "%1: max |ours - reference| = %2 at batch %3 pos %4 token %5 (ours %6, reference %7; "
             "reference max |logit| %8)")
      .arg(family)
      .arg(diff.max().item<double>())
      .arg(worst / (p * v))
      .arg((worst / v) % p)
      .arg(worst % v)
      .arg(ours.flatten()[worst].item<double>())
      .arg(ref.flatten()[worst].item<double>())
      .arg(ref.abs().max().item<double>());
}

}  // namespace

class TestReferenceForward : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { HS_REQUIRE_REFERENCE_PYTHON(); }

  void allPositionLogits_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("seed");
    QTest::addColumn<int>("arch");
    const std::vector<std::pair<const char*, hs::Architecture>> families = {
        {"gpt2", hs::Architecture::Gpt2},
        {"gpt2-noprefix", hs::Architecture::Gpt2},
        {"llama", hs::Architecture::Llama},
        {"llama-tied", hs::Architecture::Llama},
        {"mistral", hs::Architecture::Mistral},
        {"qwen2", hs::Architecture::Qwen2},
        {"qwen3", hs::Architecture::Qwen3},
        {"gpt_neox", hs::Architecture::GptNeoX},
        {"gpt_neox-seq", hs::Architecture::GptNeoX},
        {"olmo2", hs::Architecture::Olmo2},
        // Sliding windows (3-6 positions) shorter than the 20-token prompts.
        {"mistral-window", hs::Architecture::Mistral},
        {"qwen2-window", hs::Architecture::Qwen2},
        {"qwen3-layer-types", hs::Architecture::Qwen3},
        // transformers 5 configs: RoPE inside rope_parameters.
        {"llama-v5", hs::Architecture::Llama},
        {"gpt_neox-v5", hs::Architecture::GptNeoX},
        {"gemma2", hs::Architecture::Gemma2},
        {"gemma3_text", hs::Architecture::Gemma3},
        {"gemma3-v5", hs::Architecture::Gemma3},
        // Image-text Gemma-3 checkpoints in both key layouts: the text model only.
        {"gemma3", hs::Architecture::Gemma3},
        {"gemma3-new-layout", hs::Architecture::Gemma3}};
    int seed = 11;
    for (const auto& f : families)
      QTest::newRow(f.first) << QString(f.first) << seed++ << int(f.second);
  }

  void allPositionLogits() {
    QFETCH(QString, family);
    QFETCH(int, seed);
    QFETCH(int, arch);
    QTemporaryDir dir;
    const QString err = generate(dir, family, seed);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const hs::test::Reference ref = hs::test::readReference(dir.path().toStdString());
    QVERIFY(ref.logits.defined());
    // Not degenerate: logits of order 1-10 that vary across positions and tokens.
    QVERIFY(ref.logits.abs().max().item<double>() > 2.0);
    QVERIFY(ref.logits.std().item<double>() > 0.5);

    const hs::LoadedModel m = hs::loadModel(dir.path().toStdString());
    QCOMPARE(int(m.config.arch), arch);
    QCOMPARE(m.format, std::string("safetensors"));
    QVERIFY(!m.tokenizer);                                              // none written beside it ...
    QVERIFY(!m.notes.empty());                                          // ... and the loader says so
    const at::Tensor ours = hs::test::ourLogits(*m.model, ref.tokens);  // [batch, pos, vocab]
    QCOMPARE(ours.sizes(), ref.logits.sizes());
    const double diff = hs::test::maxAbsDiff(ours, ref.logits);
    qInfo("%s: max |ours - reference| = %.3g over %lld logits (max |logit| %.3g)", qPrintable(family), diff,
          static_cast<long long>(ours.numel()), ref.logits.abs().max().item<double>());
    QVERIFY2(diff <= kFp32Tol, qPrintable(describe(family, ours, ref.logits)));
  }

  // bf16 checkpoint: loaded as fp32 it is exact up to fp32 arithmetic; computed in bf16 it stays within a
  // looser tolerance: 0.15 absolute + 3 % of the largest |logit| (bf16 keeps 8 significant bits).
  void bf16Checkpoint() {
    QTemporaryDir dir;
    const QString err = generate(dir, "llama", 5, "bfloat16");
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const hs::test::Reference ref = hs::test::readReference(dir.path().toStdString());
    const hs::LoadedModel fp32 = hs::loadModel(dir.path().toStdString());
    QCOMPARE(fp32.config.dtype, std::string("bfloat16"));
    QCOMPARE(fp32.model->dtype(), at::kFloat);
    const at::Tensor ours32 = hs::test::ourLogits(*fp32.model, ref.tokens);
    QVERIFY2(hs::test::maxAbsDiff(ours32, ref.logits) <= kFp32Tol,
             qPrintable(describe("llama bf16→fp32", ours32, ref.logits)));

    hs::LoadOptions opts;
    opts.dtype = "bfloat16";
    const hs::LoadedModel bf16 = hs::loadModel(dir.path().toStdString(), opts);
    QCOMPARE(bf16.model->dtype(), at::kBFloat16);
    QCOMPARE(bf16.model->weights().layers[0].wq.scalar_type(), at::kBFloat16);
    const at::Tensor ours16 = hs::test::ourLogits(*bf16.model, ref.tokens);
    const double tol = 0.15 + 0.03 * ref.logits.abs().max().item<double>();
    const double diff = hs::test::maxAbsDiff(ours16, ref.logits);
    qInfo("bf16 compute: max |ours - reference| = %g (tolerance %g)", diff, tol);
    QVERIFY2(diff <= tol, qPrintable(describe("llama bf16 compute", ours16, ref.logits)));
    // The argmax token agrees at nearly every position.
    const double agree = ours16.argmax(-1).eq(ref.logits.argmax(-1)).to(at::kDouble).mean().item<double>();
    QVERIFY2(agree >= 0.9, qPrintable(QString("argmax agreement %1").arg(agree)));

    // With room to spare the weights stored as computed are the process's own 64-byte-aligned copies
    // (MemoryPlan::copy_weights); with little room they are read in place from the mapped file, which changes
    // no logit and is noted.
    int unaligned = 0;
    hs::ModelWeights w = bf16.model->weights();
    hs::forEachWeight(w, [&](at::Tensor& t) {
      if (t.defined() && reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 != 0) ++unaligned;
    });
    QCOMPARE(unaligned, 0);
    const hs::ModelProbe probe = hs::probeModel(dir.path().toStdString());
    const uint64_t need = hs::memoryNeeds(probe.config, probe.n_params, 2,
                                          hs::DeviceMap::all(c10::kCPU, probe.config.n_layers), {})
                              .at(0)
                              .total();  // the working memory's 400 MB dominate
    qputenv("HEADSCOPE_MEMORY_LIMIT", QByteArray::number(qulonglong(need * 3 / 2)));
    const hs::LoadedModel mapped = hs::loadModel(dir.path().toStdString(), opts);
    qunsetenv("HEADSCOPE_MEMORY_LIMIT");
    const std::string notes = nlohmann::json(mapped.notes).dump();
    QVERIFY2(notes.find("in place from the checkpoint's memory-mapped pages") != std::string::npos,
             notes.c_str());
    QVERIFY(at::allclose(hs::test::ourLogits(*mapped.model, ref.tokens), ours16, 1e-5, 1e-5));
  }

  // The windows matter and their off-by-one is checked: the same weights with the window one position
  // longer or shorter, or with no window, are far outside the tolerance; positions the window does not
  // reach yet agree. Gemma-3's local RoPE base and Gemma-2's soft-caps are checked the same way.
  void comparisonDetectsWindowAndGemmaMistakes() {
    struct Case {
      const char* family;
      std::function<void(hs::ModelConfig&)> mistake;
      const char* what;
    };
    const std::vector<Case> cases = {
        {"mistral-window", [](hs::ModelConfig& c) { c.sliding_window += 1; }, "window + 1"},
        {"mistral-window", [](hs::ModelConfig& c) { c.sliding_window -= 1; }, "window - 1"},
        {"mistral-window", [](hs::ModelConfig& c) { c.layer_attention.clear(); }, "no window"},
        {"qwen2-window", [](hs::ModelConfig& c) { c.layer_attention[0] = hs::LayerAttention::Sliding; },
         "layer 0 sliding (max_window_layers off by one)"},
        {"gemma2", [](hs::ModelConfig& c) { c.attn_logit_softcap = 0; }, "no attention soft-cap"},
        {"gemma2", [](hs::ModelConfig& c) { c.final_logit_softcap = 0; }, "no final soft-cap"},
        {"gemma2", [](hs::ModelConfig& c) { c.query_pre_attn_scalar = 0; }, "1/sqrt(head_dim) scaling"},
        {"gemma2", [](hs::ModelConfig& c) { std::swap(c.layer_attention[0], c.layer_attention[1]); },
         "odd layers sliding"},
        {"gemma3_text", [](hs::ModelConfig& c) { c.rope_local_theta = 0; }, "global RoPE on local layers"},
        {"gemma3_text", [](hs::ModelConfig& c) { c.norm_weight_offset = false; }, "RMSNorm without 1 + w"},
    };
    for (const Case& k : cases) {
      QTemporaryDir dir;
      const QString err = generate(dir, k.family, 21);
      QVERIFY2(err.isEmpty(), qPrintable(err));
      const std::string folder = dir.path().toStdString();
      const hs::test::Reference ref = hs::test::readReference(folder);
      const hs::ModelConfig good = hs::readHfConfig(folder + "/config.json");
      auto ckpt = std::make_shared<const hs::SafetensorsCheckpoint>(hs::SafetensorsCheckpoint::open(folder));
      auto logitsWith = [&](const hs::ModelConfig& c) {
        hs::SafetensorsLookup lookup(ckpt);
        hs::Transformer t(c, hs::mapWeights(c, lookup, folder));
        return hs::test::ourLogits(t, ref.tokens);
      };
      QVERIFY(hs::test::maxAbsDiff(logitsWith(good), ref.logits) <= kFp32Tol);
      hs::ModelConfig bad = good;
      k.mistake(bad);
      const at::Tensor wrong = logitsWith(bad);
      const double diff = hs::test::maxAbsDiff(wrong, ref.logits);
      qInfo("%s with %s: max |Δ| = %.3g", k.family, k.what, diff);
      QVERIFY2(diff > 1e-2, qPrintable(QString("%1 with %2 is indistinguishable").arg(k.family, k.what)));
      if (std::string(k.what) == "no window") {  // the first `window` positions never reach past it
        const int64_t w = good.sliding_window;
        QVERIFY(hs::test::maxAbsDiff(wrong.narrow(1, 0, w), ref.logits.narrow(1, 0, w)) <= kFp32Tol);
      }
    }
  }

  // The comparison is sharp enough to see a RoPE convention or a rope_scaling mistake: the same weights
  // with the interleaved layout, or with llama3 scaling ignored, are far outside the tolerance.
  void comparisonDetectsRopeMistakes() {
    QTemporaryDir dir;
    const QString err = generate(dir, "llama", 3);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const std::string folder = dir.path().toStdString();
    const hs::test::Reference ref = hs::test::readReference(folder);
    const hs::ModelConfig good = hs::readHfConfig(folder + "/config.json");
    QCOMPARE(good.rope_scaling.type, std::string("llama3"));
    auto ckpt = std::make_shared<const hs::SafetensorsCheckpoint>(hs::SafetensorsCheckpoint::open(folder));
    auto logitsWith = [&](const hs::ModelConfig& c) {
      hs::SafetensorsLookup lookup(ckpt);
      hs::Transformer t(c, hs::mapWeights(c, lookup, folder));
      return hs::test::ourLogits(t, ref.tokens);
    };
    QVERIFY(hs::test::maxAbsDiff(logitsWith(good), ref.logits) <= kFp32Tol);
    hs::ModelConfig interleaved = good;
    interleaved.rope_layout = hs::RopeLayout::Interleaved;
    QVERIFY(hs::test::maxAbsDiff(logitsWith(interleaved), ref.logits) > 1e-2);
    hs::ModelConfig unscaled = good;
    unscaled.rope_scaling = hs::RopeScaling{};
    QVERIFY(hs::test::maxAbsDiff(logitsWith(unscaled), ref.logits) > 1e-3);
  }
};

QTEST_GUILESS_MAIN(TestReferenceForward)
#include "test_reference_forward.moc"
