// The CLI as a user runs it: real processes, JSON on stdout, errors as one "error: ..." line.
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "cli_test_util.h"
#include "test_paths.h"

using hs::test::CliResult;
using hs::test::readJsonFile;
using hs::test::runCli;
using nlohmann::json;

namespace {

QString stories(const char* file) {
  return QString::fromStdString(hs::test::sharedData(std::string("models/stories260K/") + file));
}

json reference() {
  std::ifstream f(hs::test::sharedData("models/stories260K/reference_outputs.json"));
  return json::parse(f);
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { HS_REQUIRE_FILE(hs::test::sharedData("models/stories260K/stories260K.bin")); }

  void infoReportsStories260KShapes_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("llama2c") << stories("stories260K.bin");
    QTest::newRow("gguf") << stories("stories260K.gguf");
  }
  void infoReportsStories260KShapes() {
    QFETCH(QString, file);
    const CliResult r = runCli({"info", file});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const json j = r.parsed();
    QCOMPARE(j["architecture"].get<std::string>(), std::string("llama"));
    QCOMPARE(j["n_layers"].get<int>(), 5);
    QCOMPARE(j["n_heads"].get<int>(), 8);
    QCOMPARE(j["n_kv_heads"].get<int>(), 4);
    QCOMPARE(j["d_model"].get<int>(), 64);
    QCOMPARE(j["d_head"].get<int>(), 8);
    QCOMPARE(j["d_mlp"].get<int>(), 172);
    QCOMPARE(j["vocab_size"].get<int>(), 512);
    QCOMPARE(j["dtype"].get<std::string>(), std::string("float32"));
    QCOMPARE(j["silent_heads"].size(), size_t(0));  // a trained model: every head writes something
    // 512*64 embeddings + 5 layers * (4096 + 2*2048 + 4096 + 3*172*64 + 2*64) + 64; the .bin ties the
    // classifier to the embeddings, the GGUF stores output.weight separately.
    const long long tied = 512LL * 64 + 5LL * (4096 + 4096 + 4096 + 3 * 172 * 64 + 128) + 64;
    const bool gguf = file.endsWith(".gguf");
    QCOMPARE(j["tied_embeddings"].get<bool>(), !gguf);
    QCOMPARE(j["n_params"].get<long long>(), tied + (gguf ? 512LL * 64 : 0));
  }

  void tokenizeMatchesLlama2c() {
    const json ref = reference();  // kept alive: a range over a member of a temporary would dangle
    for (const auto& c : ref["cases"]) {
      const CliResult r = runCli({"tokenize", "--tokenizer", stories("tok512.bin"), "--text",
                                  QString::fromStdString(c["prompt"].get<std::string>())});
      QVERIFY2(r.exitCode == 0, r.err.c_str());
      const json j = r.parsed();
      QCOMPARE(j["ids"], c["token_ids"]);
      QCOMPARE(j["decoded"].get<std::string>(), c["prompt"].get<std::string>());
    }
  }

