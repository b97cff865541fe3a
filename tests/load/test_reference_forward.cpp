// transformers is the reference for the families: tests/reference/test_hf_forward.cpp holds every family
// (GPT-2, Llama, Mistral, Qwen2/3, GPT-NeoX, OLMo-2, Gemma-2/3), as transformers saves it in float32 and
// bfloat16, against transformers' own forward (logits, patterns, residual streams, z), and shows that the
// comparison catches window, soft-cap, scale and RoPE mistakes.
//
// This suite keeps the hand-written float64 reference (reference_forward.py, no transformers needed) only
// for what transformers cannot check: checkpoint layouts transformers 5 does not write — GPT-2 without the
// "transformer." prefix (GPT2Model files, as the hub's gpt2), GPT-2 and GPT-NeoX files carrying the causal-
// mask and rotary buffers older versions saved, Gemma-3 image-text checkpoints in both key layouts — and
// HeadScope's bf16 accuracy against exact float64 arithmetic with the weights' memory placement. loadModel
// reads each folder and our forward must agree within 1e-4 absolute (fp32) at every position.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <tuple>

#include "load_test_util.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
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
    // The seeds are those these variants had in the full family list, so the checkpoints are unchanged.
    const std::vector<std::tuple<const char*, int, hs::Architecture>> families = {
        // attn.bias / attn.masked_bias buffers of older GPT-2 files beside the weights.
        {"gpt2", 11, hs::Architecture::Gpt2},
        // GPT2Model keys (h.N.*, wte.weight) with an untied lm_head and exact GELU.
        {"gpt2-noprefix", 12, hs::Architecture::Gpt2},
        // attention.bias / attention.masked_bias / rotary_emb.inv_freq buffers of older GPT-NeoX files.
        {"gpt_neox-seq", 19, hs::Architecture::GptNeoX},
        // Image-text Gemma-3 checkpoints in both key layouts: the text model only.
        {"gemma3", 29, hs::Architecture::Gemma3},
        {"gemma3-new-layout", 30, hs::Architecture::Gemma3}};
    for (const auto& [name, seed, arch] : families)
      QTest::newRow(name) << QString(name) << seed << int(arch);
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
};

QTEST_GUILESS_MAIN(TestReferenceForward)
#include "test_reference_forward.moc"
