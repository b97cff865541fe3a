// The dual route on real tokenizers (docs/methods.md, "Induction and the dual route"; official
// scripts/vocablist_ablation.py and causal_scores.py), with the reference data of ../shared/data:
// - A list-task prompt under the GPT-2 tokenizer decodes to the official layout ("Words:\n1. w\n...
//   Antonyms:\n1. a\n... 3.") over a hand-made word list, its answer is the first token of " antonym(query)",
//   and pairs whose two words start with the same token are dropped; every task id builds on the shared data
//   (numbers of prompts printed).
// - continuationIds gives a word's mid-text tokens under byte-level BPE and llama2.c SentencePiece alike.
// - The `dual-route` and `list-tasks` runs on stories260K (llama2.c) with the real-model defaults: newline
//   separator, corpus fillers (the shipped WikiText-2 excerpt), words from the corpus, the mean of mean
//   ablation over the same corpus, one ablation curve per list task over the k grid capped by the 40 heads
//   (heads ordered by the dual-route run's copying grids, prefix matching computed), and every prompt
//   recorded. `concept-patching` refuses a model other than the toy model.
#include <ATen/core/grad_mode.h>

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <regex>

#include "analysis/methods/induction_run.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "tasks/list_tasks.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

void writeFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path);
  f << text;
}

}  // namespace

