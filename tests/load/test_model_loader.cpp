// loadModel: path resolution, tokenizer discovery, and the errors a user sees for wrong paths and broken
// checkpoints (each names the file and the key or field).
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "load_error_util.h"
#include "load_test_util.h"
#include "model/io/safetensors.h"
#include "model/load/model_loader.h"
#include "util/error.h"

namespace fs = std::filesystem;

using hs::test::contains;
using hs::test::errorOf;

namespace {

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

// A 1-layer Llama (vocab 20, d_model 16) in HF key layout, with the embedding stored under both of its
// tied names; a fixed seed so every folder written from it holds the same weights.
Tensors tinyLlamaTensors() {
  at::manual_seed(7);
  const auto r = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.3; };
  const std::string a = "model.layers.0.self_attn.", b = "model.layers.0.";
  const at::Tensor embed = r({20, 16});  // [vocab, d_model]
  return {{"model.embed_tokens.weight", embed},
          {a + "q_proj.weight", r({16, 16})},
          {a + "k_proj.weight", r({16, 16})},
          {a + "v_proj.weight", r({16, 16})},
          {a + "o_proj.weight", r({16, 16})},
          {b + "input_layernorm.weight", 1 + r({16})},
          {b + "post_attention_layernorm.weight", 1 + r({16})},
          {b + "mlp.gate_proj.weight", r({32, 16})},
          {b + "mlp.up_proj.weight", r({32, 16})},
          {b + "mlp.down_proj.weight", r({16, 32})},
          {"model.norm.weight", 1 + r({16})},
          {"lm_head.weight", embed}};
}

// Writes config.json (tie_word_embeddings as given) and model.safetensors (`tensors` minus `drop`, with
// `metadata`) into a new folder `name` under root; returns the folder.
std::string writeTinyLlama(const std::string& root, const std::string& name, bool tied,
                           const Tensors& tensors, const std::string& drop,
                           const std::map<std::string, std::string>& metadata) {
  const std::string f = root + "/" + name;
  fs::create_directories(f);
  writeFile(f + "/config.json",
            std::string(R"({"model_type": "llama", "hidden_size": 16, "intermediate_size": 32,
      "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 20,
      "max_position_embeddings": 32, "tie_word_embeddings": )") +
                (tied ? "true}" : "false}"));
  Tensors kept;
  for (const auto& t : tensors)
    if (t.first != drop) kept.push_back(t);
  hs::writeSafetensors(f + "/model.safetensors", kept, metadata);
  return f;
}

}  // namespace

class TestModelLoader : public QObject {
  Q_OBJECT

  // A generated llama checkpoint with an optional mutation; returns the folder.
  std::string generated(const QTemporaryDir& dir, const QString& family, const QStringList& extra = {}) {
    QString err;
    hs::test::runReference(QStringList{"gen", "--family", family, "--seed", "1", "--out", dir.path()} + extra,
                           &err);
    if (!err.isEmpty()) qWarning("%s", qPrintable(err));
    return dir.path().toStdString();
  }

 private Q_SLOTS:
  void pathErrors() {
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString();
    std::string m = errorOf([&] { hs::loadModel(root + "/nothing-here"); });
    CHECK_MSG(m, root + "/nothing-here");
    CHECK_MSG(m, "no such file or folder");

    writeFile(root + "/notes.txt", "hello");
    m = errorOf([&] { hs::loadModel(root + "/notes.txt"); });
    CHECK_MSG(m, "notes.txt");
    CHECK_MSG(m, "not a model folder nor a known model file");

    fs::create_directory(root + "/empty");
    m = errorOf([&] { hs::loadModel(root + "/empty"); });
    CHECK_MSG(m, root + "/empty");
    CHECK_MSG(m, "no config.json");

    fs::create_directory(root + "/noweights");
    writeFile(root + "/noweights/config.json",
              R"({"model_type": "gpt2", "n_embd": 8, "n_layer": 1, "n_head": 2, "vocab_size": 5})");
    writeFile(root + "/noweights/pytorch_model.bin", "x");
    m = errorOf([&] { hs::loadModel(root + "/noweights"); });
    CHECK_MSG(m, root + "/noweights");
    CHECK_MSG(m, "no weights");
    CHECK_MSG(m, "pytorch_model.bin is not supported");

    m = errorOf([&] { hs::loadModel(root + "/noweights/pytorch_model.bin"); });
    CHECK_MSG(m, "PyTorch pickle checkpoints are not supported");

    writeFile(root + "/lonely.safetensors", "12345678");
    m = errorOf([&] { hs::loadModel(root + "/lonely.safetensors"); });
    CHECK_MSG(m, "lonely.safetensors");
    CHECK_MSG(m, "no config.json beside");
  }

