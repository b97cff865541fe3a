// HeadScope's tokenizers against the Hugging Face `tokenizers` library. hf_tokenizers.py trains one
// tokenizer.json per kind the model families use (byte-level BPE with the GPT-2, Llama-3 and Qwen2 regexes;
// SentencePiece-style BPE with byte fallback as Llama-2, Mistral and Gemma configure it; WordLevel), writes
// them as folders, and encodes a corpus of WikiText-2 lines and generated edge cases with the library; the
// real GPT-2 files of the shared data are encoded too. Every kind, loaded through loadTokenizer(), must give
// the library's ids on every string, with and without the special tokens its configuration adds, and
// decode back to the string wherever the library's own decode does.
#include <QtTest>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference_env.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

using nlohmann::json;

namespace {

QString idList(const std::vector<int>& v) {
  QStringList parts;
  for (int i : v)
    parts << QString::number(i);
  return "[" + parts.join(", ") + "]";
}

// The string as an ASCII JSON literal: control characters, combining marks (NFC against NFD) and invalid
// bytes stay visible in a failure message.
QString shown(const std::string& s) {
  return QString::fromStdString(json(s).dump(-1, ' ', true, json::error_handler_t::replace));
}

// "at index i: ours x, library y" for the first position where the two lists differ.
QString firstDifference(const std::vector<int>& ours, const std::vector<int>& theirs) {
  size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i])
    ++i;
  auto at = [&](const std::vector<int>& v) { return i < v.size() ? QString::number(v[i]) : QString("end"); };
  return QString("first difference at index %1: ours %2, library %3").arg(i).arg(at(ours), at(theirs));
}

}  // namespace

class TestHfTokenizers : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  json cases_;

 private Q_SLOTS:
  void initTestCase() {
    HS_REQUIRE_REFERENCE_ENV();
    const std::string gpt2 = hs::test::sharedData("tokenizers/gpt2");
    const std::string wikitext = hs::test::sharedData("corpora/wikitext-2");
    HS_REQUIRE_FILE(gpt2 + "/vocab.json");
    HS_REQUIRE_FILE(wikitext + "/test.txt");
    QVERIFY(dir_.isValid());
    const auto t0 = std::chrono::steady_clock::now();
    QString error;
    hs::test::runReferencePython(
        "hf_tokenizers.py", {dir_.path(), QString::fromStdString(gpt2), QString::fromStdString(wikitext)},
        &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    std::ifstream in((dir_.path() + "/cases.json").toStdString());
    cases_ = json::parse(in);
    qInfo("hf_tokenizers.py: %zu strings, %zu kinds in %.1f s", cases_.at("strings").size(),
          cases_.at("kinds").size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    QVERIFY2(cases_.at("strings").size() >= 2000, "the corpus has fewer than 2,000 strings");
  }

  void idsEqualTheLibrary_data() {
    QTest::addColumn<int>("kind");
    for (size_t k = 0; k < cases_.at("kinds").size(); ++k)
      QTest::newRow(cases_.at("kinds")[k].at("name").get<std::string>().c_str()) << static_cast<int>(k);
  }

  // Every string of the corpus: ids with the special tokens the configuration adds (the library's
  // add_special_tokens=True, HeadScope's encode(text)) and without (encode(text, false)). Wherever the
  // library's decode gives the string back from the ids without special tokens, HeadScope's must give it
  // back from encode(text): its decode() drops the BOS that encode() adds (tokenizer.h), and renders the
  // rest. A kind HeadScope does not support must be refused in one line naming the file and the construct.
  void idsEqualTheLibrary() {
    QFETCH(int, kind);
    const json& k = cases_.at("kinds")[static_cast<size_t>(kind)];
    const std::string path = k.at("path").get<std::string>();
    if (!k.at("expect_error").is_null()) {
      QString message;
      try {
        hs::loadTokenizer(path);
      } catch (const std::exception& e) {
        message = QString::fromUtf8(e.what());
      }
      QVERIFY2(!message.isEmpty(),
               qPrintable(QString("%1 loads, expected a refusal").arg(QString::fromStdString(path))));
      QVERIFY2(!message.contains('\n'), qPrintable("the refusal is not one line: " + message));
      for (const auto& fragment : k.at("expect_error"))
        QVERIFY2(message.contains(QString::fromStdString(fragment.get<std::string>())),
                 qPrintable(QString("refusal \"%1\" lacks \"%2\"")
                                .arg(message, QString::fromStdString(fragment.get<std::string>()))));
      qInfo("%s (%s): refused: %s", k.at("name").get<std::string>().c_str(),
            k.at("what").get<std::string>().c_str(), qPrintable(message));
      return;
    }
    std::unique_ptr<hs::Tokenizer> tok;
    try {
      tok = hs::loadTokenizer(path);
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("%1 does not load: %2").arg(QString::fromStdString(path), e.what())));
    }
    const json& strings = cases_.at("strings");
    const json& encodings = k.at("encodings");
    QCOMPARE(encodings.size(), strings.size());
    int compared = 0, roundTrips = 0, mismatches = 0;
    QString first;
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string s = strings[i].get<std::string>();
      const auto withSpecial = encodings[i][0].get<std::vector<int>>();
      const auto without = encodings[i][1].get<std::vector<int>>();
      const std::vector<int> oursWith = tok->encode(s);
      const std::vector<int> oursWithout = tok->encode(s, false);
      ++compared;
      QString problem;
      if (oursWith != withSpecial)
        problem = QString("with special tokens: ours %1, library %2 (%3)")
                      .arg(idList(oursWith), idList(withSpecial), firstDifference(oursWith, withSpecial));
      else if (oursWithout != without)
        problem = QString("without special tokens: ours %1, library %2 (%3)")
                      .arg(idList(oursWithout), idList(without), firstDifference(oursWithout, without));
      else if (!encodings[i][2].is_null()) {
        ++roundTrips;
        const std::string decoded = tok->decode(oursWith);
        if (decoded != s)
          problem = QString("decode(%1) is %2, the library's decode gives back the string")
                        .arg(idList(oursWith), shown(decoded));
      }
      if (problem.isEmpty()) continue;
      if (mismatches < 8)
        qWarning("%s string %zu %s: %s", k.at("name").get<std::string>().c_str(), i, qPrintable(shown(s)),
                 qPrintable(problem));
      if (mismatches++ == 0) first = QString("string %1 %2: %3").arg(i).arg(shown(s), problem);
    }
    qInfo("%s (%s): %d strings compared, %d decode round trips, %d differ",
          k.at("name").get<std::string>().c_str(), k.at("what").get<std::string>().c_str(), compared,
          roundTrips, mismatches);
    QVERIFY2(mismatches == 0, qPrintable(QString("%1 of %2 strings differ from the library; first: %3")
                                             .arg(mismatches)
                                             .arg(compared)
                                             .arg(first)));
  }
};

QTEST_GUILESS_MAIN(TestHfTokenizers)
#include "test_hf_tokenizers.moc"
