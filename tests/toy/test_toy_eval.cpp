// Evaluation prompts: each answer checked against an oracle computed from the prompt tokens and the world
// (induction continuation, the listed word, the translation, the demonstrated label, f(query)); every label
// shown when shots >= labels; label mappings vary between prompts; prompts are reproducible from their seed.
#include <QtTest>

#include <map>
#include <set>

#include "tasks/toy/eval_prompts.h"
#include "tasks/toy/tasks.h"
#include "toy_parse.h"
#include "util/error.h"

using namespace hs::toy;
using hs::toy::test::splitOn;

class TestToyEval : public QObject {
  Q_OBJECT
 private:
  ToyWorld w_ = ToyWorld::build();
  static constexpr int kPrompts = 300;

 private Q_SLOTS:
  void promptsAreReproducibleFromTheirSeed() {
    const EvalPrompt a = iclClsPrompt(w_, evalSeed(1, 4), 8);
    const EvalPrompt b = iclClsPrompt(w_, evalSeed(1, 4), 8);
    const EvalPrompt c = iclClsPrompt(w_, evalSeed(1, 5), 8);
    QVERIFY(a.tokens == b.tokens && a.answer == b.answer && a.label_set == b.label_set);
    QVERIFY(a.tokens != c.tokens);
    QVERIFY(inductionPrompt(w_, 9).tokens == inductionPrompt(w_, 9).tokens);
    QVERIFY(functionPrompt(w_, 9, "antonym_a", 3).tokens != functionPrompt(w_, 10, "antonym_a", 3).tokens);
  }

  void inductionAnswerContinuesTheEarlierOccurrence() {
    for (int i = 0; i < kPrompts; ++i) {
      const EvalPrompt p = inductionPrompt(w_, evalSeed(2, i));
      QCOMPARE(p.kind, std::string("induction"));
      QCOMPARE(p.tokens[0], tok::kBos);
      QCOMPARE(int(p.answer.size()), 1);
      // Oracle: find the earlier occurrence of the last token, answer = the token after it.
      const int last = p.tokens.back();
      size_t at = 0;
      for (size_t q = 1; q + 1 < p.tokens.size(); ++q)
        if (p.tokens[q] == last) at = q;
      QVERIFY(at > 0);
      QCOMPARE(p.answer[0], p.tokens[at + 1]);
      QVERIFY(p.tokens.size() > 1 + 16 + 0 && p.tokens.size() < 1 + 32);
      for (int id : p.tokens)
        QVERIFY(id < w_.vocabSize());
    }
  }

  void conceptCopyAnswerIsTheNextListedMultiTokenWord() {
    for (int i = 0; i < kPrompts; ++i) {
      const EvalPrompt p = conceptCopyPrompt(w_, evalSeed(3, i));
      const auto semi = std::find(p.tokens.begin(), p.tokens.end(), tok::kSemi);
      QVERIFY(semi != p.tokens.end());
      const size_t s = static_cast<size_t>(semi - p.tokens.begin());
      const auto listed = splitOn(p.tokens, 1, s, tok::kComma);
      auto copied = splitOn(p.tokens, s + 1, p.tokens.size(), tok::kComma);
      QCOMPARE(p.tokens.back(), tok::kComma);  // the copy stops right after a comma
      copied.pop_back();                       // the empty piece after that comma
      QVERIFY(copied.size() >= 1 && copied.size() < listed.size());
      for (size_t k = 0; k < copied.size(); ++k)
        QVERIFY(copied[k] == listed[k]);
      QVERIFY(p.answer == listed[copied.size()]);
      QVERIFY(p.answer.size() >= 2);
    }
  }

  void translationAnswerIsTheTranslation() {
    for (Lang from : {Lang::A, Lang::B}) {
      const Lang to = from == Lang::A ? Lang::B : Lang::A;
      int first_word = 0;
      for (int i = 0; i < kPrompts; ++i) {
        const EvalPrompt p = translationPrompt(w_, evalSeed(4, i), from);
        const auto arrow = std::find(p.tokens.begin(), p.tokens.end(), tok::kArrow);
        QVERIFY(arrow != p.tokens.end());
        const size_t s = static_cast<size_t>(arrow - p.tokens.begin());
        const auto listed = splitOn(p.tokens, 1, s, tok::kComma);
        const size_t m =
            s + 1 == p.tokens.size() ? 0 : splitOn(p.tokens, s + 1, p.tokens.size(), tok::kComma).size() - 1;
        first_word += m == 0;
        QVERIFY(m < listed.size());
        const int c = w_.conceptOf(from, listed[m]);
        QVERIFY(c >= 0);
        QVERIFY(p.answer == w_.word(to, c));
      }
      QVERIFY(first_word > 0);
    }
  }

