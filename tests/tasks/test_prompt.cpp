// Prompts with exact positions, on the real GPT-2 and llama2.c tokenizers and on the toy WordLevel one.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>

#include "tasks/dataset.h"
#include "tasks/prompt.h"
#include "tasks/prompt_template.h"
#include "tasks/toy/tasks.h"
#include "tasks/toy/world.h"
#include "tasks_test_util.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

using hs::test::sharedData;

namespace {

std::vector<hs::Example> antonymExamples(size_t n) {
  const auto d = hs::loadFvJson(sharedData("datasets/function_vectors/abstractive/antonym.json"));
  return std::vector<hs::Example>(d.examples.begin(), d.examples.begin() + static_cast<long>(n));
}

// Every segment's span holds exactly its text: decoding the ids up to the end of the segment gives the
// concatenated segment texts so far (prefix decoding keeps a dummy-prefix space handled as the tokenizer
// does), and spans tile the prompt without gaps.
void checkSegmentsTile(const hs::Tokenizer& tok, const hs::Prompt& p) {
  std::string textSoFar;
  int pos = 0;
  for (const auto& seg : p.segments) {
    QCOMPARE(seg.span.begin, pos);
    pos = seg.span.end;
    textSoFar += seg.text;
    const std::vector<int> head(p.ids.begin(), p.ids.begin() + seg.span.end);
    QCOMPARE(tok.decode(head), textSoFar);
  }
  QCOMPARE(pos, p.length());
  QCOMPARE(textSoFar, p.text);
  QCOMPARE(p.pieces.size(), p.ids.size());
}

}  // namespace

