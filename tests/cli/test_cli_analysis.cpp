// `headscope-cli patch` and `headscope-cli export` as a user runs them (real processes), on stories260K, and
// every other analysis command on stories260K with Function Vectors tasks (finite grids of the right shape):
// - patch writes a session whose run reopens with the grids the library computes for the same pair
//   (exact sweep, attribution, their rank correlation), per-position grids included, and the --json file;
// - a clean/corrupt pair of unequal token length and an unknown target token fail with "error: ...";
// - export writes one CSV per grid and table with the layer × head shape, numbers that parse back to
//   the session's values, JSON files equal to the session's grids, and names the file of a broken
//   session in its error.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "analysis/toolkit/attribution_patching.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep.h"
#include "cli_test_util.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "session/session.h"
#include "test_paths.h"

using hs::test::CliResult;
using hs::test::runCli;
using nlohmann::json;

namespace {

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

const hs::HeadGrid* findGrid(const hs::AnalysisRun& run, const std::string& id) {
  for (const auto& g : run.grids)
    if (g.id == id) return &g;
  return nullptr;
}

double maxDiff(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

// A CSV file as rows of cells (no quoting needed for the numeric files checked here).
std::vector<std::vector<std::string>> readCsv(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ','))
      cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

class TestCliAnalysis : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  hs::LoadedModel model_;
  std::string clean_ = "Lily and Ben went to the park. Lily and Ben";
  std::string corrupt_;
  int64_t target_ = -1, distractor_ = -1;
  std::string session_;  // written by initTestCase through the CLI

  QStringList modelArgs() const {
    return {q(hs::test::sharedData("models/stories260K/stories260K.bin")), "--tokenizer",
            q(hs::test::sharedData("models/stories260K/tok512.bin"))};
  }
  std::vector<int64_t> ids(const std::string& text) const {
    const auto v = model_.tokenizer->encode(text);
    return {v.begin(), v.end()};
  }
  hs::PatchSweepSpec spec(hs::PatchMode mode, hs::PatchMetric metric) const {
    hs::PatchSweepSpec s;
    s.clean = ids(clean_);
    s.corrupt = ids(corrupt_);
    s.target = target_;
    s.distractor = distractor_;
    s.mode = mode;
    s.metric = metric;
    return s;
  }
  // The k-th most likely next token (0 = argmax).
  int64_t ranked(const std::string& text, int k) const {
    hs::RunRequest r;
    r.tokens = at::tensor(ids(text), at::kLong).view({1, -1});  // [1, pos]
    r.last_logits_only = true;
    return std::get<1>(model_.model->run(r).logits[0][0].topk(k + 1))[k].item<int64_t>();
  }

 private Q_SLOTS:
  void initTestCase() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(bin);
    QVERIFY(dir_.isValid());
    hs::LoadOptions o;
    o.tokenizer = hs::test::sharedData("models/stories260K/tok512.bin");
    model_ = hs::loadModel(bin, o);
    for (const char* name : {"Tom", "Sam", "Tim", "Max", "Sue", "Anna"}) {
      const std::string c = std::string("Lily and ") + name + " went to the park. Lily and " + name;
      if (ids(c).size() == ids(clean_).size() && ids(c) != ids(clean_)) {
        corrupt_ = c;
        break;
      }
    }
    QVERIFY2(!corrupt_.empty(), "no corrupt name with the clean prompt's token length");
    target_ = ranked(clean_, 0);
    distractor_ = ranked(corrupt_, 0);
    if (distractor_ == target_) distractor_ = ranked(corrupt_, 1);