  void clsPromptsShowEveryLabelAndAgreeWithTheirDemos() {
    std::map<int, std::set<int>> labels_of_category;
    for (int shots = 0; shots <= 12; ++shots) {
      for (int i = 0; i < kPrompts / 3; ++i) {
        const EvalPrompt p = iclClsPrompt(w_, evalSeed(5 + shots, i), shots);
        QCOMPARE(p.kind, std::string("icl_cls"));
        QVERIFY(p.label_set.size() >= 2 && p.label_set.size() <= 4);
        QCOMPARE(std::set<int>(p.label_set.begin(), p.label_set.end()).size(), p.label_set.size());
        for (int l : p.label_set)
          QVERIFY(hs::toy::test::isLabel(w_, l));
        QCOMPARE(int(p.answer.size()), 1);
        QVERIFY(std::count(p.label_set.begin(), p.label_set.end(), p.answer[0]) == 1);
        QCOMPARE(p.tokens.back(), tok::kColon);
        // Parse demos "x : l" and the query "q :".
        auto items = splitOn(p.tokens, 1, p.tokens.size(), tok::kNl);
        QCOMPARE(int(items.size()), shots + 1);
        std::map<int, int> shown;  // category -> label
        std::set<int> shown_labels;
        std::set<std::vector<int>> demo_words;
        Lang lang = Lang::A;
        for (int d = 0; d < shots; ++d) {
          auto& it = items[static_cast<size_t>(d)];
          QVERIFY(it.size() >= 3 && it[it.size() - 2] == tok::kColon);
          const int label = it.back();
          const std::vector<int> word(it.begin(), it.end() - 2);
          lang = static_cast<Lang>(hs::toy::test::languageOfWord(w_, word));
          const int k = hs::toy::test::categoryOfWord(w_, lang, word);
          QVERIFY(k >= 0);
          QVERIFY(!shown.count(k) || shown[k] == label);
          shown[k] = label;
          shown_labels.insert(label);
          demo_words.insert(word);
          labels_of_category[k].insert(label);
        }
        if (shots >= static_cast<int>(p.label_set.size()))
          QCOMPARE(shown_labels, std::set<int>(p.label_set.begin(), p.label_set.end()));
        // The query: a fresh word whose category, when demonstrated, fixes the answer.
        std::vector<int> query = items.back();
        query.pop_back();  // ":"
        QVERIFY(!demo_words.count(query));
        const int ql = hs::toy::test::languageOfWord(w_, query);
        QVERIFY(ql >= 0);
        if (shots > 0) QCOMPARE(ql, index(lang));
        const int qk = hs::toy::test::categoryOfWord(w_, static_cast<Lang>(ql), query);
        QVERIFY(qk >= 0);
        if (shown.count(qk)) QCOMPARE(p.answer[0], shown[qk]);
        if (shots >= static_cast<int>(p.label_set.size())) QVERIFY(shown.count(qk));
      }
    }
    // The same category is named by different label words in different prompts.
    for (const auto& [k, labels] : labels_of_category)
      QVERIFY(labels.size() >= 5);
  }

  void functionAnswerIsTheTaskApplied() {
    for (const std::string& task : wordTaskNames()) {
      const auto& info = taskInfo(task);
      for (int shots : {0, 1, 5, 10}) {
        for (int i = 0; i < 40; ++i) {
          const EvalPrompt p = functionPrompt(w_, evalSeed(6, i), task, shots);
          QCOMPARE(p.kind, "function:" + task);
          QCOMPARE(p.tokens.back(), tok::kArrow);
          const auto items = splitOn(p.tokens, 1, p.tokens.size(), tok::kNl);
          QCOMPARE(int(items.size()), shots + 1);
          std::set<int> concepts;
          for (int d = 0; d < shots; ++d) {
            const auto xy =
                splitOn(items[static_cast<size_t>(d)], 0, items[static_cast<size_t>(d)].size(), tok::kArrow);
            QCOMPARE(int(xy.size()), 2);
            const int c = w_.conceptOf(info.input_lang, xy[0]);
            QVERIFY(c >= 0);
            QVERIFY(wordTaskPair(w_, task, c).second == xy[1]);
            concepts.insert(c);
          }
          std::vector<int> q = items.back();
          q.pop_back();  // "→"
          const int qc = w_.conceptOf(info.input_lang, q);
          QVERIFY(qc >= 0 && !concepts.count(qc));
          QVERIFY(p.answer == wordTaskPair(w_, task, qc).second);
        }
      }
    }
    QVERIFY_THROWS_EXCEPTION(hs::Error, functionPrompt(w_, 1, "category_label", 2));
  }

  void formatDescriptionsExist() {
    for (const char* k :
         {"induction", "concept_copy", "translation", "icl_cls", "function", "function:copy_a"})
      QVERIFY(formatDescription(k).size() > 40);
    QVERIFY_THROWS_EXCEPTION(hs::Error, formatDescription("bogus"));
  }
};

QTEST_GUILESS_MAIN(TestToyEval)
#include "test_toy_eval.moc"
