// Byte-level BPE against the real GPT-2 tokenizer files and llama.cpp's GPT-2 test vectors, through both
// loading paths (vocab.json + merges.txt, and a tokenizer.json built from them).
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "test_paths.h"
#include "tokenizer/bytelevel_bpe.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

using hs::test::ids;
using nlohmann::json;

namespace {

struct Vector {
  std::string text;
  std::vector<int> expected;
};

// test_vectors.inp: every string is followed by "\n__ggml_vocab_test__\n"; test_vectors.out: one line of
// space-separated ids per string. Splitting both on their separators yields 47 aligned entries, the last
// being the empty string after the final separator (which must encode to nothing).
std::vector<Vector> gpt2Vectors() {
  const std::string inp = hs::test::readAll(hs::test::sharedData("tokenizers/gpt2/test_vectors.inp"));
  const std::string out = hs::test::readAll(hs::test::sharedData("tokenizers/gpt2/test_vectors.out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int>> lines;
  std::istringstream lineStream(out);
  std::string line;
  while (std::getline(lineStream, line)) {
    std::vector<int> v;
    std::istringstream ls(line);
    int id;
    while (ls >> id)
      v.push_back(id);
    lines.push_back(v);
  }
  if (!out.empty() && out.back() == '\n') lines.emplace_back();  // the entry after the last newline
  std::vector<Vector> result;
  for (size_t i = 0; i < texts.size() && i < lines.size(); ++i)
    result.push_back({texts[i], lines[i]});
  if (texts.size() != lines.size()) result.clear();
  return result;
}

std::string gpt2Dir() {
  return hs::test::sharedData("tokenizers/gpt2");
}

// A Hugging Face tokenizer.json holding GPT-2's vocabulary and merges, with the given pre-tokenizer.
json gpt2TokenizerJson(const json& preTokenizer, bool mergesAsPairs) {
  const json vocab = json::parse(hs::test::readAll(gpt2Dir() + "/vocab.json"));
  json merges = json::array();
  std::istringstream in(hs::test::readAll(gpt2Dir() + "/merges.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ');
    if (mergesAsPairs)
      merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    else
      merges.push_back(line);
  }
  json root;
  root["version"] = "1.0";
  root["added_tokens"] = json::array({{{"id", 50256},
                                       {"content", "<|endoftext|>"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", true}}});
  root["normalizer"] = nullptr;
  root["pre_tokenizer"] = preTokenizer;
  root["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}};
  root["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}};
  root["model"] = {
      {"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", merges}};
  return root;
}

const json kGpt2PreTokenizer = {
    {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};

}  // namespace

class TestByteLevelBpe : public QObject {
  Q_OBJECT

 private:
  void checkAllVectors(const hs::Tokenizer& tok) {
    const auto vectors = gpt2Vectors();
    QCOMPARE(int(vectors.size()), 47);
    for (size_t i = 0; i < vectors.size(); ++i) {
      const auto& v = vectors[i];
      const std::vector<int> got = tok.encode(v.text);
      QVERIFY2(got == v.expected,
               qPrintable(QString("vector %1 \"%2\": got %3, expected %4")
                              .arg(i)
                              .arg(QString::fromStdString(v.text), ids(got), ids(v.expected))));
      QVERIFY2(tok.decode(got) == v.text, qPrintable(QString("vector %1 does not round-trip").arg(i)));
    }
  }

 private Q_SLOTS:
  void gpt2FilesMatchReferenceVectors() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/test_vectors.inp"));
    const auto tok = hs::loadTokenizer(gpt2Dir());
    QCOMPARE(QString::fromStdString(tok->kind()), QString("bpe-bytelevel"));
    checkAllVectors(*tok);
    // Loading through the vocab.json path (merges.txt found beside it) is the same tokenizer.
    const auto viaVocab = hs::loadTokenizer(gpt2Dir() + "/vocab.json");
    QCOMPARE(viaVocab->encode("Hello world"), (std::vector<int>{15496, 995}));
  }

  void gpt2Metadata() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/vocab.json"));
    const auto tok = hs::loadTokenizer(gpt2Dir());
    QCOMPARE(tok->vocabSize(), 50257);
    QCOMPARE(tok->bosId(), 50256);
    QCOMPARE(tok->eosId(), 50256);
    QVERIFY(!tok->addsBos());                              // GPT-2 adds nothing by default
    QCOMPARE(tok->idOf("\xC4\xA0the").value_or(-1), 262);  // "Ġthe"
    QCOMPARE(QString::fromStdString(tok->piece(262)), QString(" the"));
    QCOMPARE(QString::fromStdString(tok->piece(50256)), QString("<|endoftext|>"));
    QVERIFY(!tok->idOf("definitely not a piece").has_value());
    // BOS on request, and the special token written in the text is split out (never BPE'd).
    QCOMPARE(tok->encode("Hello", true), (std::vector<int>{50256, 15496}));
    QCOMPARE(tok->encode("Hello<|endoftext|> world"), (std::vector<int>{15496, 50256, 995}));
    QCOMPARE(tok->decode({15496, 50256, 995}), std::string("Hello<|endoftext|> world"));
    // "東" is not one GPT-2 token: its pieces hold partial UTF-8, displayed as "<0xNN>" bytes.
    const auto east = tok->encode("\xE6\x9D\xB1");
    QVERIFY(east.size() > 1);
    QVERIFY(tok->piece(east[0]).find("<0xE6>") != std::string::npos);
  }

  void roundTripsArbitraryUnicode() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/vocab.json"));
    const auto tok = hs::loadTokenizer(gpt2Dir());
    const std::vector<std::string> texts = {
        "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6"
        " family",  // ZWJ
        "flags \xF0\x9F\x87\xAF\xF0\x9F\x87\xB5\xF0\x9F\x87\xA9\xF0\x9F\x87\xAA and "
        "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
        "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 "
        "\xE4\xB8\xAD\xE6\x96\x87",
        "e\xCC\x81 n\xCC\x83 a\xCC\x8A\xCC\x81 Z\xCD\x91\xCD\x9B\xCC\x80",  // combining marks
        "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A \xE2\x80\x8F(rtl)",  // Hebrew,
                                                                                                // Arabic, RLM
        std::string("nul\0byte\0\0end", 14),
        "tabs\tand\r\nCRLF\n\n\n   trailing   ",
        "\xEF\xBB\xBF"
        "BOM, \xE2\x80\xAF narrow nbsp, \xC2\xA0nbsp",
        std::string(3000, 'a') + " " + std::string(500, ' ') + "end",
    };
    for (const std::string& s : texts) {
      const auto got = tok->encode(s);
      for (int id : got)
        QVERIFY(id >= 0 && id < tok->vocabSize());
      QVERIFY2(tok->decode(got) == s,
               qPrintable(QString("no round trip for \"%1\"").arg(QString::fromStdString(s))));
    }
    // The split regex works on Unicode letters: "Äpfel" is letters only, one pre-token, no space split.
    QCOMPARE(tok->encode(" caf\xC3\xA9"), tok->encode(" caf\xC3\xA9"));
  }

  void invalidUtf8IsLosslessInIdsAndRepairedInText() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/vocab.json"));
    const auto tok = hs::loadTokenizer(gpt2Dir());
    const auto* bl = dynamic_cast<const hs::ByteLevelBpeTokenizer*>(tok.get());
    QVERIFY(bl);
    const std::string fffd = "\xEF\xBF\xBD";
    // Expected text = Python's bytes.decode("utf-8", errors="replace") (one U+FFFD per maximal subpart).
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"abc\x80"
         "def",
         "abc" + fffd + "def"},
        {"\xFF\xFE", fffd + fffd},
        {"cut \xE6\x9D", "cut " + fffd},  // truncated 3-byte sequence: one replacement
        {"\xED\xA0\x80 surrogate", fffd + fffd + fffd + " surrogate"},
        {"\xC0\xAF overlong", fffd + fffd + " overlong"},
        {"ok \xF0\x9F\x98 then \xF0\x9F\x98\x81", "ok " + fffd + " then \xF0\x9F\x98\x81"},
    };
    for (const auto& [raw, repaired] : cases) {
      std::vector<int> got;
      try {
        got = tok->encode(raw);
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("encode threw on invalid UTF-8: %1").arg(e.what())));
      }
      std::string bytes;
      for (int id : got)
        bytes += bl->tokenBytes(id);
      QVERIFY2(bytes == raw, "token bytes must reproduce the input exactly");
      QCOMPARE(tok->decode(got), repaired);
    }
  }

  void tokenizerJsonMatchesVocabMerges() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/test_vectors.inp"));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("tokenizer.json").toStdString();
    hs::test::writeAll(path, gpt2TokenizerJson(kGpt2PreTokenizer, /*mergesAsPairs=*/false).dump());
    const auto tok = hs::loadTokenizer(dir.path().toStdString());  // folder -> tokenizer.json
    QCOMPARE(QString::fromStdString(tok->kind()), QString("bpe-bytelevel"));
    checkAllVectors(*tok);
    QVERIFY(!tok->addsBos());
    QCOMPARE(tok->encode("<|endoftext|>Hello<|endoftext|>"), (std::vector<int>{50256, 15496, 50256}));
    QCOMPARE(tok->encode(" <|endoftext|>"), (std::vector<int>{220, 50256}));
    QCOMPARE(tok->decode({50256, 15496, 50256}), std::string("<|endoftext|>Hello<|endoftext|>"));
  }

  // Llama-3 layout: Split(regex) then ByteLevel without its own regex, merges as [a, b] pairs, BOS from the
  // post-processor template, tokenizer_config.json able to switch it off.
  void splitRegexTemplateBosAndConfig() {
    HS_REQUIRE_FILE(hs::test::sharedData("tokenizers/gpt2/vocab.json"));
    const json pre = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern",
                        {{"Regex",
                          "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                          "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                          "\\s+(?!\\S)|\\s+"}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    json root = gpt2TokenizerJson(pre, /*mergesAsPairs=*/true);
    root["added_tokens"].push_back({{"id", 50257}, {"content", "<|custom|>"}, {"special", false}});
    root["post_processor"] = {
        {"type", "Sequence"},
        {"processors",
         json::array({{{"type", "ByteLevel"}},
                      {{"type", "TemplateProcessing"},
                       {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                               {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                       {"special_tokens",
                        {{"<|endoftext|>",
                          {{"id", "<|endoftext|>"}, {"ids", {50256}}, {"tokens", {"<|endoftext|>"}}}}}}}})}};
    QTemporaryDir dir;
    const std::string path = dir.filePath("tokenizer.json").toStdString();
    hs::test::writeAll(path, root.dump());
    const auto tok = hs::loadTokenizer(path);
    QVERIFY(tok->addsBos());
    QCOMPARE(tok->bosId(), 50256);
    QCOMPARE(tok->vocabSize(), 50258);
    // Digits are cut in groups of three: "333" "333" "3", where GPT-2's regex keeps "3333333" whole and BPE
    // makes "3333" "333" of it (test vector 42).
    const auto gpt2 = hs::loadTokenizer(gpt2Dir());
    QCOMPARE(gpt2->encode("3333333"), (std::vector<int>{24840, 20370}));
    QCOMPARE(tok->encode("3333333"), (std::vector<int>{50256, 20370, 20370, 18}));
    // The added non-special token is split out; decode drops only the BOS that encode added.
    const auto withCustom = tok->encode("a<|custom|>b");
    QCOMPARE(withCustom, (std::vector<int>{50256, gpt2->encode("a")[0], 50257, gpt2->encode("b")[0]}));
    QCOMPARE(tok->decode(withCustom), std::string("a<|custom|>b"));
    QCOMPARE(tok->encode("x", false), gpt2->encode("x"));

    // tokenizer_config.json beside it overrides the template.
    hs::test::writeAll(
        dir.filePath("tokenizer_config.json").toStdString(),
        R"({"add_bos_token": false, "bos_token": "<|endoftext|>", "eos_token": {"content": "<|endoftext|>"}})");
    const auto configured = hs::loadTokenizer(dir.path().toStdString());
    QVERIFY(!configured->addsBos());
    QCOMPARE(configured->encode("3333333"), (std::vector<int>{20370, 20370, 18}));
  }
};

QTEST_GUILESS_MAIN(TestByteLevelBpe)
#include "test_bytelevel_bpe.moc"