  void toy() {
    bool built = false;
    for (const auto& c : hs::toyModelCandidates())
      built = built || fs::exists(c + "/config.json");
    if (built) {
      const hs::LoadedModel m = hs::loadModel("toy");
      QVERIFY(m.model);
      QVERIFY(m.tokenizer);
      // The repository's copy itself (the build tree reaches it through build/share/headscope, a link that
      // must not become the path a run records).
      QCOMPARE(fs::path(m.path), fs::canonical(hs::test::sourceDir("resources/models/toy-icl")));
      return;
    }
    const std::string m = errorOf([&] { hs::loadModel("toy"); });
    QVERIFY2(m.rfind("the embedded toy model is not built yet: ", 0) == 0, m.c_str());
    CHECK_MSG(m, "resources/models/toy-icl");
  }

  void strictCheckpointErrorsNameFileAndKey() {
    HS_REQUIRE_REFERENCE_PYTHON();
    {
      QTemporaryDir dir;
      const std::string f =
          generated(dir, "llama", {"--mutate", "missing:model.layers.1.mlp.up_proj.weight"});
      const std::string m = errorOf([&] { hs::loadModel(f); });
      CHECK_MSG(m, f);
      CHECK_MSG(m, "missing tensor model.layers.1.mlp.up_proj.weight");
    }
    {
      QTemporaryDir dir;
      const std::string f =
          generated(dir, "qwen2", {"--mutate", "extra:model.layers.0.self_attn.gate.weight"});
      const std::string m = errorOf([&] { hs::loadModel(f); });
      CHECK_MSG(m, f + "/model.safetensors");
      CHECK_MSG(m, "unexpected tensor model.layers.0.self_attn.gate.weight");
    }
    {
      QTemporaryDir dir;
      const std::string f =
          generated(dir, "gpt_neox", {"--mutate", "shape:gpt_neox.layers.0.attention.dense.weight"});
      const std::string m = errorOf([&] { hs::loadModel(f); });
      CHECK_MSG(m, f + "/model.safetensors");
      CHECK_MSG(m, "gpt_neox.layers.0.attention.dense.weight has shape [65, 64], expected [64, 64]");
    }
    {
      QTemporaryDir dir;
      const std::string f = generated(dir, "olmo2");
      writeFile(f + "/config.json", R"({"model_type": "bert", "hidden_size": 64})");
      std::string m = errorOf([&] { hs::loadModel(f); });
      CHECK_MSG(m, f + "/config.json");
      CHECK_MSG(m, "unsupported model_type \"bert\"");
      writeFile(f + "/config.json", R"({"model_type": "olmo2", "hidden_size": 64,,})");
      m = errorOf([&] { hs::loadModel(f); });
      CHECK_MSG(m, f + "/config.json");
      CHECK_MSG(m, "malformed JSON");
    }
  }