class TestDualRouteReal : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  std::string gpt2Path() const { return hs::test::sharedData("tokenizers/gpt2/vocab.json"); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // A hand-made nguyenetal_2017 folder: five antonym pairs, and one whose words share their first token
    // (a word paired with itself), which the official filter drops.
    writeFile(dir_.filePath("data/nguyenetal_2017/all_antonyms.csv").toStdString(),
              "word1,word2,antonym\nhot,cold,1\nbig,small,1\nup,down,1\nfast,slow,1\nyes,no,1\n"
              "same,same,1\n,valid,1\n");
  }

  void continuationIdsAreMidTextTokens() {
    HS_REQUIRE_FILE(gpt2Path());
    const auto gpt2 = hs::loadTokenizer(gpt2Path());
    const std::vector<int64_t> ids = hs::continuationIds(*gpt2, " cold");
    QCOMPARE(ids.size(), size_t(1));
    QCOMPARE(gpt2->decode({int(ids[0])}), std::string(" cold"));
    QCOMPARE(ids[0], int64_t(*gpt2->idOf("\xC4\xA0"
                                         "cold")));  // "Ġcold"
    const std::string tok = hs::test::sharedData("models/stories260K/tok512.bin");
    HS_REQUIRE_FILE(tok);
    const auto sp = hs::loadTokenizer(tok);
    const std::vector<int64_t> spIds = hs::continuationIds(*sp, " cold");
    std::vector<int> asInt(spIds.begin(), spIds.end());
    QCOMPARE(sp->decode(asInt), std::string(" cold"));
    QCOMPARE(hs::newlineId(*gpt2), int64_t(198));  // "Ċ"
  }

  void antonymPromptHasTheOfficialLayout() {
    HS_REQUIRE_FILE(gpt2Path());
    const auto gpt2 = hs::loadTokenizer(gpt2Path());
    hs::DualRouteVocab v;  // no corpus needed for word lists
    hs::ListTaskOptions o;
    o.items = 3;
    o.n = 10;  // more than the usable pairs: every kept pair becomes a prompt
    o.seed = 2;
    const hs::NextTokenTask t = hs::listTask("antonym", *gpt2, dir_.filePath("data").toStdString(), v, o);
    QCOMPARE(t.id, std::string("antonym"));
    QCOMPARE(int(t.prompts.size()), 5);  // "same/same" dropped (same first token), the empty row too
    const std::map<std::string, std::string> antonym = {
        {"hot", "cold"}, {"big", "small"}, {"up", "down"}, {"fast", "slow"}, {"yes", "no"}};
    const std::regex layout(
        "^Words:\n1\\. (\\w+)\n2\\. (\\w+)\n3\\. (\\w+)\nAntonyms:\n1\\. (\\w+)\n2\\. (\\w+)\n3\\.$");
    std::set<std::string> queries;
    for (size_t i = 0; i < t.prompts.size(); ++i) {
      const std::string text = gpt2->decode(std::vector<int>(t.prompts[i].begin(), t.prompts[i].end()));
      std::smatch m;
      QVERIFY2(std::regex_match(text, m, layout), text.c_str());
      QCOMPARE(antonym.at(m[1]), m[4].str());
      QCOMPARE(antonym.at(m[2]), m[5].str());
      QVERIFY(m[3] != m[1] && m[3] != m[2]);  // the query word is not among the other items
      queries.insert(m[3]);
      QCOMPARE(t.answers[i], hs::continuationIds(*gpt2, " " + antonym.at(m[3]))[0]);
    }
    QCOMPARE(int(queries.size()), 5);  // prompt i asks for pair i
    // Unknown ids and missing folders are one clear line.
    QVERIFY_THROWS_EXCEPTION(hs::Error,
                             hs::listTask("antonyms", *gpt2, dir_.filePath("data").toStdString(), v, o));
    QVERIFY_THROWS_EXCEPTION(hs::Error,
                             hs::listTask("synonym", *gpt2, dir_.filePath("data").toStdString(), v, o));
  }

  void everyTaskBuildsOnTheSharedData() {
    HS_REQUIRE_FILE(gpt2Path());
    const std::string data = hs::test::sharedData("datasets/dual_route");
    HS_REQUIRE_FILE(data + "/conneauetal_2017/en-fr.txt");
    const auto gpt2 = hs::loadTokenizer(gpt2Path());
    hs::DualRouteVocab v;
    const std::vector<int> corpus =
        gpt2->encode("The quick brown fox jumps over the lazy dog.\nA second line.", false);
    v.corpus.assign(corpus.begin(), corpus.end());
    hs::ListTaskOptions o;
    o.n = 12;
    for (const std::string& id : hs::listTaskIds()) {
      const hs::NextTokenTask t = hs::listTask(id, *gpt2, data, v, o);
      QCOMPARE(int(t.prompts.size()), 12);
      QCOMPARE(t.prompts.size(), t.answers.size());
      const std::string text = gpt2->decode(std::vector<int>(t.prompts[0].begin(), t.prompts[0].end()));
      qInfo("%s: %s", id.c_str(),
            QString::fromStdString(text).replace("\n", "\\n").left(160).toUtf8().constData());
      QVERIFY2(text.size() > 40 && text.back() == '.', text.c_str());
      if (id == "upper") QVERIFY2(text.find("Capitalized Words:\n1. ") != std::string::npos, text.c_str());
      if (id == "translation_de") QVERIFY2(text.rfind("German vocab:\n1.", 0) == 0, text.c_str());
    }
  }

  // The runs on a real (llama2.c) model with the real-model defaults.
  void dualRouteRunsOnStoriesUseTheRealModelDefaults() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(bin);
    hs::LoadOptions lo;
    lo.tokenizer = hs::test::sharedData("models/stories260K/tok512.bin");
    const hs::LoadedModel lm = hs::loadModel(bin, lo);
    QVERIFY(!hs::isToyVocabulary(lm.model->config().vocab_size, lm.tokenizer.get()));
    if (hs::defaultMeanCorpus().empty()) QSKIP("the shipped WikiText-2 excerpt is not found");
    hs::InductionRunOptions o;
    o.n = 2;
    o.n_matching = 3;
    o.n_eval = 6;
    o.span = 8;
    o.ks = {0, 1, 2, 64};
    o.list_tasks = "antonym,nonsense";
    o.list_data = hs::test::sharedData("datasets/dual_route");
    HS_REQUIRE_FILE(o.list_data + "/nguyenetal_2017/all_antonyms.csv");
    at::NoGradGuard noGrad;
    const hs::AnalysisOutput dual =
        hs::runDualRoute(*lm.model, lm.tokenizer.get(), o, hs::test::modelContext(bin));
    const std::string dualJson = dir_.filePath("dual-route.json").toStdString();
    std::ofstream(dualJson) << nlohmann::json(dual.run).dump();
    o.grids_from = dualJson;
    const hs::AnalysisOutput lists =
        hs::runListTasks(*lm.model, lm.tokenizer.get(), o, hs::test::modelContext(bin));
    for (const hs::AnalysisOutput* out : {&dual, &lists}) {
      const nlohmann::json& s = out->run.summary;
      qInfo("%s summary: %s", out->run.method.c_str(), s.dump().substr(0, 600).c_str());
      QCOMPARE(s.at("filler").get<std::string>(), std::string("corpus"));
      QCOMPARE(s.at("sep").get<int64_t>(), hs::newlineId(*lm.tokenizer));
      QCOMPARE(s.at("n").get<int>(), 2);
      QVERIFY(s.at("vocab").get<std::string>().find("multi-token words of the corpus") != std::string::npos);
    }
    QVERIFY(lists.run.summary.at("mean_source").get<std::string>().find("wikitext-2") != std::string::npos);
    QCOMPARE(lists.run.summary.at("ordering_grids"),
             (nlohmann::json{{"induction.prefix_matching", "computed"},
                             {"dual_route.token_copying", dualJson},
                             {"dual_route.concept_copying", dualJson}}));
    for (const char* id : {"dual_route.token_copying", "dual_route.concept_copying",
                           "dual_route.next_token_matching", "dual_route.last_token_matching"}) {
      const hs::HeadGrid* g = hs::test::findGrid(dual.run, id);
      QVERIFY2(g && g->layers() == 5 && g->heads() == 8 && g->values.allFinite(), id);
    }
    std::set<std::string> curves;
    for (const hs::Curve& c : lists.run.curves) {
      curves.insert(c.id);
      QVERIFY(c.x == (std::vector<double>{0, 1, 2, 40}));  // k capped at the 40 heads
    }
    std::set<std::string>
        want;  // per task: top-1, top-5, top-10 accuracy and p(answer), as the official script
    for (const char* task : {"copy_random", "antonym", "nonsense"})
      for (const char* metric : {"ablation.", "ablation_top5.", "ablation_top10.", "ablation_prob."})
        want.insert(std::string("dual_route.") + metric + task);
    QCOMPARE(curves, want);
    std::map<std::string, int> sets;
    for (const hs::AnalysisOutput* out : {&dual, &lists})
      for (const hs::PromptRecord& p : out->run.prompts)
        ++sets[p.set];
    QCOMPARE(sets["token_copying.corrupt"], 2);
    QCOMPARE(sets["last_token_matching"], 3);
    QCOMPARE(sets["ablation.nonsense"], 6);
    QCOMPARE(sets["ablation.antonym"], 6);
    // The copying prompts use the newline separator and BOS: [bos] first-half(30) \n ...
    QCOMPARE(sets["induction"], 2);  // list-tasks computed the prefix-matching grid it was not given
    for (const hs::PromptRecord& p : dual.run.prompts)
      if (p.set == "token_copying.clean") {
        QCOMPARE(p.ids.front(), int64_t(lm.tokenizer->bosId()));
        QCOMPARE(p.ids[31], hs::newlineId(*lm.tokenizer));
      }
    // Concept patching needs the toy world's two languages.
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runConceptPatching(*lm.model, lm.tokenizer.get(), o));
  }
};

QTEST_GUILESS_MAIN(TestDualRouteReal)
#include "test_dual_route_real.moc"
