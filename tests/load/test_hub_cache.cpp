// Hub ids resolved offline from a hub cache folder laid out as huggingface_hub writes it (refs, snapshots of
// symlinks into blobs), built here from the toy model's files. Nothing is downloaded.
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/load/hub_cache.h"
#include "model/load/model_loader.h"

namespace fs = std::filesystem;

namespace {

const char* kMain = "0123456789abcdef0123456789abcdef01234567";
const char* kOld = "fedcba9876543210fedcba9876543210fedcba98";

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// <cache>/models--<org>--<name>: every file of `from` as a blob, a snapshot of symlinks per revision, refs.
void addRepo(const fs::path& cache, const std::string& org, const std::string& name, const fs::path& from,
             const std::vector<std::string>& revisions, bool withWeights = true) {
  const fs::path repo = cache / ("models--" + org + "--" + name);
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  for (const auto& rev : revisions) {
    fs::create_directories(repo / "snapshots" / rev);
    for (const auto& e : fs::directory_iterator(from)) {
      const std::string f = e.path().filename().string();
      if (!withWeights && f == "model.safetensors") continue;
      const fs::path blob = repo / "blobs" / (rev + "-" + f);
      fs::copy_file(e.path(), blob, fs::copy_options::overwrite_existing);
      fs::create_symlink(fs::path("../../blobs") / blob.filename(), repo / "snapshots" / rev / f);
    }
  }
  std::ofstream(repo / "refs/main") << revisions.front();
}

}  // namespace

class TestHubCache : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir home_;
  fs::path cache_;
  std::string toy_;

 private Q_SLOTS:
  void initTestCase() {
    toy_ = hs::resolveModelPath("toy");
    cache_ = fs::path(home_.path().toStdString()) / "hub";
    addRepo(cache_, "headscope", "toy-icl", toy_, {kMain, kOld});
    addRepo(cache_, "headscope", "half-done", toy_, {kMain}, false);
    // HF_HOME decides the cache (HF_HUB_CACHE would win over it).
    qunsetenv("HF_HUB_CACHE");
    qputenv("HF_HOME", home_.path().toUtf8());
  }

  void cacheFolderFollowsTheEnvironment() {
    QCOMPARE(hs::hubCacheDir(), cache_.string());
    qputenv("HF_HUB_CACHE", "/elsewhere/hub");
    QCOMPARE(hs::hubCacheDir(), std::string("/elsewhere/hub"));
    qunsetenv("HF_HUB_CACHE");
  }

  void idsLookLikeIds() {
    QVERIFY(hs::looksLikeHubId("meta-llama/Llama-3.2-1B"));
    QVERIFY(hs::looksLikeHubId("gpt2"));
    QVERIFY(hs::looksLikeHubId("org/name@main"));
    QVERIFY(!hs::looksLikeHubId("/abs/path"));
    QVERIFY(!hs::looksLikeHubId("./rel"));
    QVERIFY(!hs::looksLikeHubId("a/b/c"));
    QVERIFY(!hs::looksLikeHubId("model.gguf/x y"));
  }

  // refs/main names the snapshot; "@rev" picks another by commit hash; the model loads from it.
  void resolvesTheMainRevision() {
    const auto snap = hs::resolveHubId("headscope/toy-icl");
    QVERIFY(snap);
    QCOMPARE(fs::path(*snap), cache_ / "models--headscope--toy-icl/snapshots" / kMain);
    QCOMPARE(fs::path(*hs::resolveHubId(std::string("headscope/toy-icl@") + kOld)),
             cache_ / "models--headscope--toy-icl/snapshots" / kOld);
    QVERIFY(!hs::resolveHubId("headscope/not-there"));

    const hs::LoadedModel m = hs::loadModel("headscope/toy-icl");
    QCOMPARE(fs::path(m.path), cache_ / "models--headscope--toy-icl/snapshots" / kMain);
    QVERIFY(m.tokenizer != nullptr);
    const hs::LoadedModel direct = hs::loadModel(toy_);
    QCOMPARE(m.config.n_layers, direct.config.n_layers);
    QVERIFY(has(m.notes.front(), "resolved from the hub cache"));
  }

  // What is not in the cache is an error naming the cache, never a download.
  void missingModelsAndRevisionsAreErrors() {
    const std::string e = errorOf([] { hs::loadModel("meta-llama/Llama-3.2-1B"); });
    QVERIFY2(has(e, "meta-llama/Llama-3.2-1B") && has(e, cache_.string()) && has(e, "nothing is downloaded"),
             e.c_str());
    const std::string rev = errorOf([] { hs::resolveHubId("headscope/toy-icl@v2"); });
    QVERIFY2(has(rev, "no revision v2") && has(rev, kMain), rev.c_str());
  }

  void listsTheCachedModels() {
    const auto models = hs::listCachedModels();
    QCOMPARE(models.size(), size_t(2));
    QCOMPARE(models[0].id, std::string("headscope/half-done"));
    QVERIFY(!models[0].complete);  // no weights: a partial download
    QCOMPARE(models[1].id, std::string("headscope/toy-icl"));
    QCOMPARE(models[1].revision, std::string(kMain));
    QVERIFY(models[1].complete);
    QVERIFY(hs::listCachedModels((cache_ / "nothing").string()).empty());
  }
};

QTEST_GUILESS_MAIN(TestHubCache)
#include "test_hub_cache.moc"
