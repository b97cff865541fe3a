// Published results as runs (core/analysis/methods/published.h) with the dual-route study's files in
// ../shared/data/published/dual_route:
// - Llama-2-7b: one run holding the causal, attention and ordering grids at 32 × 32, each value the file's
//   own, the paper's reference heads on top (concept (14, 1), token (16, 19)) and only 10 heads shared by the
//   two top-80 sets; the orderings' grids rank heads as their lists do.
// - OLMo-2's causal scores: the final model and 7 checkpoints as 8 runs; the learning-dynamics series holds
//   the 7 checkpoints in step order with each head's value from its file.
// - The converted copy in resources/published holds the four final models' grids exactly as a fresh import.
// - A file with a head twice, a head missing, or another layout is refused with one line naming it.
// - The registry knows "published" as imported (runMethod refuses it); the CLI's import-published writes a
//   session that reopens with those runs, and --session adds them to a copy of another session.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "analysis/framework/registry.h"
#include "analysis/methods/published.h"
#include "analysis_test_util.h"
#include "results/checkpoint_series.h"
#include "results/rank_stats.h"
#include "session/session.h"
#include "test_paths.h"
#include "util/error.h"
#include "util/file_text.h"

namespace {

std::string published(const std::string& rel) {
  return hs::test::sharedData("published/dual_route/" + rel);
}

// The score of (layer, head) in a published [{"layer", "head_idx", "score"}] list.
double scoreOf(const nlohmann::json& list, int layer, int head) {
  for (const nlohmann::json& e : list)
    if (e["layer"] == layer && e["head_idx"] == head) return e["score"].get<double>();
  return std::nan("");
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestPublished : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void llama2RunHoldsThePublishedGrids() {
    const std::string m = "Llama-2-7b-hf";
    HS_REQUIRE_FILE(published("causal_scores/" + m + "/concept_copying_len30_n1024.json"));
    const std::vector<hs::AnalysisRun> runs =
        hs::importPublished({published("causal_scores/" + m), published("attention_scores/" + m),
                             published("head_orderings/" + m)});
    QCOMPARE(runs.size(), size_t(1));
    const hs::AnalysisRun& r = runs[0];
    QCOMPARE(r.id, std::string("published-1"));
    QCOMPARE(r.method, std::string("published"));
    QCOMPARE(r.provenance.model, m);
    QCOMPARE(hs::runLabel(r),
             std::string("published · Llama-2-7b-hf · dual-route study (published) · seed 8"));
    for (const char* id :
         {"dual_route.concept_copying", "dual_route.token_copying", "dual_route.next_token_matching",
          "dual_route.last_token_matching", "dual_route.next_token_matching.words",
          "dual_route.last_token_matching.random_tokens", "dual_route.ordering.concept_copying",
          "dual_route.ordering.token_copying", "dual_route.ordering.fv"}) {
      const hs::HeadGrid* g = hs::test::findGrid(r, id);
      QVERIFY2(g && g->layers() == 32 && g->heads() == 32 && g->values.allFinite(), id);
    }
    // Values are the files' own.
    const nlohmann::json conceptScores =
        hs::readJsonFile(published("causal_scores/" + m + "/concept_copying_len30_n1024.json"));
    const nlohmann::json attn = hs::readJsonFile(published("attention_scores/" + m + "/n2048_seqlen30.json"));
    const hs::HeadGrid& cg = *hs::test::findGrid(r, "dual_route.concept_copying");
    const hs::HeadGrid& lg = *hs::test::findGrid(r, "dual_route.last_token_matching");
    for (const auto& [l, h] : std::vector<std::pair<int, int>>{{0, 0}, {14, 1}, {31, 31}, {7, 19}}) {
      QCOMPARE(cg.values(l, h), scoreOf(conceptScores, l, h));
      QCOMPARE(lg.values(l, h), scoreOf(attn["end_tok_attn"], l, h));
    }
    QCOMPARE(cg.provenance.n_prompts, 1024);
    QCOMPARE(lg.provenance.n_prompts, 2048);
    // The paper's reference heads and the small overlap of the two top-80 sets.
    const hs::HeadGrid& tg = *hs::test::findGrid(r, "dual_route.token_copying");
    QCOMPARE(hs::topHeads(cg, 1).front(), (hs::HeadRef{14, 1}));
    QCOMPARE(hs::topHeads(tg, 1).front(), (hs::HeadRef{16, 19}));
    const double j80 = hs::jaccardAtK(cg, tg, 80);
    QCOMPARE(j80, 10.0 / 150.0);
    qInfo("Llama-2-7b published: top concept (14, 1), top token (16, 19), Jaccard@80 %.3f (10 shared heads)",
          j80);
    // An ordering's grid puts its list's first k heads on top; its table lists it.
    const nlohmann::json fv = hs::readJsonFile(published("head_orderings/" + m + "/fv.json"));
    const std::vector<hs::HeadRef> top = hs::topHeads(*hs::test::findGrid(r, "dual_route.ordering.fv"), 5);
    for (size_t i = 0; i < 5; ++i)
      QCOMPARE(top[i], (hs::HeadRef{fv[i][0].get<int>(), fv[i][1].get<int>()}));
    const hs::Table* ft = hs::test::findTable(r, "dual_route.ordering.fv");
    QVERIFY(ft && ft->rows.size() == 1024 && ft->rows[0][1] == fv[0][0]);
  }

  void olmoCheckpointsFormALearningDynamicsSeries() {
    const std::string root = published("causal_scores/OLMo-2-1124-7B");
    HS_REQUIRE_FILE(root);
    const std::vector<hs::AnalysisRun> runs = hs::importPublished({root}, {"published-1"});
    QCOMPARE(runs.size(), size_t(8));
    QCOMPARE(runs[0].id, std::string("published-2"));                   // the ids given are taken
    QCOMPARE(runs[0].provenance.model, std::string("OLMo-2-1124-7B"));  // the final model first
    QCOMPARE(hs::runStep(runs[0]), -1.0);
    const std::vector<hs::CheckpointSeries> series = hs::checkpointSeries(runs);
    QCOMPARE(series.size(), size_t(2));
    const hs::CheckpointSeries& s = series[0];
    QCOMPARE(s.grid_id, std::string("dual_route.concept_copying"));
    QCOMPARE(s.model, std::string("OLMo-2-1124-7B"));
    QVERIFY(s.steps == (std::vector<double>{150, 1000, 4000, 16000, 65000, 262000, 928646}));
    QCOMPARE(s.checkpoints.front(), std::string("stage1-step150-tokens1B"));
    QCOMPARE(int(s.values.rows()), 1024);
    const nlohmann::json early =
        hs::readJsonFile(root + "/stage1-step1000-tokens5B/concept_copying_len30_n256.json");
    QCOMPARE(s.values(10 * 32 + 12, 1), scoreOf(early, 10, 12));
    const std::vector<hs::HeadRef> top = s.topAtLast(3);
    QCOMPARE(int(top.size()), 3);
    QVERIFY(s.values(top[0].layer * 32 + top[0].head, 6) >= s.values(top[1].layer * 32 + top[1].head, 6));
    QStringList line;
    for (size_t j = 0; j < s.steps.size(); ++j)
      line << QString("%1: %2")
                  .arg(s.steps[j])
                  .arg(s.values(top[0].layer * 32 + top[0].head, long(j)), 0, 'g', 3);
    qInfo("OLMo-2 concept copying of head %d.%d across training: %s", top[0].layer, top[0].head,
          qPrintable(line.join(", ")));
  }

  void badFilesAreRefusedNamingThem() {
    const std::string d = dir_.filePath("bad/Model-X").toStdString();
    std::filesystem::create_directories(d);
    auto write = [&](const std::string& name, const std::string& text) {
      std::ofstream(d + "/" + name) << text;
      return d + "/" + name;
    };
    const std::string twice =
        write("concept_copying_len30_n4.json",
              R"([{"layer":0,"head_idx":0,"score":1},{"layer":0,"head_idx":0,"score":2}])");
    QVERIFY(errorOf([&] { hs::importPublished({twice}); }).find("head (0, 0) appears twice") !=
            std::string::npos);
    QVERIFY(errorOf([&] { hs::importPublished({twice}); }).find(twice) != std::string::npos);
    const std::string missing =
        write("token_copying_len30_n4.json",
              R"([{"layer":0,"head_idx":0,"score":1},{"layer":1,"head_idx":1,"score":2}])");
    QVERIFY(errorOf([&] { hs::importPublished({missing}); }).find("is missing") != std::string::npos);
    const std::string other = write("notes.json", R"({"hello": 1})");
    const std::string e = errorOf([&] { hs::importPublished({other}); });
    QVERIFY2(e.find(other) != std::string::npos &&
                 e.find("not a published dual-route result") != std::string::npos,
             e.c_str());
    QVERIFY(errorOf([&] { hs::importPublished({d + "/none.json"}); }).find("no such file") !=
            std::string::npos);
  }

  // The converted copy that ships (resources/published) holds, model for model, the grids a fresh import of
  // the reference files gives: values bit for bit, no checkpoint runs.
  void shippedCopyMatchesTheReferenceFiles() {
    const std::string shipped = hs::test::sourceDir("resources/published/dual_route_final_models.hscope");
    HS_REQUIRE_FILE(shipped);
    HS_REQUIRE_FILE(published("causal_scores/Meta-Llama-3-8B/concept_copying_len30_n1024.json"));
    const hs::Session s = hs::loadSession(shipped);
    QCOMPARE(s.runs.size(), size_t(4));
    for (const hs::AnalysisRun& r : s.runs) {
      QCOMPARE(r.method, std::string("published"));
      const std::string& m = r.provenance.model;
      QVERIFY2(m.find('@') == std::string::npos, m.c_str());
      std::vector<std::string> files;
      for (const char* kind : {"causal_scores/", "attention_scores/", "head_orderings/"})
        for (const auto& e : std::filesystem::directory_iterator(published(kind + m)))
          if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
      const std::vector<hs::AnalysisRun> fresh = hs::importPublished(files);
      QCOMPARE(fresh.size(), size_t(1));
      QCOMPARE(r.grids.size(), fresh[0].grids.size());
      for (const hs::HeadGrid& g : fresh[0].grids) {
        const hs::HeadGrid* got = hs::test::findGrid(r, g.id);
        QVERIFY2(got && got->values == g.values, (m + " " + g.id).c_str());
      }
    }
  }

  void registryKnowsPublishedAsImported() {
    const hs::MethodInfo& m = hs::requireMethod("published");
    QVERIFY(m.imported && !m.takesTask());
    QVERIFY(hs::methodRecordJson(m).at("imported").get<bool>());
  }

  void cliImportWritesASessionThatReopens() {
    HS_REQUIRE_CLI();
    const std::string m = "Meta-Llama-3-8B";
    HS_REQUIRE_FILE(published("causal_scores/" + m));
    const QString out = dir_.filePath("published.hscope");
    QProcess p;
    p.start(QString::fromStdString(hs::test::cliPath()),
            {"import-published", QString::fromStdString(published("causal_scores/" + m)),
             QString::fromStdString(published("attention_scores/" + m)), "--out", out});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const nlohmann::json printed = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(printed["runs"].size(), size_t(1));
    const hs::Session s = hs::loadSession(out.toStdString());
    QCOMPARE(s.runs.size(), size_t(1));
    QCOMPARE(s.runs[0].method, std::string("published"));
    QVERIFY(s.methods.contains("published"));
    QVERIFY(hs::test::findGrid(s.runs[0], "dual_route.concept_copying"));
    // --session: the runs join a copy of another session.
    const QString both = dir_.filePath("both.hscope");
    QProcess q;
    q.start(QString::fromStdString(hs::test::cliPath()),
            {"import-published", QString::fromStdString(published("head_orderings/" + m)), "--session", out,
             "--out", both});
    QVERIFY(q.waitForFinished(120000));
    QVERIFY2(q.exitCode() == 0, q.readAllStandardError().constData());
    const hs::Session s2 = hs::loadSession(both.toStdString());
    QCOMPARE(s2.runs.size(), size_t(2));
    QCOMPARE(s2.runs[1].id, std::string("published-2"));
    // A bad file: exit 1 and one line naming it.
    QProcess bad;
    bad.start(QString::fromStdString(hs::test::cliPath()),
              {"import-published", dir_.filePath("nonexistent.json"), "--out", dir_.filePath("x.hscope")});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 1);
    QVERIFY(QString(bad.readAllStandardError()).contains("nonexistent.json: no such file or folder"));
  }
};

QTEST_GUILESS_MAIN(TestPublished)
#include "test_published.moc"