class TestTaskPrompt : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void gpt2FvTemplate() {
    const std::string vocab = sharedData("tokenizers/gpt2/vocab.json");
    HS_REQUIRE_FILE(vocab);
    HS_REQUIRE_FILE(sharedData("datasets/function_vectors/abstractive/antonym.json"));
    const auto tok = hs::loadTokenizer(vocab);
    const auto ex = antonymExamples(6);
    const std::vector<hs::Example> demos(ex.begin(), ex.begin() + 5);
    const hs::Prompt p = hs::buildPrompt(*tok, hs::builtinTemplate("fv"), demos, ex[5]);
    QCOMPARE(p.n_bos, 0);  // GPT-2 adds no BOS
    QVERIFY(p.text.rfind("Q: flawed\nA: perfect\n\nQ: orthodox\nA: unorthodox\n\n", 0) == 0);
    QVERIFY(p.text.size() > 3 && p.text.substr(p.text.size() - 3) == "\nA:");
    checkSegmentsTile(*tok, p);
    QCOMPARE(p.demos.size(), size_t(5));
    for (size_t d = 0; d < demos.size(); ++d) {
      // The input and label carry the space the template puts before them, as whole-text BPE does.
      QCOMPARE(tok->decode(p.idsOf(p.demos[d].input)), " " + demos[d].input);
      QCOMPARE(tok->decode(p.idsOf(p.demos[d].label)), " " + demos[d].outputs[0]);
      QCOMPARE(p.idsOf(p.demos[d].label), tok->encode(" " + demos[d].outputs[0]));
      QCOMPARE(tok->decode(p.idsOf(p.demos[d].separator)), std::string("\n\n"));
      QVERIFY(p.demos[d].block.contains(p.demos[d].input.begin));
      QCOMPARE(p.demos[d].block.end, p.demos[d].separator.end);
    }
    QCOMPARE(tok->decode(p.idsOf(p.query_input)), " " + ex[5].input);
    // N is the final template token ":" of "A:", right before the answer.
    QCOMPARE(p.last, p.length() - 1);
    QCOMPARE(tok->decode({p.ids[static_cast<size_t>(p.last)]}), std::string(":"));
    QCOMPARE(p.answer_tokens, tok->encode(" " + ex[5].outputs[0]));
    QCOMPARE(p.answer_token, tok->encode(" " + ex[5].outputs[0]).front());
    QCOMPARE(p.answer, ex[5].outputs[0]);
    // Whole-text GPT-2 splits "\n\n" before "Q" into two "\n" tokens, the separator alone is one "\n\n"
    // token: the diagnostic must see that.
    QVERIFY(hs::tokenizationMismatches(*tok, p) > 0);
  }

  void gpt2HendelMatchesWholeText() {
    const std::string vocab = sharedData("tokenizers/gpt2/vocab.json");
    HS_REQUIRE_FILE(vocab);
    HS_REQUIRE_FILE(sharedData("datasets/function_vectors/abstractive/antonym.json"));
    const auto tok = hs::loadTokenizer(vocab);
    const auto ex = antonymExamples(4);
    const hs::Prompt p = hs::buildPrompt(*tok, hs::builtinTemplate("hendel"), {ex[0], ex[1], ex[2]}, ex[3]);
    QVERIFY(p.text.rfind("flawed->perfect\northodox->unorthodox\n", 0) == 0);
    checkSegmentsTile(*tok, p);
    QCOMPARE(hs::tokenizationMismatches(*tok, p), 0);
    QCOMPARE(tok->decode({p.ids[static_cast<size_t>(p.last)]}), std::string("->"));
    // No space before the output in this template: the answer is the first token of "y".
    QCOMPARE(p.answer_token, tok->encode(ex[3].outputs[0]).front());
  }

  void llama2cTokenizer() {
    const std::string path = sharedData("models/stories260K/tok512.bin");
    HS_REQUIRE_FILE(path);
    HS_REQUIRE_FILE(sharedData("datasets/function_vectors/abstractive/antonym.json"));
    const auto tok = hs::loadTokenizer(path);
    const hs::SegmentEncoder enc(*tok);
    QVERIFY(enc.dummyPrefix());  // llama2.c prepends a space to every encoded text
    const auto ex = antonymExamples(5);
    const hs::Prompt p =
        hs::buildPrompt(*tok, hs::builtinTemplate("fv"), {ex[0], ex[1], ex[2], ex[3]}, ex[4]);
    QCOMPARE(p.n_bos, 1);
    QCOMPARE(p.ids[0], tok->bosId());
    checkSegmentsTile(*tok, p);
    for (size_t d = 0; d < 4; ++d) {
      // Later segments carry no spurious dummy-prefix space: they decode to exactly their text.
      QCOMPARE(tok->decode(p.idsOf(p.demos[d].input)), " " + ex[d].input);
      QCOMPARE(tok->decode(p.idsOf(p.demos[d].label)), " " + ex[d].outputs[0]);
    }
    // The answer token is the model's token for " y" after other text: with the dummy prefix that is what
    // encode("y") starts with.
    QCOMPARE(p.answer_tokens, tok->encode(ex[4].outputs[0], false));
    QCOMPARE(tok->decode({p.ids[static_cast<size_t>(p.last)]}), std::string(":"));
    // This small vocabulary has no merge across the segment boundaries of the FV template.
    QCOMPARE(hs::tokenizationMismatches(*tok, p), 0);
    // BOS can be switched off explicitly.
    hs::PromptOptions noBos;
    noBos.add_bos = false;
    QCOMPARE(hs::buildPrompt(*tok, hs::builtinTemplate("fv"), {ex[0]}, ex[4], noBos).n_bos, 0);
  }

  void toyWordLevel() {
    const hs::toy::ToyWorld w = hs::toy::ToyWorld::build({});
    QTemporaryDir dir;
    std::ofstream(dir.filePath("tokenizer.json").toStdString()) << hs::toy::tokenizerJson(w);
    std::ofstream(dir.filePath("tokenizer_config.json").toStdString()) << hs::toy::tokenizerConfigJson(w);
    const auto tok = hs::loadTokenizer(dir.path().toStdString());
    const hs::Dataset d =
        hs::datasetFromToyExport(hs::toy::exportFvJson(w, "translate_a_b"), "translate_a_b");
    const std::vector<hs::Example> demos(d.examples.begin(), d.examples.begin() + 3);
    const hs::Prompt p = hs::buildPrompt(*tok, hs::builtinTemplate("toy-fn"), demos, d.examples[3]);
    // The toy episode format: <bos> x → f(x) <nl> ... q →
    QCOMPARE(p.ids[0], hs::toy::tok::kBos);
    QCOMPARE(p.ids[static_cast<size_t>(p.last)], hs::toy::tok::kArrow);
    const auto pairs = hs::toy::taskPairs(w, "translate_a_b");
    for (size_t i = 0; i < 3; ++i) {
      QCOMPARE(p.idsOf(p.demos[i].input), pairs[i].first);
      QCOMPARE(p.idsOf(p.demos[i].label), pairs[i].second);
      QCOMPARE(p.idsOf(p.demos[i].separator), std::vector<int>{hs::toy::tok::kNl});
    }
    QCOMPARE(p.idsOf(p.query_input), pairs[3].first);
    QCOMPARE(p.answer_tokens, pairs[3].second);
    std::vector<int> expected = {hs::toy::tok::kBos};
    for (size_t i = 0; i < 3; ++i) {
      expected.insert(expected.end(), pairs[i].first.begin(), pairs[i].first.end());
      expected.push_back(hs::toy::tok::kArrow);
      expected.insert(expected.end(), pairs[i].second.begin(), pairs[i].second.end());
      expected.push_back(hs::toy::tok::kNl);
    }
    expected.insert(expected.end(), pairs[3].first.begin(), pairs[3].first.end());
    expected.push_back(hs::toy::tok::kArrow);
    QCOMPARE(p.ids, expected);
    QCOMPARE(hs::tokenizationMismatches(*tok, p), 0);
  }

  void zeroShotAndBatch() {
    const std::string vocab = sharedData("tokenizers/gpt2/vocab.json");
    HS_REQUIRE_FILE(vocab);
    const auto tok = hs::loadTokenizer(vocab);
    const hs::Example a{"hot", {"cold"}, -1}, b{"up", {"down"}, -1},
        c{"incandescent light", {"darkness"}, -1};
    const hs::Prompt z = hs::zeroShotPrompt(*tok, hs::builtinTemplate("fv"), c);
    QCOMPARE(z.text, std::string("Q: incandescent light\nA:"));
    QVERIFY(z.demos.empty());
    const hs::Prompt k = hs::buildPrompt(*tok, hs::builtinTemplate("fv"), {a, b}, c);
    const hs::PromptBatch batch = hs::batchPrompts({z, k}, 50256);
    QCOMPARE(batch.size(), 2);
    QCOMPARE(batch.length, k.length());
    QCOMPARE(batch.pad, (std::vector<int>{k.length() - z.length(), 0}));
    for (int r = 0; r < 2; ++r) {
      const auto& row = batch.ids[static_cast<size_t>(r)];
      const auto& mask = batch.attention_mask[static_cast<size_t>(r)];
      QCOMPARE(static_cast<int>(row.size()), batch.length);
      QCOMPARE(static_cast<int>(std::count(mask.begin(), mask.end(), 0)), batch.pad[static_cast<size_t>(r)]);
      QCOMPARE(batch.last[static_cast<size_t>(r)], batch.length - 1);
      QCOMPARE(batch.answer_token[static_cast<size_t>(r)], tok->encode(" darkness").front());
    }
    // Shifted spans still point at the same tokens.
    const hs::Prompt& zs = batch.prompts[0];
    QCOMPARE(zs.idsOf(zs.query_input), z.idsOf(z.query_input));
    QCOMPARE(zs.query_input.begin, z.query_input.begin + batch.pad[0]);
    QCOMPARE(batch.ids[0][0], 50256);
    const hs::Prompt& ks = batch.prompts[1];
    QCOMPARE(ks.idsOf(ks.demos[1].label), k.idsOf(k.demos[1].label));
  }

  void templates() {
    for (const auto& id : hs::builtinTemplateIds()) {
      const hs::PromptTemplate t = hs::builtinTemplate(id);
      QCOMPARE(t.id, id);
      QVERIFY(hs::templateFromJson(hs::templateToJson(t)) == t);
    }
    const hs::PromptTemplate fv = hs::builtinTemplate("fv");
    QCOMPARE(fv.input_prefix + "x" + fv.input_suffix + fv.output_prefix + "y" + fv.example_separator,
             std::string("Q: x\nA: y\n\n"));
    const hs::PromptTemplate cls = hs::builtinTemplate("classification");
    QCOMPARE(cls.input_prefix + "x" + cls.input_suffix + cls.output_prefix + "y" + cls.example_separator,
             std::string("Review: x\nSentiment: y\n\n"));
    HS_EXPECT_ERROR(hs::builtinTemplate("nope"), "\"nope\"", "fv");
    auto j = hs::templateToJson(fv);
    j["extra"] = "x";
    HS_EXPECT_ERROR(hs::templateFromJson(j), "unknown key \"extra\"");
    j = hs::templateToJson(fv);
    j.erase("output_prefix");
    HS_EXPECT_ERROR(hs::templateFromJson(j), "missing key \"output_prefix\"");
    j = hs::templateToJson(fv);
    j["prefix"] = 3;
    HS_EXPECT_ERROR(hs::templateFromJson(j), "\"prefix\"", "expected a string");
  }
};

QTEST_GUILESS_MAIN(TestTaskPrompt)
#include "test_prompt.moc"