  // Tied embeddings as savers write them: one tensor under either name, the removed one recorded in the
  // safetensors metadata ({removed: kept}: transformers 4.x and safetensors.torch.save_model keep
  // lm_head.weight; others keep the embedding) or not recorded at all. Each loads to the same logits; a
  // record naming a tensor that is not there, or one of another shape, is one error naming the file; the
  // strict missing / unexpected checks still hold.
  void tiedEmbeddingsStoredUnderEitherName() {
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString();
    const Tensors all = tinyLlamaTensors();
    const at::Tensor tokens = at::arange(12, at::kLong).remainder(20).view({2, 6});  // [batch, pos]
    const std::string embed = "model.embed_tokens.weight", head = "lm_head.weight";

    const hs::LoadedModel both = hs::loadModel(writeTinyLlama(root, "both", true, all, "", {}));
    const at::Tensor want = hs::test::ourLogits(*both.model, tokens);  // [batch, pos, vocab]
    const long long params = hs::probeModel(root + "/both").n_params;
    struct Saved {
      const char* name;
      std::string drop;
      std::map<std::string, std::string> metadata;
    };
    const std::vector<Saved> saves = {{"head-kept-recorded", embed, {{"format", "pt"}, {embed, head}}},
                                      {"embed-kept-recorded", head, {{"format", "pt"}, {head, embed}}},
                                      {"head-kept-unrecorded", embed, {{"format", "pt"}}},
                                      {"embed-kept-unrecorded", head, {}}};
    for (const Saved& s : saves) {
      const std::string f = writeTinyLlama(root, s.name, true, all, s.drop, s.metadata);
      const std::string err = errorOf([&] {
        const hs::LoadedModel m = hs::loadModel(f);
        const double diff = hs::test::maxAbsDiff(hs::test::ourLogits(*m.model, tokens), want);
        QVERIFY2(diff == 0.0,
                 qPrintable(QString("%1: max |Δ| %2 from both names stored").arg(s.name).arg(diff)));
        QVERIFY2(m.model->weights().unembed.data_ptr() == m.model->weights().tok_emb.data_ptr(), s.name);
        QCOMPARE(hs::probeModel(f).n_params, params);  // the tied matrix counted once
      });
      QVERIFY2(err.empty(), qPrintable(QString("%1: %2").arg(s.name, QString::fromStdString(err))));
    }

    // A record naming a tensor no file holds (even though the other name is there).
    std::string f = writeTinyLlama(root, "dangling", true, all, embed, {{embed, "lm_head.weigth"}});
    std::string m = errorOf([&] { hs::loadModel(f); });
    CHECK_MSG(m, f + "/model.safetensors: metadata records tensor model.embed_tokens.weight as shared with "
                     "lm_head.weigth, which no file of the checkpoint holds");
    QVERIFY2(m.find('\n') == std::string::npos, m.c_str());
    // A record naming a tensor of another shape.
    f = writeTinyLlama(root, "misshapen", true, all, embed, {{embed, "model.norm.weight"}});
    m = errorOf([&] { hs::loadModel(f); });
    CHECK_MSG(m, f + "/model.safetensors: metadata records tensor model.embed_tokens.weight as shared with "
                     "model.norm.weight, but that has shape [16], expected [20, 16]");
    // Untied: the head and the embedding are two matrices, neither stands in for the other unrecorded.
    f = writeTinyLlama(root, "untied-no-embed", false, all, embed, {});
    CHECK_MSG(errorOf([&] { hs::loadModel(f); }), "missing tensor model.embed_tokens.weight, expected shape");
    f = writeTinyLlama(root, "untied-no-head", false, all, head, {});
    CHECK_MSG(errorOf([&] { hs::loadModel(f); }), "missing tensor lm_head.weight");
    // Tied with neither name: the message says either would do.
    Tensors noEmbedding = all;
    noEmbedding.pop_back();
    f = writeTinyLlama(root, "tied-neither", true, noEmbedding, embed, {});
    CHECK_MSG(
        errorOf([&] { hs::loadModel(f); }),
        "missing tensor model.embed_tokens.weight (nor lm_head.weight, which a tied checkpoint may keep "
        "instead)");
    // An alias does not excuse an unknown tensor.
    Tensors extra = all;
    extra.emplace_back("model.layers.0.self_attn.gate.weight", at::zeros({16}));
    f = writeTinyLlama(root, "alias-and-extra", true, extra, embed, {{embed, head}});
    CHECK_MSG(errorOf([&] { hs::loadModel(f); }), "unexpected tensor model.layers.0.self_attn.gate.weight");
  }