    session_ = dir_.filePath("patch.hscope").toStdString();
    const CliResult r =
        runCli(QStringList{"patch"} + modelArgs() +
               QStringList{"--clean", q(clean_), "--corrupt", q(corrupt_), "--target",
                           q("#" + std::to_string(target_)), "--distractor",
                           q("#" + std::to_string(distractor_)), "--metric", "logit_diff", "--attribution",
                           "--out", q(session_), "--json", dir_.filePath("patch.json")});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const json printed = json::parse(r.out);
    QCOMPARE(printed["method"].get<std::string>(), std::string("patch"));
    QCOMPARE(printed["grids"], (json{"patch.effect", "patch.attribution"}));
  }

  // ---- patch ----

  void sessionHoldsTheLibraryGrids() {
    const hs::Session s = hs::loadSession(session_);
    QCOMPARE(int(s.runs.size()), 1);
    const hs::AnalysisRun& run = s.runs[0];
    QCOMPARE(run.method, std::string("patch"));
    const hs::HeadGrid* exact = findGrid(run, "patch.effect");
    const hs::HeadGrid* approx = findGrid(run, "patch.attribution");
    QVERIFY(exact && approx);
    QCOMPARE(exact->layers(), 5);
    QCOMPARE(exact->heads(), 8);
    QCOMPARE(exact->provenance.options["metric"].get<std::string>(), std::string("logit_diff"));
    QCOMPARE(exact->provenance.options["target"].get<int64_t>(), target_);
    QCOMPARE(exact->provenance.options["corrupt_ids"].get<std::vector<int64_t>>(), ids(corrupt_));

    const hs::PatchSweepSpec sp = spec(hs::PatchMode::FromClean, hs::PatchMetric::LogitDiff);
    const hs::HeadGrid lib = hs::patchingSweep(*model_.model, sp);
    const hs::HeadGrid libAttrib = hs::attributionPatching(*model_.model, sp);
    QVERIFY2(maxDiff(exact->values, lib.values) <= 1e-6,
             qPrintable(QString::number(maxDiff(exact->values, lib.values))));
    QVERIFY(maxDiff(approx->values, libAttrib.values) <= 1e-6);
    QVERIFY(lib.values.cwiseAbs().maxCoeff() > 1e-3);  // the names matter to some head
    QCOMPARE(exact->provenance.options["corrupt_metric"].get<double>(),
             lib.provenance.options["corrupt_metric"].get<double>());

    // The rank table agrees with the grids it names.
    QCOMPARE(int(run.tables.size()), 1);
    const hs::Table& t = run.tables[0];
    QCOMPARE(t.id, std::string("patch.rank_agreement"));
    QCOMPARE(t.columns, (std::vector<std::string>{"exact", "attribution", "spearman_rho", "kendall_tau"}));
    QCOMPARE(int(t.rows.size()), 1);
    QVERIFY(std::abs(t.rows[0][2].get<double>() - hs::spearmanRho(*exact, *approx)) <= 1e-12);
    QVERIFY(std::abs(t.rows[0][3].get<double>() - hs::kendallTauB(*exact, *approx)) <= 1e-12);
    qInfo("stories260K CLI: attribution vs exact Spearman %.3f, Kendall %.3f", t.rows[0][2].get<double>(),
          t.rows[0][3].get<double>());

    // --json holds the same run.
    std::ifstream f(dir_.filePath("patch.json").toStdString());
    const hs::AnalysisRun fromJson = json::parse(f).get<hs::AnalysisRun>();
    QCOMPARE(maxDiff(findGrid(fromJson, "patch.effect")->values, exact->values), 0.0);
  }

  void perPositionGridsMatchLibrary() {
    const std::string out = dir_.filePath("perpos.hscope").toStdString();
    const CliResult r = runCli(
        QStringList{"patch"} + modelArgs() +
        QStringList{"--corrupt", q(corrupt_), "--target", q("#" + std::to_string(target_)), "--mode", "zero",
                    "--metric", "logit", "--per-position", "--positions", "3,-1", "--out", q(out)});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const hs::AnalysisRun run = hs::loadSession(out).runs.at(0);
    hs::PatchSweepSpec sp = spec(hs::PatchMode::Zero, hs::PatchMetric::TargetLogit);
    sp.clean.clear();
    sp.per_position = true;
    sp.positions = {3, -1};
    const std::vector<hs::HeadGrid> lib = hs::patchingSweepPositions(*model_.model, sp);
    QCOMPARE(int(run.grids.size()), 2);
    const int last = int(sp.corrupt.size()) - 1;
    QCOMPARE(run.grids[0].id, std::string("patch.effect.pos3"));
    QCOMPARE(run.grids[1].id, "patch.effect.pos" + std::to_string(last));
    for (int i = 0; i < 2; ++i)
      QVERIFY(maxDiff(run.grids[i].values, lib[i].values) <= 1e-6);
    // Zero-ablating at the last position moves the target logit; the last layer at position 3 cannot
    // (up to float32 rounding of logits of size ~10 recomputed in another batch shape).
    const double lastLayerAt3 = run.grids[0].values.row(4).cwiseAbs().maxCoeff();
    QVERIFY(run.grids[1].values.cwiseAbs().maxCoeff() > 1e-2);
    QVERIFY2(lastLayerAt3 <= 1e-4, qPrintable(QString::number(lastLayerAt3)));
  }

  void tokenTextResolvesLikeId() {
    // The target given as its vocabulary string gives the run the same target id.
    const std::string piece = model_.tokenizer->piece(int(target_));
    const std::string out = dir_.filePath("piece.hscope").toStdString();
    const CliResult r = runCli(QStringList{"patch"} + modelArgs() +
                               QStringList{"--clean", q(clean_), "--corrupt", q(corrupt_), "--target",
                                           q(piece), "--positions", "-1", "--out", q(out)});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(hs::loadSession(out).runs.at(0).grids.at(0).provenance.options["target"].get<int64_t>(),
             target_);
  }

  void unequalLengthsFail() {
    const CliResult r = runCli(QStringList{"patch"} + modelArgs() +
                               QStringList{"--clean", q(clean_), "--corrupt", "Lily went home.", "--target",
                                           "#5", "--out", dir_.filePath("bad.hscope")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.rfind("error: ", 0) == 0 || r.err.find("\nerror: ") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("equal token length") != std::string::npos, r.err.c_str());
    QVERIFY(!std::filesystem::exists(dir_.filePath("bad.hscope").toStdString()));
  }

  void unknownTargetFails() {
    const CliResult r = runCli(QStringList{"patch"} + modelArgs() +
                               QStringList{"--clean", q(clean_), "--corrupt", q(corrupt_), "--target",
                                           "no such token here", "--out", dir_.filePath("bad2.hscope")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("error: --target 'no such token here'") != std::string::npos, r.err.c_str());
  }

  // ---- export ----

  void exportWritesOneCsvPerResult() {
    const std::string csvDir = dir_.filePath("csv").toStdString(),
                      jsonDir = dir_.filePath("json").toStdString();
    const CliResult r = runCli({"export", q(session_), "--csv", q(csvDir), "--json", q(jsonDir)});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const json printed = json::parse(r.out);
    const std::vector<std::string> csv = printed["csv"].get<std::vector<std::string>>();
    QCOMPARE(csv, (std::vector<std::string>{csvDir + "/patch-1.patch.effect.csv",
                                            csvDir + "/patch-1.patch.attribution.csv",
                                            csvDir + "/patch-1.patch.rank_agreement.csv"}));
    QCOMPARE(int(printed["json"].size()), 3);

    const hs::AnalysisRun run = hs::loadSession(session_).runs.at(0);
    for (int i = 0; i < 2; ++i) {
      const hs::HeadGrid& g = run.grids[i];
      const auto rows = readCsv(csv[i]);
      QCOMPARE(int(rows.size()), 1 + g.layers());  // header + one row per layer
      QCOMPARE(rows[0], (std::vector<std::string>{"layer", "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"}));
      double worst = 0;
      for (int l = 0; l < g.layers(); ++l) {
        QCOMPARE(int(rows[1 + l].size()), 1 + g.heads());
        QCOMPARE(rows[1 + l][0], std::to_string(l));
        for (int h = 0; h < g.heads(); ++h)
          worst = std::max(worst, std::abs(std::stod(rows[1 + l][1 + h]) - g.values(l, h)));
      }
      QVERIFY2(worst <= 1e-12, qPrintable(QString("%1: %2").arg(q(g.id)).arg(worst)));
      // The JSON file is the grid.
      std::ifstream f(printed["json"][i].get<std::string>());
      QCOMPARE(maxDiff(json::parse(f).get<hs::HeadGrid>().values, g.values), 0.0);
    }
    const auto table = readCsv(csv[2]);
    QCOMPARE(int(table.size()), 2);
    QCOMPARE(table[0], (std::vector<std::string>{"exact", "attribution", "spearman_rho", "kendall_tau"}));
    QVERIFY(std::abs(std::stod(table[1][2]) - run.tables[0].rows[0][2].get<double>()) <= 1e-12);
  }

  // Every analysis runs on a real checkpoint: stories260K (5 layers × 8 heads) with Function Vectors tasks
  // from the shared data on these cores and produces finite grids of the model's shape (antonym.json for the
  // task vectors, sentiment.json, whose two answers make it a classification set, for TSLA and geometry);
  // concept-patching, which needs the toy world's two languages, runs on the toy model.
  void everyAnalysisRunsOnStoriesWithFvTasks() {
    const std::string fvDir = hs::test::sharedData("datasets/function_vectors/abstractive/");
    HS_REQUIRE_FILE(fvDir + "antonym.json");
    const QString antonym = q(fvDir + "antonym.json"), sentiment = q(fvDir + "sentiment.json");
    const std::vector<std::pair<QString, QStringList>> runs = {
        {"fv", {"--task", antonym, "--n", "10", "--shots", "5"}},
        {"site", {"--task", antonym, "--n", "10", "--shots", "5", "--steps", "40", "--n-embed", "10"}},
        {"ltv",
         {"--task", antonym, "--n", "10", "--shots", "5", "--layers", "2", "--steps", "40", "--train-prompts",
          "20", "--icl-prompts", "10", "--fv-prompts", "5", "--prop-samples", "80"}},
        {"tsla", {"--task", sentiment, "--n", "12", "--shots", "4"}},
        {"geometry", {"--task", sentiment, "--n", "12", "--shots", "4"}},
        {"induction", {"--n", "4", "--n-eval", "8"}},
        {"dual-route", {"--n", "4", "--n-matching", "4"}},
        {"list-tasks", {"--n", "4", "--n-eval", "8", "--ks", "0,2", "--list-tasks", "nonsense"}},
        {"concept-patching", {"--n", "4"}},
    };
    for (const auto& [method, options] : runs) {
      const std::string base = dir_.filePath("stories_" + method).toStdString();
      const QStringList model = method == "concept-patching" ? QStringList{"toy"} : modelArgs();
      QStringList args = QStringList{method} + model + options;
      args << "--out" << q(base + ".hscope") << "--json" << q(base + ".json");
      const CliResult r = runCli(args);
      QVERIFY2(r.exitCode == 0, qPrintable(method + ": " + q(r.err)));
      std::ifstream f(base + ".json");
      const json j = json::parse(f);
      // Saved results name no source file of HeadScope (options and provenance describe, not point to code).
      std::smatch sourceFile;
      const std::string text = j.dump();
      QVERIFY2(!std::regex_search(text, sourceFile, std::regex(R"([A-Za-z0-9_/]+\.(cpp|h)\b)")),
               qPrintable(method + " names " + q(sourceFile.str())));
      // geometry's results are per-layer curves (x = the model's 5 layers); every other method has grids
      if (method == "geometry") {
        QVERIFY(!j.at("curves").empty());
        for (const json& c : j.at("curves")) {
          QCOMPARE(c.at("x").size(), size_t(5));
          for (const json& series : c.at("series"))
            for (const json& v : series.at("y"))
              QVERIFY2(
                  v.is_number() && std::isfinite(v.get<double>()),
                  qPrintable("geometry " + q(c.at("id").get<std::string>()) + " has a non-finite value"));
        }
      } else if (method == "list-tasks") {
        QVERIFY(!j.at("curves").empty());  // its results are curves, concept-patching's a table
      } else if (method == "concept-patching") {
        QCOMPARE(j.at("tables").size(), size_t(1));
      } else {
        QVERIFY2(!j.at("grids").empty(), qPrintable(method));
      }
      for (const json& g : j.at("grids")) {
        const QString what = method + " " + q(g.at("id").get<std::string>());
        QVERIFY2(g.at("shape") == json::array({5, 8}), qPrintable(what));
        QCOMPARE(g.at("values").size(), size_t(5));
        // LTV's key-head saliency is defined only for heads after the injection site: NaN
        // before it ("NaN" in JSON), and finite in the last layer.
        const bool afterSiteOnly = g.at("id") == "ltv.key_heads";
        const json& rows = g.at("values");
        for (size_t l = 0; l < rows.size(); ++l) {
          QCOMPARE(rows[l].size(), size_t(8));
          for (const json& v : rows[l]) {
            if (afterSiteOnly && v == "NaN" && l + 1 < rows.size()) continue;
            QVERIFY2(v.is_number() && std::isfinite(v.get<double>()),
                     qPrintable(what + " has a non-finite value"));
          }
        }
      }
      // The run's record is a recipe: `rerun` repeats it from the session alone (model, tokenizer, dtype,
      // task and options read back) and gives the same results to the bit (one thread, same build).
      const CliResult again = runCli({"rerun", q(base + ".hscope"), "--out", q(base + "_rerun.hscope"),
                                      "--json", q(base + "_rerun.json")});
      QVERIFY2(again.exitCode == 0, qPrintable(method + " rerun: " + q(again.err)));
      std::ifstream f2(base + "_rerun.json");
      const json j2 = json::parse(f2);
      QCOMPARE(j2.at("id"), j.at("id"));
      QCOMPARE(j2.at("options"), j.at("options"));
      for (const char* part : {"grids", "curves", "tables"}) {
        QCOMPARE(j2.at(part).size(), j.at(part).size());
        for (size_t i = 0; i < j.at(part).size(); ++i) {
          json a = j.at(part)[i], b = j2.at(part)[i];
          a.erase("provenance");  // its "created" differs
          b.erase("provenance");
          QVERIFY2(a == b, qPrintable(method + " rerun: " + q(a.value("id", std::string()))));
        }
      }
      QVERIFY2(j2.at("summary") == j.at("summary"), qPrintable(method + " rerun: summary"));
      QVERIFY2(j2.at("prompts") == j.at("prompts"), qPrintable(method + " rerun: prompts"));
    }
    // A run JSON names the model but not a llama2.c tokenizer: rerun takes the tokenizer (and any model)
    // given.
    const std::string tsla = dir_.filePath("stories_tsla").toStdString();
    const CliResult fromJson = runCli({"rerun", q(tsla + ".json"), "--tokenizer",
                                       q(hs::test::sharedData("models/stories260K/tok512.bin")), "--out",
                                       q(tsla + "_from_json.hscope"), "--json", q(tsla + "_from_json.json")});
    QVERIFY2(fromJson.exitCode == 0, qPrintable(q(fromJson.err)));
    const json first = hs::test::readJsonFile(q(tsla + ".json")).at("grids");
    const json second = hs::test::readJsonFile(q(tsla + "_from_json.json")).at("grids");
    QCOMPARE(second.size(), first.size());
    for (size_t i = 0; i < first.size(); ++i)
      QVERIFY2(second[i].at("values") == first[i].at("values"),
               qPrintable(q(first[i].at("id").get<std::string>())));
  }

  void exportOfBrokenSessionNamesTheFile() {
    // Not a safetensors file at all, and a real session cut in half.
    const std::string junk = dir_.filePath("junk.hscope").toStdString();
    std::ofstream(junk) << "this is not a session";
    const std::string cut = dir_.filePath("cut.hscope").toStdString();
    {
      std::ifstream in(session_, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    for (const std::string& bad : {junk, cut}) {
      const CliResult r = runCli({"export", q(bad), "--csv", dir_.filePath("never")});
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.rfind("error: ", 0) == 0, r.err.c_str());
      QVERIFY2(r.err.find(bad) != std::string::npos, r.err.c_str());
      QVERIFY(r.out.empty());
    }
    QVERIFY(!std::filesystem::exists(dir_.filePath("never").toStdString()));
  }

  // `logits --ablate-mode mean` means what the GUI and evaluate mean (analysis/toolkit/head_edits.h): the
  // head's corpus mean — on the toy model the toy world's text —, not this prompt's own positions.
  void logitsMeanAblationIsTheCorpusMean() {
    const std::vector<int64_t> ids = {1, 5, 9, 12, 20, 7, 33, 5};
    const CliResult r = runCli(
        {"logits", "toy", "--ids", "1,5,9,12,20,7,33,5", "--ablate", "3.0,2.5", "--ablate-mode", "mean"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const std::vector<float> got = r.parsed()["last_logits"].get<std::vector<float>>();
    const hs::LoadedModel toy = hs::loadModel("toy");
    hs::RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    req.interventions = hs::meanHeads({{3, 0}, {2, 5}},
                                      hs::meanZ(*toy.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions));
    const at::Tensor want = toy.model->run(req).logits[0][-1].to(at::kFloat).contiguous();  // [vocab]
    QCOMPARE(static_cast<int64_t>(got.size()), want.numel());
    double maxDiff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      maxDiff = std::max(maxDiff, std::abs(double(got[i]) - want[static_cast<int64_t>(i)].item<double>()));
    QVERIFY2(maxDiff <= 1e-4, qPrintable(QString("max |logit diff| %1").arg(maxDiff)));
  }
};

QTEST_GUILESS_MAIN(TestCliAnalysis)
#include "test_cli_analysis.moc"
