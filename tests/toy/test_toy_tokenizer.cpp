// The toy world's tokenizer.json (HF WordLevel + WhitespaceSplit) read back by HeadScope's own tokenizer
// library: exported task texts encode to exactly the world's token ids, with the BOS that
// tokenizer_config.json asks for, and decode back to the text.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "tasks/toy/tasks.h"
#include "tasks/toy/world.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

class TestToyTokenizer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void wordLevelRoundTrip() {
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build();
    QTemporaryDir dir;
    std::ofstream(dir.filePath("tokenizer.json").toStdString()) << hs::toy::tokenizerJson(w);
    std::ofstream(dir.filePath("tokenizer_config.json").toStdString()) << hs::toy::tokenizerConfigJson(w);
    const auto tok = hs::loadTokenizer(dir.path().toStdString());
    QCOMPARE(tok->kind(), std::string("wordlevel"));
    QCOMPARE(tok->vocabSize(), w.vocabSize());
    QCOMPARE(tok->bosId(), hs::toy::tok::kBos);
    QVERIFY(tok->addsBos());
    for (int id = 0; id < w.vocabSize(); ++id)
      QCOMPARE(tok->piece(id), w.tokenString(id));

    for (const std::string task : {"translate_a_b", "antonym_a", "successor_a"}) {
      const auto pairs = hs::toy::taskPairs(w, task);
      const auto fv = hs::toy::exportFvJson(w, task);
      QCOMPARE(fv.size(), pairs.size());
      for (size_t i = 0; i < pairs.size(); ++i) {
        const std::string input = fv[i]["input"].get<std::string>();
        std::vector<int> want = {hs::toy::tok::kBos};
        want.insert(want.end(), pairs[i].first.begin(), pairs[i].first.end());
        QCOMPARE(tok->encode(input), want);
        QCOMPARE(tok->encode(input, false), pairs[i].first);
        QCOMPARE(tok->decode(tok->encode(input)), input);
      }
    }
    // Separators and a whole prompt line.
    const std::string line = w.text(w.words[0][0]) + " → " + w.text(w.words[1][0]) + " <nl>";
    const auto ids = tok->encode(line, false);
    QCOMPARE(ids.back(), hs::toy::tok::kNl);
    QCOMPARE(tok->decode(ids), line);
  }

  void unknownWordIsAnErrorOrUnk() {
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build();
    QTemporaryDir dir;
    std::ofstream(dir.filePath("tokenizer.json").toStdString()) << hs::toy::tokenizerJson(w);
    const auto tok = hs::loadTokenizer(dir.filePath("tokenizer.json").toStdString());
    const auto ids = tok->encode("zzzz-not-a-token", false);
    // The toy tokenizer declares <pad> as unk_token.
    QCOMPARE(ids, std::vector<int>{hs::toy::tok::kPad});
    bool threw = false;
    try {
      tok->decode({w.vocabSize()});
    } catch (const hs::Error& e) {
      threw = std::string(e.what()).find("out of range") != std::string::npos;
    }
    QVERIFY(threw);
  }
};

QTEST_GUILESS_MAIN(TestToyTokenizer)
#include "test_toy_tokenizer.moc"
