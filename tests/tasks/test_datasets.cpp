// Dataset readers on the real reference files and on malformed inputs.
#include <QtTest>

#include "tasks/dataset.h"
#include "tasks/toy/tasks.h"
#include "tasks/toy/world.h"
#include "tasks_test_util.h"
#include "test_paths.h"

using hs::test::sharedData;
using hs::test::writeFile;

class TestTaskDatasets : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void fvAntonym() {
    const std::string path = sharedData("datasets/function_vectors/abstractive/antonym.json");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadFvJson(path);
    QCOMPARE(d.id, std::string("antonym"));
    QCOMPARE(d.examples.size(), size_t(2398));
    QCOMPARE(d.examples[0].input, std::string("flawed"));
    QCOMPARE(d.examples[0].outputs, std::vector<std::string>{"perfect"});
    QCOMPARE(d.examples[0].label, -1);
    QVERIFY(!d.classification);
  }

  void fvClosedAnswerSetIsClassification() {
    // sentiment.json answers "positive" / "negative" only: a classification set with those label words
    // (first-appearance order), every example labelled; word_length.json (13 answers) stays a plain FV task.
    const std::string path = sharedData("datasets/function_vectors/abstractive/sentiment.json");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadFvJson(path);
    QVERIFY(d.classification);
    QCOMPARE(d.label_words, (std::vector<std::string>{"positive", "negative"}));
    QCOMPARE(d.template_id, std::string("fv"));  // still prompted in the FV format
    for (const hs::Example& e : d.examples)
      QCOMPARE(d.label_words[static_cast<size_t>(e.label)], e.outputs[0]);
    const hs::Dataset lengths =
        hs::loadFvJson(sharedData("datasets/function_vectors/abstractive/word_length.json"));
    QVERIFY(!lengths.classification);
    QCOMPARE(lengths.examples[0].label, -1);
  }

  void fvExtractiveAndKeyOrder() {
    // country-capital lists "output" before "input"; the order of keys must not matter.
    const std::string path = sharedData("datasets/function_vectors/abstractive/country-capital.json");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadDatasetAuto(path);
    QCOMPARE(d.examples.size(), size_t(197));
    QCOMPARE(d.examples[0].input, std::string("Afghanistan"));
    QCOMPARE(d.examples[0].outputs[0], std::string("Kabul"));
  }

  void fvListOutputsAndExtraKeys() {
    QTemporaryDir dir;
    const auto path = writeFile(dir, "multi.json",
                                R"([{"input": "big", "output": ["large", "huge"], "note": 1},
                                    {"input": "small", "output": "little"}])");
    const hs::Dataset d = hs::loadFvJson(path);
    QCOMPARE(d.examples.size(), size_t(2));
    QCOMPARE(d.examples[0].outputs, (std::vector<std::string>{"large", "huge"}));
    QCOMPARE(d.examples[1].outputs, std::vector<std::string>{"little"});
  }

  void fvMalformed() {
    QTemporaryDir dir;
    const auto bad = writeFile(dir, "bad.json", "[{\"input\": \"a\", \"output\": \"b\"},\n {\"input\": ");
    HS_EXPECT_ERROR(hs::loadFvJson(bad), bad, "malformed JSON", "line 2");
    const auto missing = writeFile(dir, "missing.json", R"([{"input": "a", "output": "b"}, {"input": "c"}])");
    HS_EXPECT_ERROR(hs::loadFvJson(missing), missing, "item 1", "\"output\"");
    const auto wrongType = writeFile(dir, "type.json", R"([{"input": 3, "output": "b"}])");
    HS_EXPECT_ERROR(hs::loadFvJson(wrongType), wrongType, "item 0", "expected a string");
    const auto emptyList = writeFile(dir, "el.json", R"([{"input": "a", "output": []}])");
    HS_EXPECT_ERROR(hs::loadFvJson(emptyList), emptyList, "item 0", "empty list");
    const auto notList = writeFile(dir, "obj.json", R"({"input": "a"})");
    HS_EXPECT_ERROR(hs::loadFvJson(notList), notList, "expected a list");
    const auto empty = writeFile(dir, "empty.json", "");
    HS_EXPECT_ERROR(hs::loadFvJson(empty), empty, "empty file");
    HS_EXPECT_ERROR(hs::loadFvJson(dir.path().toStdString() + "/nope.json"), "nope.json", "cannot open");
  }

  void sst2() {
    const std::string path = sharedData("datasets/classification/sst2/stsa.binary.train");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadSst2(path);
    QVERIFY(d.classification);
    QCOMPARE(d.examples.size(), size_t(6920));
    QCOMPARE(d.label_words, (std::vector<std::string>{"negative", "positive"}));
    QCOMPARE(d.examples[0].label, 1);
    QCOMPARE(d.examples[0].outputs[0], std::string("positive"));
    QVERIFY(d.examples[0].input.rfind("a stirring , funny", 0) == 0);
    QCOMPARE(d.examples[1].label, 0);
    int positives = 0;
    for (const auto& e : d.examples)
      positives += e.label;
    QCOMPARE(positives, 3610);
    // Auto-detection by content (no known extension) gives the same.
    const hs::Dataset a = hs::loadDatasetAuto(path);
    QCOMPARE(a.id, std::string("sst2"));
    QCOMPARE(a.examples.size(), d.examples.size());
  }

  void sst2Malformed() {
    QTemporaryDir dir;
    const auto badLabel = writeFile(dir, "s.txt", "1 good movie\n2 what\n");
    HS_EXPECT_ERROR(hs::loadSst2(badLabel), badLabel, "line 2", "label \"2\"");
    const auto noText = writeFile(dir, "t.txt", "1 good\n0\n");
    HS_EXPECT_ERROR(hs::loadSst2(noText), noText, "line 2", "no sentence");
    const auto empty = writeFile(dir, "e.txt", "\n\n");
    HS_EXPECT_ERROR(hs::loadSst2(empty), empty, "empty file");
  }

  void trec() {
    const std::string path = sharedData("datasets/classification/trec/train.txt");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadTrec(path);
    QVERIFY(d.classification);
    QCOMPARE(d.examples.size(), size_t(5452));  // the last line has no newline and still counts
    QCOMPARE(d.examples[0].label, 1);           // DESC:manner
    QCOMPARE(d.examples[0].outputs[0], std::string("description"));
    QCOMPARE(d.examples[0].input, std::string("How did serfdom develop in and then leave Russia ?"));
    std::vector<int> counts(6, 0);
    for (const auto& e : d.examples)
      ++counts[static_cast<size_t>(e.label)];
    QCOMPARE(counts, (std::vector<int>{86, 1162, 1250, 1223, 835, 896}));
    QCOMPARE(hs::loadDatasetAuto(path).id, std::string("trec"));
  }

  void trecMalformed() {
    QTemporaryDir dir;
    const auto bad = writeFile(dir, "q.txt", "DESC:manner How ?\nWHAT:x Why ?\n");
    HS_EXPECT_ERROR(hs::loadTrec(bad), bad, "line 2", "\"WHAT\"");
    const auto noColon = writeFile(dir, "r.txt", "DESC:manner How ?\nHUM Who ?\n");
    HS_EXPECT_ERROR(hs::loadTrec(noColon), noColon, "line 2", "COARSE:fine");
    HS_EXPECT_ERROR(hs::loadTrec(writeFile(dir, "e.txt", "")), "e.txt", "empty file");
  }

  void tsvPairs() {
    const std::string path = sharedData("datasets/dual_route/nguyenetal_2017/noun-pairs.test");
    HS_REQUIRE_FILE(path);
    const hs::Dataset d = hs::loadDatasetAuto(path);  // tab in the first line -> TSV, no header
    QVERIFY(d.examples.size() > 100);
    QCOMPARE(d.examples[0].input, std::string("goliath"));
    QCOMPARE(d.examples[0].outputs[0], std::string("giant"));
  }

  void csvQuotingAndHeader() {
    QTemporaryDir dir;
    const auto path =
        writeFile(dir, "p.csv", "input,output\n\"a, b\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",x\n\nplain,y\n");
    const hs::Dataset d = hs::loadDatasetAuto(path);
    QCOMPARE(d.examples.size(), size_t(3));
    QCOMPARE(d.examples[0].input, std::string("a, b"));
    QCOMPARE(d.examples[0].outputs[0], std::string("say \"hi\""));
    QCOMPARE(d.examples[1].input, std::string("two\nlines"));
    QCOMPARE(d.examples[2].input, std::string("plain"));
    // Forced "no header": the header row is data.
    hs::CsvOptions opt;
    opt.header = hs::CsvHeader::Absent;
    QCOMPARE(hs::loadPairsCsv(path, ',', opt).examples.size(), size_t(4));
  }

  void csvMalformed() {
    QTemporaryDir dir;
    const auto short_ = writeFile(dir, "s.csv", "a,b\nc\n");
    HS_EXPECT_ERROR(hs::loadPairsCsv(short_, ','), short_, "line 2", "expected at least 2");
    const auto open = writeFile(dir, "o.csv", "a,b\n\"c,d\n");
    HS_EXPECT_ERROR(hs::loadPairsCsv(open, ','), open, "line 2", "never closed");
    const auto emptyCell = writeFile(dir, "c.csv", "a,b\nc,\n");
    HS_EXPECT_ERROR(hs::loadPairsCsv(emptyCell, ','), emptyCell, "line 2", "empty output");
    HS_EXPECT_ERROR(hs::loadPairsCsv(writeFile(dir, "e.csv", ""), ','), "e.csv", "empty file");
    const auto unknown = writeFile(dir, "u.txt", "just words\n");
    HS_EXPECT_ERROR(hs::loadDatasetAuto(unknown), unknown, "cannot tell");
  }

  void toyExports() {
    hs::toy::ToyWorldConfig cfg;
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build(cfg);
    const auto fv = hs::toy::exportFvJson(w, "translate_a_b");
    const hs::Dataset d = hs::datasetFromToyExport(fv, "translate_a_b");
    QCOMPARE(d.examples.size(), fv.size());
    QCOMPARE(d.examples[0].input, fv[0]["input"].get<std::string>());
    QCOMPARE(d.source, std::string("toy:translate_a_b"));
    const hs::Dataset c =
        hs::datasetFromToyClassification(hs::toy::exportClassificationJson(w), "category_label");
    QVERIFY(c.classification);
    QCOMPARE(static_cast<int>(c.label_words.size()), cfg.categories);
    for (const auto& e : c.examples)
      QCOMPARE(e.outputs[0], c.label_words[static_cast<size_t>(e.label)]);
    HS_EXPECT_ERROR(hs::datasetFromToyExport(nlohmann::json::parse(R"([{"output": "x"}])"), "t"), "toy:t",
                    "item 0", "\"input\"");
  }

  void relabel() {
    QTemporaryDir dir;
    const hs::Dataset d = hs::loadSst2(writeFile(dir, "s.txt", "1 good\n0 bad\n"));
    const hs::Dataset r = hs::withLabelWords(d, {"bad", "good"});
    QCOMPARE(r.examples[0].outputs[0], std::string("good"));
    QCOMPARE(r.examples[1].outputs[0], std::string("bad"));
    HS_EXPECT_ERROR(hs::withLabelWords(d, {"x"}), "1 label words", "2 classes");
  }
};

QTEST_GUILESS_MAIN(TestTaskDatasets)
#include "test_datasets.moc"