  // Float32 products go through oneDNN where the build has it, through ATen's BLAS with HEADSCOPE_GEMM=aten
  // (onednn_gemm.h): both match the reference, and `info` says which ran.
  void logitsMatchReference_data() {
    QTest::addColumn<QStringList>("modelArgs");
    QTest::addColumn<QString>("gemm");
    const QStringList bin{stories("stories260K.bin"), "--tokenizer", stories("tok512.bin")};
    QTest::newRow("llama2c") << bin << "";
    QTest::newRow("gguf") << QStringList{stories("stories260K.gguf")} << "";
    QTest::newRow("llama2c, ATen GEMM") << bin << "aten";
  }
  void logitsMatchReference() {
    QFETCH(QStringList, modelArgs);
    QFETCH(QString, gemm);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!gemm.isEmpty()) env.insert("HEADSCOPE_GEMM", gemm);
    const CliResult info = runCli({"info", modelArgs.front()}, env);
    QVERIFY2(info.exitCode == 0, info.err.c_str());
    const std::string backend = info.parsed()["f32_gemm"].get<std::string>();
    QVERIFY2(gemm == "aten" ? backend == "ATen (BLAS)" : !backend.empty(), backend.c_str());
    const json ref = reference();  // kept alive: a range over a member of a temporary would dangle
    for (const auto& c : ref["cases"]) {
      const CliResult r =
          runCli(QStringList{"logits"} + modelArgs +
                     QStringList{"--text", QString::fromStdString(c["prompt"].get<std::string>())},
                 env);
      QVERIFY2(r.exitCode == 0, r.err.c_str());
      const json j = r.parsed();
      QCOMPARE(j["ids"], c["token_ids"]);
      const auto got = j["last_logits"].get<std::vector<double>>();
      const auto want = c["last_position_logits_full"].get<std::vector<double>>();
      QCOMPARE(got.size(), want.size());
      double maxDiff = 0;
      for (size_t i = 0; i < got.size(); ++i)
        maxDiff = std::max(maxDiff, std::abs(got[i] - want[i]));
      QVERIFY2(maxDiff <= 1e-4, qPrintable(QString("max |logit diff| %1 > 1e-4").arg(maxDiff)));
      QCOMPARE(j["top"][0]["id"], c["last_position_top10"][0]["id"]);
    }
  }

  void generateReproducesRunC() {
    const json ref = reference();
    const CliResult r = runCli({"generate", stories("stories260K.bin"), "--tokenizer", stories("tok512.bin"),
                                "--text", "Once upon a time", "--max-new", "60"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(r.parsed()["text"].get<std::string>(),
             ref["run_c_greedy_prompt_Once_upon_a_time_n64"].get<std::string>());
  }

  void ablationChangesLogitsAndBadHeadIsAnError() {
    const QStringList base{"logits", stories("stories260K.bin"), "--ids", "1,403,407,261,378"};
    const CliResult clean = runCli(base);
    const CliResult zero = runCli(base + QStringList{"--ablate", "0.1,2.3"});
    const CliResult mean = runCli(base + QStringList{"--ablate", "0.1,2.3", "--ablate-mode", "mean"});
    QVERIFY2(clean.exitCode == 0 && zero.exitCode == 0 && mean.exitCode == 0, (zero.err + mean.err).c_str());
    QVERIFY(clean.parsed()["last_logits"] != zero.parsed()["last_logits"]);
    QVERIFY(zero.parsed()["last_logits"] != mean.parsed()["last_logits"]);

    const CliResult bad = runCli(base + QStringList{"--ablate", "7.0"});
    QCOMPARE(bad.exitCode, 1);
    // Progress lines may come first; the error is the last line.
    std::string lastLine = bad.err.substr(0, bad.err.find_last_not_of('\n') + 1);
    lastLine = lastLine.substr(lastLine.find_last_of('\n') + 1);
    QVERIFY2(lastLine.rfind("error: ", 0) == 0, bad.err.c_str());
    QVERIFY2(bad.err.find("layer") != std::string::npos, bad.err.c_str());
  }

  void trainToyRecordsItsNumericKernels() {
    // The kernels decide the bits (numeric_kernels.h); a run records the ones it used, and a run whose pieces
    // used different ones says so. The overrides name kernels every x86-64 CPU can run: ATen's scalar path
    // and OpenBLAS's SSE3 ("Prescott") and SSSE3 ("Core2") GEMMs.
    QTemporaryDir dir;
    auto env = [](const QString& core) {
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert("ATEN_CPU_CAPABILITY", "default");
      e.insert("OPENBLAS_CORETYPE", core);
      return e;
    };
    const QStringList tiny = {"--steps",   "6", "--batch",  "2", "--n-layers",    "1",
                              "--n-heads", "2", "--d-head", "8", "--prune-steps", "0"};
    const QString same = dir.filePath("same");
    const CliResult first =
        runCli(QStringList{"train-toy", "--out", same, "--stop-after", "3"} + tiny, env("Prescott"));
    QVERIFY2(first.exitCode == 0, first.err.c_str());
    const json kernels = first.parsed()["numeric_kernels"];
    QCOMPARE(kernels.size(), size_t(1));
    // ATen's scalar path: "NO AVX" in libtorch 1.13, "DEFAULT" in 2.x.
    const json capability = kernels[0]["aten_cpu_capability"];
    QVERIFY2(capability == "NO AVX" || capability == "DEFAULT", kernels.dump().c_str());
    // The GEMM kernel overrides below are OpenBLAS's: the system's, which Debian's libtorch uses. A PyTorch
    // wheel's libtorch (make test-torch2) brings its own BLAS, whose kernels these variables do not choose.
    if (std::string(HEADSCOPE_EXPECTED_BLAS_THREADS).empty() &&
        kernels[0]["blas"].get<std::string>().rfind("OpenBLAS", 0) != 0)
      QSKIP(qPrintable(QString::fromStdString("OPENBLAS_CORETYPE does not choose this libtorch's GEMMs: " +
                                              kernels[0].dump())));
    QCOMPARE(kernels[0]["blas_core"].get<std::string>(), "Prescott");
    QVERIFY2(kernels[0]["blas"].get<std::string>().rfind("OpenBLAS", 0) == 0, kernels.dump().c_str());
    QCOMPARE(kernels[0]["intra_op_threads"].get<int>(), 1);
    // OpenBLAS's own pool follows the recipe's one thread, whatever the machine's cores.
    QCOMPARE(kernels[0]["blas_threads"].get<int>(), 1);
    // Resumed on the same kernels: one record, no warning.
    const CliResult resumed = runCli({"train-toy", "--resume", same}, env("Prescott"));
    QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
    QVERIFY2(resumed.err.find("warning") == std::string::npos, resumed.err.c_str());
    QCOMPARE(readJsonFile(same + "/training.json")["numeric_kernels"], kernels);
    // Resuming the finished run on other kernels computes nothing, so it adds no record and no warning.
    const CliResult again = runCli({"train-toy", "--resume", same}, env("Core2"));
    QVERIFY2(again.exitCode == 0, again.err.c_str());
    QVERIFY2(again.err.find("warning") == std::string::npos, again.err.c_str());
    QCOMPARE(readJsonFile(same + "/training.json")["numeric_kernels"], kernels);
    // Resumed on other kernels: both records, and a warning that names the variables to set.
    const QString mixed = dir.filePath("mixed");
    QCOMPARE(runCli(QStringList{"train-toy", "--out", mixed, "--stop-after", "3"} + tiny, env("Prescott"))
                 .exitCode,
             0);
    const CliResult other = runCli({"train-toy", "--resume", mixed}, env("Core2"));
    QVERIFY2(other.exitCode == 0, other.err.c_str());
    QVERIFY2(other.err.find("different numeric kernels") != std::string::npos, other.err.c_str());
    QVERIFY2(other.err.find("OPENBLAS_CORETYPE") != std::string::npos, other.err.c_str());
    const json both = readJsonFile(mixed + "/training.json")["numeric_kernels"];
    QCOMPARE(both.size(), size_t(2));
    QCOMPARE(both[1]["blas_core"].get<std::string>(), "Core2");
  }

  void trainToyInPiecesThenEvaluate() {
    QTemporaryDir dir;
    const QString out = dir.filePath("toy");
    // clang-format off
    const CliResult first = runCli({"train-toy", "--out", out, "--steps", "6", "--batch", "2",
                                    "--stop-after", "3", "--n-layers", "2", "--n-heads", "3", "--d-head", "8",
                                    "--icl-from", "0.5", "--category-weight", "1", "--category-sep", ":",
                                    "--fuzzy-list-weight", "0.5", "--fuzzy-list-sep", ":", "--prune-steps", "2",
                                    "--prune-l0", "0.05"});
    // clang-format on
    QVERIFY2(first.exitCode == 0, first.err.c_str());
    QCOMPARE(first.parsed()["finished"].get<bool>(), false);
    QVERIFY2(first.err.find("step 3") != std::string::npos, first.err.c_str());  // progress on stderr
    // A resume with another curriculum is refused, naming the checkpoint's recipe file.
    const CliResult otherRecipe = runCli({"train-toy", "--resume", out, "--icl-from", "0.9"});
    QCOMPARE(otherRecipe.exitCode, 1);
    QVERIFY2(otherRecipe.err.find("recipe.json") != std::string::npos, otherRecipe.err.c_str());
    const CliResult otherMixture = runCli({"train-toy", "--resume", out, "--category-weight", "0"});
    QCOMPARE(otherMixture.exitCode, 1);
    QVERIFY2(otherMixture.err.find("recipe.json") != std::string::npos, otherMixture.err.c_str());
    const CliResult otherSep = runCli({"train-toy", "--resume", out, "--category-sep", "="});
    QCOMPARE(otherSep.exitCode, 1);
    QVERIFY2(otherSep.err.find("recipe.json") != std::string::npos, otherSep.err.c_str());
    const CliResult otherFuzzy = runCli({"train-toy", "--resume", out, "--fuzzy-list-weight", "0"});
    QCOMPARE(otherFuzzy.exitCode, 1);
    QVERIFY2(otherFuzzy.err.find("recipe.json") != std::string::npos, otherFuzzy.err.c_str());
    const CliResult otherFuzzySep = runCli({"train-toy", "--resume", out, "--fuzzy-list-sep", ","});
    QCOMPARE(otherFuzzySep.exitCode, 1);
    QVERIFY2(otherFuzzySep.err.find("recipe.json") != std::string::npos, otherFuzzySep.err.c_str());
    const CliResult otherPruning = runCli({"train-toy", "--resume", out, "--prune-l0", "0.2"});
    QCOMPARE(otherPruning.exitCode, 1);
    QVERIFY2(otherPruning.err.find("recipe.json") != std::string::npos, otherPruning.err.c_str());
    const CliResult otherShape = runCli({"train-toy", "--resume", out, "--n-heads", "4"});
    QCOMPARE(otherShape.exitCode, 1);
    QVERIFY2(otherShape.err.find("recipe.json") != std::string::npos, otherShape.err.c_str());
    // A plain resume continues with the settings the run started with (shape, head width, curriculum,
    // head-pruning stage) and runs the pruning stage after the 6 main steps.
    const CliResult resumed = runCli({"train-toy", "--resume", out});
    QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
    const json config = readJsonFile(out + "/config.json");
    QCOMPARE(config["head_dim"].get<int>(), 8);
    QCOMPARE(config["num_hidden_layers"].get<int>(), 2);
    QCOMPARE(config["num_attention_heads"].get<int>(), 3);
    QCOMPARE(config["num_key_value_heads"].get<int>(), 3);
    const json trained = readJsonFile(out + "/training.json")["recipe"]["train"];
    QCOMPARE(trained["icl_from"].get<double>(), 0.5);
    QCOMPARE(trained["category_weight"].get<double>(), 1.0);
    QCOMPARE(trained["category_sep"].get<std::string>(), ":");
    QCOMPARE(trained["fuzzy_list_weight"].get<double>(), 0.5);
    QCOMPARE(trained["fuzzy_list_sep"].get<std::string>(), ":");
    QCOMPARE(resumed.parsed()["finished"].get<bool>(), true);
    QCOMPARE(resumed.parsed()["steps"].get<int>(), 8);
    const json training = readJsonFile(out + "/training.json");
    QCOMPARE(training["recipe"]["head_pruning"]["l0_weight"].get<double>(), 0.05);
    QCOMPARE(training["head_pruning"]["gates"].size(), size_t(2));
    QCOMPARE(training["head_pruning"]["gates"][0].size(), size_t(3));
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "training.json"})
      QVERIFY2(QFile::exists(out + "/" + f), f);

    const CliResult eval = runCli({"eval-toy", "--model", out, "--n", "4"});
    QVERIFY2(eval.exitCode == 0, eval.err.c_str());
    const json j = eval.parsed();
    for (const char* k :
         {"induction_acc", "concept_copy_acc", "translation_acc", "icl_cls_acc_8shot", "icl_cls_acc_0shot",
          "tr_ratio_0shot", "tr_ratio_8shot", "function_acc_8shot", "function_acc_0shot"}) {
      QVERIFY2(j.contains(k), k);
      QVERIFY(j[k].get<double>() >= 0.0 && j[k].get<double>() <= 1.0);
    }
    QVERIFY(j["format"].contains("icl_cls"));

    // The trained folder is an ordinary HF checkpoint with a WordLevel tokenizer.
    const CliResult info = runCli({"info", out});
    QVERIFY2(info.exitCode == 0, info.err.c_str());
    QCOMPARE(info.parsed()["tokenizer"].get<std::string>(), std::string("wordlevel"));
    QCOMPARE(info.parsed()["n_layers"].get<int>(), 2);
    QCOMPARE(info.parsed()["n_heads"].get<int>(), 3);

    const CliResult noState = runCli({"train-toy", "--resume", dir.filePath("nothing-here")});
    QCOMPARE(noState.exitCode, 1);
    QVERIFY2(noState.err.find("nothing-here") != std::string::npos, noState.err.c_str());
  }

  void badInputsGiveOneLineErrors() {
    QTemporaryDir dir;
    // A .bin with its last byte cut off.
    const std::string cut = dir.filePath("cut.bin").toStdString();
    {
      std::ifstream in(stories("stories260K.bin").toStdString(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(cut, std::ios::binary)
          .write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1));
    }
    const CliResult truncated = runCli({"info", QString::fromStdString(cut)});
    QCOMPARE(truncated.exitCode, 1);
    QVERIFY2(truncated.err.find("cut.bin") != std::string::npos, truncated.err.c_str());

    const CliResult missing = runCli({"info", dir.filePath("nope.gguf")});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.find("nope.gguf") != std::string::npos, missing.err.c_str());

    const CliResult outOfRange = runCli({"logits", stories("stories260K.bin"), "--ids", "1,9999"});
    QCOMPARE(outOfRange.exitCode, 1);
    QVERIFY2(outOfRange.err.find("9999") != std::string::npos, outOfRange.err.c_str());

    const CliResult help = runCli({"logits", "--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.find("--ablate-mode") != std::string::npos);
  }

  // The help offers a compute dtype exactly when it runs: f16 on a libtorch without float16 CPU kernels
  // (Debian's 1.13) is neither listed nor accepted; bf16 is both.
  void dtypeHelpOffersWhatRuns() {
    const CliResult help = runCli({"logits", "--help"});
    QCOMPARE(help.exitCode, 0);
    const size_t at = help.out.find("--dtype");
    QVERIFY(at != std::string::npos);
    const std::string dtypeHelp = help.out.substr(at, help.out.find("\n  -", at + 1) - at);
    QVERIFY2(dtypeHelp.find("bf16") != std::string::npos, dtypeHelp.c_str());
    bool offersF16 = false;  // an "f16" that is not the end of "bf16"
    for (size_t i = dtypeHelp.find("f16"); i != std::string::npos; i = dtypeHelp.find("f16", i + 1))
      offersF16 = offersF16 || i == 0 || dtypeHelp[i - 1] != 'b';
    const CliResult f16 =
        runCli({"logits", stories("stories260K.bin"), "--ids", "1,403,407", "--dtype", "f16"});
    QVERIFY2((f16.exitCode == 0) == offersF16, qPrintable(QString("help offers f16: %1; f16 run exit %2: %3")
                                                              .arg(offersF16)
                                                              .arg(f16.exitCode)
                                                              .arg(QString::fromStdString(f16.err))));
    if (!offersF16) QVERIFY2(f16.err.find("--dtype") != std::string::npos, f16.err.c_str());
    const CliResult bf16 =
        runCli({"logits", stories("stories260K.bin"), "--ids", "1,403,407", "--dtype", "bf16"});
    QVERIFY2(bf16.exitCode == 0, bf16.err.c_str());
  }

  // With room, weights stored as computed are copied into aligned memory; when a copy would not fit
  // comfortably they are read in place from the mapped file: the same logits, and stderr says why.
  void weightsInPlaceAreNoted() {
    const QStringList args{"logits", stories("stories260K.bin"), "--ids", "1,403,407"};
    const CliResult roomy = runCli(args);
    QVERIFY2(roomy.exitCode == 0, roomy.err.c_str());
    QVERIFY2(roomy.err.find("weights: used in place") == std::string::npos, roomy.err.c_str());
    const CliResult info = runCli({"info", stories("stories260K.bin")});
    QVERIFY2(info.exitCode == 0, info.err.c_str());
    const json need = info.parsed()["memory"]["devices"][0];
    const auto total = need["weights_bytes"].get<uint64_t>() + need["working_bytes"].get<uint64_t>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HEADSCOPE_MEMORY_LIMIT", QString::number(total * 3 / 2));  // fits, but not twice
    const CliResult tight = runCli(args, env);
    QVERIFY2(tight.exitCode == 0, tight.err.c_str());
    QVERIFY2(tight.err.find("weights: used in place from the checkpoint's memory-mapped pages") !=
                 std::string::npos,
             tight.err.c_str());
    const auto a = tight.parsed()["last_logits"].get<std::vector<double>>();
    const auto b = roomy.parsed()["last_logits"].get<std::vector<double>>();
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      QVERIFY2(std::abs(a[i] - b[i]) <= 1e-5,
               qPrintable(QString("logit %1: %2 vs %3").arg(i).arg(a[i]).arg(b[i])));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
