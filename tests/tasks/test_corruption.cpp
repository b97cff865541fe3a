// Corruptions keep the prompt's structure, change what they claim to change, and are seeded.
#include <QtTest>

#include <algorithm>
#include <set>

#include "tasks/corruption.h"
#include "tasks/dataset.h"
#include "tasks/prompt.h"
#include "tasks/prompt_template.h"
#include "tasks_test_util.h"
#include "test_paths.h"

using hs::test::sharedData;

namespace {

std::vector<hs::Example> distinctDemos() {
  std::vector<hs::Example> d;
  const char* pairs[][2] = {{"hot", "cold"}, {"up", "down"},   {"big", "small"}, {"fast", "slow"},
                            {"wet", "dry"},  {"old", "young"}, {"high", "low"},  {"light", "dark"}};
  for (const auto& p : pairs)
    d.push_back(hs::Example{p[0], {p[1]}, -1});
  return d;
}

std::multiset<std::string> labels(const std::vector<hs::Example>& d) {
  std::multiset<std::string> s;
  for (const auto& e : d)
    s.insert(e.outputs[0]);
  return s;
}

}  // namespace

class TestTaskCorruption : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void shuffledLabelsHaveNoFixedPoints() {
    const auto demos = distinctDemos();
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const auto s = hs::shuffleLabels(demos, seed);
      QCOMPARE(labels(s), labels(demos));  // a permutation of the same labels
      for (size_t i = 0; i < demos.size(); ++i) {
        QCOMPARE(s[i].input, demos[i].input);             // inputs untouched
        QVERIFY(s[i].outputs[0] != demos[i].outputs[0]);  // no demo keeps its own label
      }
    }
    QCOMPARE(hs::shuffleLabels(demos, 5)[0].outputs, hs::shuffleLabels(demos, 5)[0].outputs);
    bool differs = false;
    for (uint64_t seed = 1; seed < 5 && !differs; ++seed)
      for (size_t i = 0; i < demos.size(); ++i)
        differs |= hs::shuffleLabels(demos, 0)[i].outputs != hs::shuffleLabels(demos, seed)[i].outputs;
    QVERIFY(differs);
  }

  void shuffledClassificationLabelsMinimiseFixedPoints() {
    // 5 positive, 3 negative: at least 2 * 5 - 8 = 2 demos must keep "positive"; no more may.
    std::vector<hs::Example> demos;
    for (int i = 0; i < 8; ++i)
      demos.push_back(hs::Example{"s" + std::to_string(i), {i < 5 ? "positive" : "negative"}, i < 5 ? 1 : 0});
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const auto s = hs::shuffleLabels(demos, seed);
      int fixed = 0;
      for (size_t i = 0; i < demos.size(); ++i) {
        fixed += s[i].outputs[0] == demos[i].outputs[0];
        QCOMPARE(s[i].outputs[0], std::string(s[i].label == 1 ? "positive" : "negative"));  // label follows
      }
      QCOMPARE(fixed, 2);
    }
  }

  void shuffledInputs() {
    const auto demos = distinctDemos();
    const auto s = hs::shuffleInputs(demos, 3);
    std::multiset<std::string> in, out;
    for (size_t i = 0; i < demos.size(); ++i) {
      in.insert(demos[i].input);
      out.insert(s[i].input);
      QVERIFY(s[i].input != demos[i].input);
      QCOMPARE(s[i].outputs, demos[i].outputs);
    }
    QCOMPARE(in, out);
  }

  void relabelings() {
    std::vector<hs::Example> demos = {{"a", {"positive"}, 1}, {"b", {"negative"}, 0}, {"c", {"positive"}, 1}};
    const hs::Example query{"d", {"negative"}, 0};
    const auto n = hs::numberLabels(demos, query);
    QCOMPARE(n.demos[0].outputs[0], std::string("1"));
    QCOMPARE(n.demos[1].outputs[0], std::string("2"));
    QCOMPARE(n.demos[2].outputs[0], std::string("1"));  // consistent mapping
    QCOMPARE(n.query.outputs[0], std::string("2"));
    QCOMPARE(n.demos[0].input, std::string("a"));
    const std::vector<std::string> words = {"apple", "river", "stone", "cloud"};
    const auto r = hs::randomWordLabels(demos, query, words, 9);
    QVERIFY(r.demos[0].outputs[0] != r.demos[1].outputs[0]);
    QCOMPARE(r.demos[0].outputs[0], r.demos[2].outputs[0]);
    QCOMPARE(r.query.outputs[0], r.demos[1].outputs[0]);
    QVERIFY(std::find(words.begin(), words.end(), r.demos[0].outputs[0]) != words.end());
    QCOMPARE(hs::randomWordLabels(demos, query, words, 9).mapping, r.mapping);
    HS_EXPECT_ERROR(hs::randomWordLabels(demos, query, {"one"}, 0), "2 distinct labels", "1 distinct words");
  }

  void garbledInputsKeepPositions() {
    const std::string vocab = sharedData("tokenizers/gpt2/vocab.json");
    HS_REQUIRE_FILE(vocab);
    const auto tok = hs::loadTokenizer(vocab);
    const auto demos = distinctDemos();
    const hs::Prompt p = hs::buildPrompt(*tok, hs::builtinTemplate("fv"), demos, {"tall", {"short"}, -1});
    const hs::TokenRange range{256, 50000};
    const hs::Prompt g = hs::garbleDemoInputs(*tok, p, range, 4);
    QCOMPARE(g.length(), p.length());
    QCOMPARE(g.last, p.last);
    QCOMPARE(g.answer_token, p.answer_token);
    int changed = 0;
    for (int pos = 0; pos < p.length(); ++pos) {
      bool inInput = false;
      for (const auto& d : p.demos)
        inInput |= d.input.contains(pos);
      const int a = p.ids[static_cast<size_t>(pos)], b = g.ids[static_cast<size_t>(pos)];
      if (!inInput) {
        QCOMPARE(b, a);  // template, labels, query untouched
      } else {
        QVERIFY(b >= range.lo && b < range.hi);
        changed += a != b;
        QCOMPARE(g.pieces[static_cast<size_t>(pos)], tok->piece(b));
      }
    }
    QVERIFY(changed >= 6);
    QCOMPARE(hs::garbleDemoInputs(*tok, p, range, 4).ids, g.ids);
    QVERIFY(hs::garbleDemoInputs(*tok, p, range, 5).ids != g.ids);
  }

  void randomTokenRepeats() {
    const auto s = hs::randomTokenRepeat(10, 2, {100, 500}, 1, 7);
    QCOMPARE(s.ids.size(), size_t(21));
    QCOMPARE(s.ids[0], 1);
    QCOMPARE(s.n_bos, 1);
    QCOMPARE(s.copies.size(), size_t(2));
    const std::vector<int> first(s.ids.begin() + s.copies[0].begin, s.ids.begin() + s.copies[0].end);
    const std::vector<int> second(s.ids.begin() + s.copies[1].begin, s.ids.begin() + s.copies[1].end);
    QCOMPARE(first, second);
    QCOMPARE(std::set<int>(first.begin(), first.end()).size(), size_t(10));  // distinct
    for (int t : first)
      QVERIFY(t >= 100 && t < 500);
    QCOMPARE(hs::randomTokenRepeat(10, 2, {100, 500}, 1, 7).ids, s.ids);
    QVERIFY(hs::randomTokenRepeat(10, 2, {100, 500}, 1, 8).ids != s.ids);
    HS_EXPECT_ERROR(hs::randomTokenRepeat(10, 2, {0, 5}, -1, 0), "fewer than 10");
  }

  void conceptRepeats() {
    const std::string vocab = sharedData("tokenizers/gpt2/vocab.json");
    // Person names: mostly 2-4 GPT-2 tokens each (common English words are single tokens).
    const std::string data = sharedData("datasets/function_vectors/abstractive/person-occupation.json");
    HS_REQUIRE_FILE(vocab);
    HS_REQUIRE_FILE(data);
    const auto tok = hs::loadTokenizer(vocab);
    std::vector<std::string> candidates;
    for (const auto& e : hs::loadFvJson(data).examples)
      candidates.push_back(e.input);
    const auto words = hs::multiTokenWords(*tok, candidates, 2, 5);
    qInfo("%zu of %zu person names are 2-5 GPT-2 tokens", words.size(), candidates.size());
    QVERIFY(words.size() > 50);
    QVERIFY(words.size() < candidates.size());  // single-token words were dropped
    for (size_t i = 0; i < 20; ++i) {
      const size_t n = tok->encode(" " + words[i]).size();
      QVERIFY(n >= 2 && n <= 5);
    }
    const auto c = hs::conceptRepeat(*tok, words, 6, 2, 3);
    QCOMPARE(c.words.size(), size_t(6));
    QCOMPARE(c.word_spans.size(), size_t(2));
    for (size_t i = 0; i < 6; ++i) {
      for (size_t r = 0; r < 2; ++r) {
        const hs::Span s = c.word_spans[r][i];
        QVERIFY(s.size() >= 2);
        QCOMPARE(tok->decode(std::vector<int>(c.ids.begin() + s.begin, c.ids.begin() + s.end)),
                 " " + c.words[i]);
      }
      QCOMPARE(c.word_spans[1][i].begin - c.word_spans[0][i].begin, c.copies[0].size());
    }
    QCOMPARE(hs::conceptRepeat(*tok, words, 6, 2, 3).words, c.words);
  }
};

QTEST_GUILESS_MAIN(TestTaskCorruption)
#include "test_corruption.moc"
