// The trainer: its schedule, that a miniature toy model actually learns, and that a run done in two
// pieces (stop, resume) ends bit-identical to one uninterrupted run.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "model/io/safetensors.h"
#include "train/toy_recipe.h"
#include "train/trainer.h"

namespace {

// A small version of the shipped recipe that trains in seconds on 2 cores.
hs::ToyRecipe miniRecipe(int64_t steps) {
  hs::ToyRecipe r = hs::defaultToyRecipe();
  r.model.n_layers = 2;
  r.model.n_heads = 4;
  r.model.n_kv_heads = 4;
  r.model.d_model = 64;
  r.model.d_head = 16;
  r.model.rotary_dim = 16;
  r.model.d_mlp = 128;
  r.seq_len = 128;
  r.model.context_length = 128;
  r.batch = 8;
  r.train.steps = steps;
  r.train.warmup = std::min<int64_t>(20, steps / 4);
  r.train.lr = 3e-3;
  r.train.log_every = 4;
  r.train.checkpoint_every = 8;
  // One thread, as every suite (tests/CMakeLists.txt): two threads on a busy machine wait on each other.
  r.train.threads = 1;
  r.pruning.steps = 0;  // the tests that need the head-pruning stage turn it on
  return r;
}

// Every tensor of two model.safetensors files is bit-identical.
bool sameWeights(const QString& a, const QString& b) {
  auto fa = hs::SafetensorsFile::open(a.toStdString());
  auto fb = hs::SafetensorsFile::open(b.toStdString());
  if (fa->names() != fb->names()) return false;
  for (const auto& n : fa->names())
    if (!at::equal(fa->tensor(n), fb->tensor(n))) return false;
  return true;
}

nlohmann::json readJson(const QString& path) {
  std::ifstream f(path.toStdString());
  return nlohmann::json::parse(f);
}

// A current recipe JSON of a run without category naming as format version 0 wrote it: no format_version,
// no category_sep (written only with category naming on), and the curriculum's source-file name.
nlohmann::json asVersionZero(nlohmann::json recipe) {
  recipe.erase("format_version");
  recipe["train"].erase("category_sep");
  recipe["train"]["curriculum"] = "tasks/toy/curriculum.cpp defaultCurriculum";
  return recipe;
}

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void scheduleWarmsUpThenDecays() {
    hs::TrainConfig c;
    c.steps = 1000;
    c.warmup = 100;
    c.lr = 1e-3;
    c.min_lr_ratio = 0.1;
    QVERIFY(std::abs(hs::learningRate(c, 0) - 1e-5) < 1e-12);
    QVERIFY(std::abs(hs::learningRate(c, 99) - 1e-3) < 1e-12);
    QVERIFY(std::abs(hs::learningRate(c, 100) - 1e-3) < 1e-12);
    QVERIFY(std::abs(hs::learningRate(c, 550) - 0.55e-3) < 1e-9);  // cosine midpoint
    QVERIFY(std::abs(hs::learningRate(c, 1000) - 1e-4) < 1e-12);
    for (int64_t s = 100; s < 1000; ++s)
      QVERIFY(hs::learningRate(c, s + 1) <= hs::learningRate(c, s));
  }

