// stories260K (karpathy/tinyllamas, a real trained Llama) through loadModel in all three formats:
// llama2.c .bin + tok512.bin, GGUF with its own vocabulary, and an HF-layout conversion (q/k rows permuted
// to rotate-half exactly as transformers' convert_llama_weights_to_hf.py). Each gives the reference
// last-position logits of reference_outputs.json (independent float64 re-implementation of run.c) within
// 1e-4.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include "load_test_util.h"
#include "model/load/model_loader.h"

namespace {

const std::string kDir = "models/stories260K/";

struct Case {
  std::string prompt;
  std::vector<int64_t> ids;
  std::vector<int64_t> argmax;  // per position
  at::Tensor lastLogits;        // [vocab] float64
};

std::vector<Case> referenceCases() {
  const nlohmann::json j = hs::test::readJsonFile(hs::test::sharedData(kDir + "reference_outputs.json"));
  std::vector<Case> out;
  for (const auto& c : j["cases"]) {
    Case k;
    k.prompt = c["prompt"].get<std::string>();
    k.ids = c["token_ids"].get<std::vector<int64_t>>();
    k.argmax = c["argmax_per_position"].get<std::vector<int64_t>>();
    k.lastLogits = at::tensor(c["last_position_logits_full"].get<std::vector<double>>(), at::kDouble);
    out.push_back(k);
  }
  return out;
}

at::Tensor allLogits(const hs::LoadedModel& m, const std::vector<int64_t>& ids) {
  const at::Tensor tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
  return hs::test::ourLogits(*m.model, tokens)[0];                    // [pos, vocab]
}

}  // namespace

class TestStories : public QObject {
  Q_OBJECT

  // Logits and argmax per position against the reference, and the tokenizer against its ids.
  void checkModel(const hs::LoadedModel& m, const QString& what) {
    QVERIFY2(m.tokenizer, qPrintable(what + ": no tokenizer"));
    QCOMPARE(m.config.n_layers, 5);
    QCOMPARE(m.config.n_kv_heads, 4);
    for (const Case& c : referenceCases()) {
      const std::vector<int> ids = m.tokenizer->encode(c.prompt);
      QCOMPARE(std::vector<int64_t>(ids.begin(), ids.end()), c.ids);
      const at::Tensor logits = allLogits(m, c.ids);  // [pos, vocab]
      const double diff = hs::test::maxAbsDiff(logits[-1], c.lastLogits);
      QVERIFY2(diff <= 1e-4, qPrintable(QString("%1 \"%2\": max |ours - reference| = %3")
                                            .arg(what, QString::fromStdString(c.prompt))
                                            .arg(diff)));
      const at::Tensor am = logits.argmax(-1);
      QCOMPARE(std::vector<int64_t>(am.data_ptr<int64_t>(), am.data_ptr<int64_t>() + am.numel()), c.argmax);
    }
  }

 private Q_SLOTS:
  void llama2cBin() {
    const std::string bin = hs::test::sharedData(kDir + "stories260K.bin");
    HS_REQUIRE_FILE(bin);
    HS_REQUIRE_FILE(hs::test::sharedData(kDir + "tok512.bin"));
    const hs::LoadedModel m = hs::loadModel(bin);
    QCOMPARE(m.format, std::string("llama2c"));
    QCOMPARE(m.config.rope_layout, hs::RopeLayout::Interleaved);
    QVERIFY(m.config.tied_embeddings);
    QCOMPARE(m.tokenizer->kind(), std::string("llama2c"));
    QCOMPARE(m.files.size(), size_t(2));
    QVERIFY(QString::fromStdString(m.files[1]).endsWith("tok512.bin"));
    checkModel(m, "stories260K.bin");
  }

  void gguf() {
    const std::string path = hs::test::sharedData(kDir + "stories260K.gguf");
    HS_REQUIRE_FILE(path);
    const hs::LoadedModel m = hs::loadModel(path);
    QCOMPARE(m.format, std::string("gguf"));
    QCOMPARE(m.config.rope_layout, hs::RopeLayout::Interleaved);
    QCOMPARE(m.files, std::vector<std::string>{path});  // the vocabulary came from the GGUF itself
    checkModel(m, "stories260K.gguf");
  }

  void hfConversion() {
    HS_REQUIRE_REFERENCE_PYTHON();
    const std::string bin = hs::test::sharedData(kDir + "stories260K.bin");
    HS_REQUIRE_FILE(bin);
    QTemporaryDir dir;
    QString err;
    hs::test::runReference({"convert-llama2c", "--bin", QString::fromStdString(bin), "--out", dir.path()},
                           &err);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    hs::LoadOptions opts;
    opts.tokenizer = hs::test::sharedData(kDir + "tok512.bin");
    const hs::LoadedModel hf = hs::loadModel(dir.path().toStdString(), opts);
    QCOMPARE(hf.format, std::string("safetensors"));
    QCOMPARE(hf.config.rope_layout, hs::RopeLayout::RotateHalf);
    QCOMPARE(hf.config.norm_eps, 1e-5);
    checkModel(hf, "HF conversion");
    // All positions agree with the .bin path (two RoPE conventions, one model).
    const hs::LoadedModel orig = hs::loadModel(bin);
    for (const Case& c : referenceCases())
      QVERIFY(hs::test::maxAbsDiff(allLogits(hf, c.ids), allLogits(orig, c.ids)) <= 1e-4);
  }
};

QTEST_GUILESS_MAIN(TestStories)
#include "test_stories.moc"
