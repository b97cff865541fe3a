// Malformed and unsupported inputs give errors that name the file and say what is wrong.
#include <QTemporaryDir>
#include <QtTest>

#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

class TestTokenizerErrors : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string file(const char* name, const std::string& content) {
    const std::string path = dir_.filePath(name).toStdString();
    hs::test::writeAll(path, content);
    return path;
  }

 private Q_SLOTS:
  void truncatedTokBin() {
    const std::string src = hs::test::sharedData("models/stories260K/tok512.bin");
    HS_REQUIRE_FILE(src);
    const std::string data = hs::test::readAll(src);
    // Cut inside the bytes of a token record, and inside a score+length header.
    const std::string cutBytes = file("cut_bytes.bin", data.substr(0, data.size() - 1));
    HS_EXPECT_ERROR(hs::loadTokenizer(cutBytes), cutBytes, "truncated", "token 511");
    const std::string cutHeader = file("cut_header.bin", data.substr(0, 4 + 8 + 5 + 3));  // "<unk>" + 3 bytes
    HS_EXPECT_ERROR(hs::loadTokenizer(cutHeader), cutHeader, "truncated", "token 1");
    const std::string tiny = file("tiny.bin", std::string("\x07\x00", 2));
    HS_EXPECT_ERROR(hs::loadTokenizer(tiny), tiny, "4-byte header");
  }

  void unknownFileFormat() {
    const std::string text = file("notes.txt", "hello world, this is not a tokenizer at all\n");
    HS_EXPECT_ERROR(hs::loadTokenizer(text), text, "not a tokenizer", "max_token_length");
    const std::string missing = dir_.filePath("nope").toStdString();
    HS_EXPECT_ERROR(hs::loadTokenizer(missing), missing, "no such file");
    const std::string gguf = file("model.gguf", std::string("GGUF\x03\0\0\0", 8));
    HS_EXPECT_ERROR(hs::loadTokenizer(gguf), gguf, "GGUF", "tokenizerFromGguf");
    QTemporaryDir empty;
    HS_EXPECT_ERROR(hs::loadTokenizer(empty.path().toStdString()), empty.path().toStdString(),
                    "no tokenizer found");
  }

  void tokenizerJsonProblems() {
    const std::string notJson = file("tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
    HS_EXPECT_ERROR(hs::loadTokenizer(notJson), notJson, "malformed JSON");
    const std::string noVocab =
        file("novocab.json", R"({"version": "1.0", "model": {"type": "BPE", "merges": []}})");
    HS_EXPECT_ERROR(hs::loadTokenizer(noVocab), noVocab, "model.vocab");
    const std::string noModel = file("nomodel.json", R"({"version": "1.0", "added_tokens": []})");
    HS_EXPECT_ERROR(hs::loadTokenizer(noModel), noModel, "no \"model\"");
    const std::string unigram =
        file("unigram.json", R"({"version": "1.0", "model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
    HS_EXPECT_ERROR(hs::loadTokenizer(unigram), unigram, "unsupported model.type \"Unigram\"");
    const std::string wordpiece = file(
        "wordpiece.json", R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
          "merges": ["a b"]}, "pre_tokenizer": {"type": "BertPreTokenizer"}})");
    HS_EXPECT_ERROR(hs::loadTokenizer(wordpiece), wordpiece, "BertPreTokenizer");
    const std::string badMerge =
        file("badmerge.json", R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0, "b": 1},
          "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel"}})");
    HS_EXPECT_ERROR(hs::loadTokenizer(badMerge), badMerge, "merge 0", "\"ab\"");
    // (Plain literals here: moc misreads a raw string holding an unbalanced parenthesis.)
    const std::string badRegex = file(
        "badregex.json",
        "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
        " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\":"
        " {\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"use_regex\": "
        "false}]}}");
    HS_EXPECT_ERROR(hs::loadTokenizer(badRegex), "does not compile", "(unclosed");
  }

  void vocabJsonWithoutMerges() {
    QTemporaryDir only;
    const std::string vocab = only.filePath("vocab.json").toStdString();
    hs::test::writeAll(vocab, R"({"a": 0, "b": 1})");
    HS_EXPECT_ERROR(hs::loadTokenizer(vocab), vocab, "merges.txt");
    HS_EXPECT_ERROR(hs::loadTokenizer(only.path().toStdString()), "merges.txt");
    hs::test::writeAll(only.filePath("merges.txt").toStdString(), "#version: 0.2\na b c\n");
    HS_EXPECT_ERROR(hs::loadTokenizer(vocab), "merges.txt:2", "a b c");
  }

  void decodeIdsOutOfRange() {
    const std::string tokBin = hs::test::sharedData("models/stories260K/tok512.bin");
    HS_REQUIRE_FILE(tokBin);
    const auto tok = hs::loadTokenizer(tokBin);
    HS_EXPECT_ERROR(tok->decode({1, 512}), "token id 512", "vocab size 512");
    HS_EXPECT_ERROR(tok->decode({-1}), "token id -1", "vocab size 512");
    HS_EXPECT_ERROR(tok->piece(600), "token id 600", "vocab size 512");
    const std::string gpt2 = hs::test::sharedData("tokenizers/gpt2");
    HS_REQUIRE_FILE(gpt2 + "/vocab.json");
    const auto bpe = hs::loadTokenizer(gpt2);
    HS_EXPECT_ERROR(bpe->decode({15496, 50257}), "token id 50257", "vocab size 50257");
  }

  void ggufVocabProblems() {
    hs::GgufVocab v;
    v.source = "/models/x.gguf";
    v.model = "bert";
    v.tokens = {"a", "b"};
    v.scores = {0, 0};
    HS_EXPECT_ERROR(hs::tokenizerFromGguf(v), "/models/x.gguf", "tokenizer.ggml.model \"bert\"");
    v.model = "llama";
    v.scores = {0};
    HS_EXPECT_ERROR(hs::tokenizerFromGguf(v), "/models/x.gguf",
                    "tokenizer.ggml.scores has 1 entries, expected 2");
    v.scores = {0, 0};
    v.bos = 7;
    HS_EXPECT_ERROR(hs::tokenizerFromGguf(v), "bos_token_id 7", "vocab size 2");
    v.bos = -1;
    v.model = "gpt2";
    v.pre = "some-new-model";
    HS_EXPECT_ERROR(hs::tokenizerFromGguf(v), "tokenizer.ggml.pre \"some-new-model\"");
    v.tokens = {};
    HS_EXPECT_ERROR(hs::tokenizerFromGguf(v), "tokenizer.ggml.tokens is empty");
  }
};

QTEST_GUILESS_MAIN(TestTokenizerErrors)
#include "test_tokenizer_errors.moc"