  void miniatureToyModelLearns() {
    QTemporaryDir dir;
    const hs::ToyRecipe r = miniRecipe(160);
    const hs::TrainResult res = hs::trainToy(r, dir.path().toStdString(), nullptr);
    QVERIFY(res.finished);
    QVERIFY(res.curve.size() >= 10);
    const double first = res.curve.front().loss, last = res.curve.back().loss;
    qInfo("miniature toy model: loss %.3f -> %.3f in %lld steps, %.1f s", first, last,
          static_cast<long long>(res.steps_done), res.seconds);
    QVERIFY2(std::abs(first - std::log(static_cast<double>(r.model.vocab_size))) < 0.5,
             "the first loss should be near log(vocab): an untrained model");
    // Uniform guessing over the 244 tokens costs 5.5 nats; 1.5 nats less means the model predicts the
    // structure (separators, repeats, label positions), not just token frequencies (~4.6 nats).
    QVERIFY2(last < first - 1.5, qPrintable(QString("loss fell only from %1 to %2").arg(first).arg(last)));
    for (const char* f :
         {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training.json"})
      QVERIFY2(std::filesystem::exists(dir.filePath(f).toStdString()), f);
    std::ifstream tj(dir.filePath("training.json").toStdString());
    const auto training = nlohmann::json::parse(tj);
    QCOMPARE(training["steps"].get<int64_t>(), int64_t(160));
    QVERIFY(training["final_kind_loss"].contains("induction"));
  }

  void resumedRunEqualsUninterrupted() {
    QTemporaryDir a, b;
    hs::ToyRecipe r = miniRecipe(16);
    const hs::TrainResult straight = hs::trainToy(r, a.path().toStdString(), nullptr);
    QVERIFY(straight.finished);

    r.train.stop_after = 8;
    const hs::TrainResult firstHalf = hs::trainToy(r, b.path().toStdString(), nullptr);
    QVERIFY(!firstHalf.finished);
    QCOMPARE(firstHalf.steps_done, int64_t(8));
    r.train.stop_after = -1;
    const hs::TrainResult resumed = hs::trainToy(r, b.path().toStdString(), nullptr);
    QVERIFY(resumed.finished);
    QCOMPARE(resumed.curve.size(), straight.curve.size());
    QCOMPARE(resumed.curve.back().loss, straight.curve.back().loss);

    QVERIFY(sameWeights(a.filePath("model.safetensors"), b.filePath("model.safetensors")));
  }

  // The head-pruning stage continues the step count, stops and resumes inside itself bit-identically, and
  // can start from a finished main-schedule folder instead of rerunning it (with the same result).
  void pruningStageResumesAndReusesTheMainSchedule() {
    QTemporaryDir straightDir, piecesDir, mainDir, reusedDir;
    hs::ToyRecipe r = miniRecipe(8);
    r.pruning.steps = 8;
    r.pruning.warmup = 2;
    const hs::TrainResult straight = hs::trainToy(r, straightDir.path().toStdString(), nullptr);
    QVERIFY(straight.finished);
    QCOMPARE(straight.steps_done, int64_t(16));
    QCOMPARE(straight.curve.back().step, int64_t(16));
    QVERIFY(straight.curve.back().kind_loss.count("penalty"));
    const nlohmann::json training = readJson(straightDir.filePath("training.json"));
    QCOMPARE(training["recipe"]["head_pruning"]["steps"].get<int64_t>(), int64_t(8));
    QCOMPARE(training["stages"].size(), size_t(2));
    QCOMPARE(training["head_pruning"]["gates"].size(), size_t(2));
    QCOMPARE(training["head_pruning"]["gates"][0].size(), size_t(4));

    r.train.stop_after = 12;  // four steps into the pruning stage
    const hs::TrainResult first = hs::trainToy(r, piecesDir.path().toStdString(), nullptr);
    QVERIFY(!first.finished);
    QCOMPARE(first.steps_done, int64_t(12));
    r.train.stop_after = -1;
    const hs::TrainResult resumed = hs::trainToy(r, piecesDir.path().toStdString(), nullptr);
    QVERIFY(resumed.finished);
    QCOMPARE(resumed.curve.back().loss, straight.curve.back().loss);
    QVERIFY(sameWeights(straightDir.filePath("model.safetensors"), piecesDir.filePath("model.safetensors")));

    hs::ToyRecipe mainOnly = r;
    mainOnly.pruning.steps = 0;
    QVERIFY(hs::trainToy(mainOnly, mainDir.path().toStdString(), nullptr).finished);
    const hs::TrainResult reused =
        hs::trainToy(r, reusedDir.path().toStdString(), nullptr, mainDir.path().toStdString());
    QVERIFY(reused.finished);
    QCOMPARE(reused.steps_done, int64_t(16));
    QVERIFY(sameWeights(straightDir.filePath("model.safetensors"), reusedDir.filePath("model.safetensors")));

    // A main-schedule folder of another recipe is refused, naming its training.json.
    QTemporaryDir otherDir;
    hs::ToyRecipe otherSeed = r;
    otherSeed.train.seed = 99;
    try {
      hs::trainToy(otherSeed, otherDir.path().toStdString(), nullptr, mainDir.path().toStdString());
      QFAIL("a main schedule of another recipe was accepted");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("training.json") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("another recipe") != std::string::npos, e.what());
    }

    // A main-schedule folder whose training.json has a version-0 recipe is the same recipe.
    nlohmann::json training0 = readJson(mainDir.filePath("training.json"));
    training0["recipe"] = asVersionZero(training0["recipe"]);
    std::ofstream(mainDir.filePath("training.json").toStdString()) << training0.dump();
    QTemporaryDir fromV0Dir;
    QVERIFY(hs::trainToy(r, fromV0Dir.path().toStdString(), nullptr, mainDir.path().toStdString()).finished);
    QVERIFY(sameWeights(straightDir.filePath("model.safetensors"), fromV0Dir.filePath("model.safetensors")));
  }

  // Under a heavy L0 penalty the stage closes heads, and a closed head is removed from the written weights.
  void heavyPenaltyRemovesHeads() {
    QTemporaryDir dir;
    hs::ToyRecipe r = miniRecipe(8);
    r.pruning.steps = 40;
    r.pruning.warmup = 2;
    r.pruning.l0_weight = 2.0;
    r.pruning.gate_lr = 0.5;
    QVERIFY(hs::trainToy(r, dir.path().toStdString(), nullptr).finished);
    const nlohmann::json pruning = readJson(dir.filePath("training.json"))["head_pruning"];
    const nlohmann::json& removed = pruning["removed_heads"];
    qInfo("heavy penalty: %zu of 8 heads removed", removed.size());
    QVERIFY(removed.size() >= 4);
    auto file = hs::SafetensorsFile::open(dir.filePath("model.safetensors").toStdString());
    const int64_t dh = r.model.d_head;
    for (const auto& lh : removed) {
      const int l = lh[0], h = lh[1];
      QCOMPARE(pruning["gates"][l][h].get<double>(), 0.0);
      const std::string prefix = "model.layers." + std::to_string(l) + ".self_attn.";
      for (const char* proj : {"q_proj", "k_proj", "v_proj"})
        QCOMPARE(file->tensor(prefix + proj + ".weight").narrow(0, h * dh, dh).abs().max().item<double>(),
                 0.0);
      QCOMPARE(file->tensor(prefix + "o_proj.weight").narrow(1, h * dh, dh).abs().max().item<double>(), 0.0);
    }
  }

  // The recipe JSON has a format_version; version 1 records every curriculum setting, so a change of a
  // default cannot change what a saved recipe means.
  void recipeJsonRecordsEverySetting() {
    const nlohmann::json j = hs::recipeJson(hs::defaultToyRecipe());
    QCOMPARE(j.at("format_version").get<int>(), hs::kToyRecipeFormatVersion);
    QCOMPARE(hs::kToyRecipeFormatVersion, 1);
    for (const char* key : {"icl_from", "category_weight", "icl_cls_weight", "category_sep",
                            "fuzzy_list_weight", "fuzzy_list_sep"})
      QVERIFY2(j.at("train").contains(key), key);
    hs::ToyRecipe off = hs::defaultToyRecipe();
    off.curriculum.fuzzy_list_weight = 0.0;  // recorded when off too, with its separator
    QCOMPARE(hs::recipeJson(off).at("train").at("fuzzy_list_weight").get<double>(), 0.0);
    QCOMPARE(hs::recipeJson(off).at("train").at("fuzzy_list_sep").get<std::string>(), std::string(":"));
    // No source-file names in saved JSON.
    QVERIFY2(j.dump().find(".cpp") == std::string::npos, j.dump().c_str());
    // A current recipe migrates to itself.
    QCOMPARE(QString::fromStdString(hs::migrateRecipeJson(j).dump()), QString::fromStdString(j.dump()));
  }

  // Version 0 (no format_version) left out settings that were off or did not exist yet; the migration gives
  // them the values those runs used, whatever the defaults are now, and resumedRecipe reads them so.
  void versionZeroRecipesMigrateToWhatTheyRan() {
    const nlohmann::json current = hs::recipeJson(hs::defaultToyRecipe());
    // The version-0 form of the current default recipe, as the shipped training.json holds it.
    const nlohmann::json v0 = asVersionZero(current);
    QCOMPARE(QString::fromStdString(hs::migrateRecipeJson(v0).dump()),
             QString::fromStdString(current.dump()));

    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("checkpoint"));
    const std::string out = dir.path().toStdString();
    auto readBack = [&](const nlohmann::json& recipe) {
      std::ofstream(out + "/checkpoint/recipe.json") << recipe.dump();
      hs::ToyRecipe base = hs::defaultToyRecipe();
      base.curriculum.fuzzy_list_weight = 7.0;  // must be replaced by what the file says
      base.curriculum.fuzzy_list_sep = "?";
      base.curriculum.icl_from = 0.9;
      return hs::resumedRecipe(out, base).curriculum;
    };
    hs::toy::CurriculumOptions c = readBack(v0);
    QCOMPARE(c.fuzzy_list_weight, 1.0);
    QCOMPARE(c.fuzzy_list_sep, std::string(":"));
    QCOMPARE(c.category_sep, std::string("="));
    // Before the ":" separator for fuzzy lists existed, they ran with ",".
    nlohmann::json commaEra = v0;
    commaEra["train"].erase("fuzzy_list_sep");
    c = readBack(commaEra);
    QCOMPARE(c.fuzzy_list_weight, 1.0);
    QCOMPARE(c.fuzzy_list_sep, std::string(","));
    // Before fuzzy lists (and the curriculum options) existed: none, icl stage from 70 %, weight 3.
    nlohmann::json before = commaEra;
    for (const char* key : {"fuzzy_list_weight", "icl_from", "icl_cls_weight", "category_weight"})
      before["train"].erase(key);
    c = readBack(before);
    QCOMPARE(c.fuzzy_list_weight, 0.0);
    QCOMPARE(c.fuzzy_list_sep, std::string(","));
    QCOMPARE(c.icl_from, 0.7);
    QCOMPARE(c.icl_cls_weight, 3.0);
    QCOMPARE(c.category_weight, 0.0);
    // A version-1 recipe means exactly what it says.
    hs::ToyRecipe off = hs::defaultToyRecipe();
    off.curriculum.fuzzy_list_weight = 0.0;
    QCOMPARE(readBack(hs::recipeJson(off)).fuzzy_list_weight, 0.0);
    QCOMPARE(readBack(hs::recipeJson(off)).fuzzy_list_sep, std::string(":"));

    // A newer or malformed format is refused, naming the file.
    auto refusal = [&](const nlohmann::json& recipe) -> std::string {
      try {
        readBack(recipe);
      } catch (const std::exception& e) {
        return e.what();
      }
      return "";
    };
    nlohmann::json newer = current;
    newer["format_version"] = 2;
    std::string e = refusal(newer);
    QVERIFY2(e.find("recipe.json") != std::string::npos && e.find("newer") != std::string::npos, e.c_str());
    nlohmann::json bad = current;
    bad["format_version"] = "one";
    e = refusal(bad);
    QVERIFY2(e.find("recipe.json") != std::string::npos && e.find("format_version") != std::string::npos,
             e.c_str());
  }