  void entryPointsOfOneCheckpoint() {
    HS_REQUIRE_REFERENCE_PYTHON();
    QTemporaryDir dir;
    const std::string f = generated(dir, "qwen3");
    const hs::test::Reference ref = hs::test::readReference(f);
    const hs::LoadedModel byFolder = hs::loadModel(f);
    QCOMPARE(byFolder.files, (std::vector<std::string>{f + "/config.json", f + "/model.safetensors"}));
    QVERIFY(!byFolder.tokenizer);
    QVERIFY(contains(byFolder.notes.at(0), "no tokenizer found"));
    const at::Tensor want = hs::test::ourLogits(*byFolder.model, ref.tokens);
    for (const std::string& p : {f + "/model.safetensors", f + "/config.json"}) {
      const hs::LoadedModel m = hs::loadModel(p);
      QVERIFY(hs::test::maxAbsDiff(hs::test::ourLogits(*m.model, ref.tokens), want) == 0.0);
    }
    hs::LoadOptions bad;
    bad.dtype = "int8";
    CHECK_MSG(errorOf([&] { hs::loadModel(f, bad); }), "unsupported dtype \"int8\"");
    bad = {};
    bad.device = "tpu";
    CHECK_MSG(errorOf([&] { hs::loadModel(f, bad); }), "tpu");
  }

  // HF shards (model.safetensors.index.json) give the same model as one file.
  void shardedFolder() {
    HS_REQUIRE_REFERENCE_PYTHON();
    QTemporaryDir dir;
    const std::string f = generated(dir, "mistral", {"--shards", "3"});
    QVERIFY(!fs::exists(f + "/model.safetensors"));
    const hs::LoadedModel m = hs::loadModel(f);
    QCOMPARE(m.files.size(), size_t(4));  // config.json + 3 shards
    const hs::test::Reference ref = hs::test::readReference(f);
    const double diff = hs::test::maxAbsDiff(hs::test::ourLogits(*m.model, ref.tokens), ref.logits);
    QVERIFY2(diff <= 1e-4, qPrintable(QString("sharded mistral: max |ours - reference| = %1").arg(diff)));
  }

  void tokenizerBesideHfFolder() {
    HS_REQUIRE_REFERENCE_PYTHON();
    const std::string vocab = hs::test::sharedData("tokenizers/gpt2/vocab.json");
    HS_REQUIRE_FILE(vocab);
    QTemporaryDir dir;
    const std::string f = generated(dir, "gpt2");
    fs::copy_file(vocab, f + "/vocab.json");
    fs::copy_file(hs::test::sharedData("tokenizers/gpt2/merges.txt"), f + "/merges.txt");
    const hs::LoadedModel m = hs::loadModel(f);
    QVERIFY(m.tokenizer);
    QCOMPARE(m.tokenizer->kind(), std::string("bpe-bytelevel"));
    QVERIFY(std::find(m.files.begin(), m.files.end(), f + "/vocab.json") != m.files.end());
    // The real GPT-2 vocabulary (50257) is larger than this toy checkpoint (97): said, not fatal.
    // The other note is the dtype plan ("dtype auto: ...").
    const auto vocabNote = std::find_if(m.notes.begin(), m.notes.end(), [](const std::string& n) {
      return n.find("tokenizer has") != std::string::npos;
    });
    QVERIFY2(vocabNote != m.notes.end(), "no note about the tokenizer's vocabulary");
    CHECK_MSG(*vocabNote, "cannot be run");
  }

  void llama2cWithoutTokenizerBeside() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(bin);
    QTemporaryDir dir;
    const std::string copy = dir.path().toStdString() + "/model.bin";
    fs::copy_file(bin, copy);
    hs::LoadedModel m = hs::loadModel(copy);
    QVERIFY(!m.tokenizer);
    CHECK_MSG(m.notes.at(0), "no tokenizer found beside " + copy);
    // A tokenizer of the wrong size beside it is not picked.
    writeFile(dir.path().toStdString() + "/tokenizer.bin", std::string("\x04\x00\x00\x00", 4));
    m = hs::loadModel(copy);
    QVERIFY(!m.tokenizer);
    // The right one is, under either conventional name.
    fs::remove(dir.path().toStdString() + "/tokenizer.bin");
    fs::copy_file(hs::test::sharedData("models/stories260K/tok512.bin"),
                  dir.path().toStdString() + "/tokenizer.bin");
    m = hs::loadModel(copy);
    QVERIFY(m.tokenizer);
    QCOMPARE(m.tokenizer->vocabSize(), 512);
  }
};

QTEST_GUILESS_MAIN(TestModelLoader)
#include "test_model_loader.moc"