  // A run started with a version-0 recipe.json resumes: its migrated recipe equals the current one.
  void versionZeroCheckpointResumes() {
    QTemporaryDir straightDir, piecesDir;
    hs::ToyRecipe r = miniRecipe(8);
    QVERIFY(hs::trainToy(r, straightDir.path().toStdString(), nullptr).finished);
    r.train.stop_after = 4;
    QVERIFY(!hs::trainToy(r, piecesDir.path().toStdString(), nullptr).finished);
    std::ofstream(piecesDir.filePath("checkpoint/recipe.json").toStdString())
        << asVersionZero(hs::recipeJson(r)).dump();
    r.train.stop_after = -1;
    QVERIFY(hs::trainToy(r, piecesDir.path().toStdString(), nullptr).finished);
    QVERIFY(sameWeights(straightDir.filePath("model.safetensors"), piecesDir.filePath("model.safetensors")));
    // The resumed run writes its recipe in the current format.
    QCOMPARE(readJson(piecesDir.filePath("checkpoint/recipe.json")).at("format_version").get<int>(), 1);
  }

  void resumeWithOtherSettingsIsRefused() {
    QTemporaryDir dir;
    hs::ToyRecipe r = miniRecipe(8);
    r.train.stop_after = 4;
    hs::trainToy(r, dir.path().toStdString(), nullptr);
    // Every recipe setting that shapes the weights or the data stream must match the checkpoint's.
    auto refusedWith = [&](const std::function<void(hs::ToyRecipe&)>& change) {
      hs::ToyRecipe other = r;
      change(other);
      try {
        hs::trainToy(other, dir.path().toStdString(), nullptr);
      } catch (const std::exception& e) {
        return std::string(e.what()).find("another recipe") != std::string::npos &&
               std::string(e.what()).find("recipe.json") != std::string::npos;
      }
      return false;
    };
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.train.seed = 99; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.curriculum.icl_from = 0.5; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.curriculum.category_weight = 1.0; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.curriculum.fuzzy_list_weight = 0.0; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.curriculum.fuzzy_list_sep = ","; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.curriculum.icl_cls_weight = 6.0; }));
    QVERIFY(refusedWith([](hs::ToyRecipe& o) { o.model.d_head = o.model.rotary_dim = 8; }));
    // The trainer's own check holds without the recipe file too.
    QFile::remove(dir.filePath("checkpoint/recipe.json"));
    hs::ToyRecipe seed99 = r;
    seed99.train.seed = 99;
    bool refused = false;
    try {
      hs::trainToy(seed99, dir.path().toStdString(), nullptr);
    } catch (const std::exception& e) {
      refused = std::string(e.what()).find("other settings") != std::string::npos;
    }
    QVERIFY(refused);
  }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "test_trainer.moc"
