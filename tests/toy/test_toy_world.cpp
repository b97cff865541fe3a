// The toy world: determinism, the token table, the structure the tasks rely on (translation bijection,
// antonym involution commuting with translation, category visible in the first syllable, successor cycle),
// and the exports (FV JSON, classification JSON, tokenizer.json).
#include <QtTest>

#include <map>
#include <set>
#include <sstream>

#include "tasks/toy/rng.h"
#include "tasks/toy/tasks.h"
#include "tasks/toy/world.h"
#include "toy_parse.h"
#include "util/error.h"

using namespace hs::toy;

namespace {

// FNV-1a over everything the shipped toy model depends on.
uint64_t fingerprint(const ToyWorld& w) {
  uint64_t h = 1469598103934665603ULL;
  auto eat = [&](uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  for (char ch : tokenizerJson(w))
    eat(static_cast<unsigned char>(ch));
  for (int c = 0; c < w.numConcepts(); ++c) {
    for (Lang l : {Lang::A, Lang::B}) {
      eat(1000 + w.word(l, c).size());
      for (int id : w.word(l, c))
        eat(static_cast<uint64_t>(id));
    }
    eat(static_cast<uint64_t>(w.category[c]));
    eat(static_cast<uint64_t>(w.antonym[c]));
    eat(static_cast<uint64_t>(w.successor[c]));
  }
  return h;
}

std::map<std::vector<int>, std::vector<int>> asMap(
    const std::vector<std::pair<std::vector<int>, std::vector<int>>>& pairs) {
  std::map<std::vector<int>, std::vector<int>> m;
  for (const auto& [x, y] : pairs)
    m[x] = y;
  return m;
}

std::vector<int> tokenise(const ToyWorld& w, const std::string& text) {
  std::vector<int> ids;
  std::istringstream is(text);
  std::string piece;
  while (is >> piece)
    ids.push_back(w.tokenId(piece));
  return ids;
}

}  // namespace

class TestToyWorld : public QObject {
  Q_OBJECT
 private:
  ToyWorld w_ = ToyWorld::build();

 private Q_SLOTS:
  void rngIsPortable() {
    // The C++ standard fixes the 10000th output of a default-seeded mt19937_64 ([rand.predef]).
    Rng rng(5489u);
    uint64_t x = 0;
    for (int i = 0; i < 10000; ++i)
      x = rng.next();
    QCOMPARE(x, 9981545732273789042ULL);
    // uniform(n) is unbiased and in range: 3 residues of 30000 draws each near 10000.
    Rng r2(7);
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 30000; ++i)
      ++counts[r2.uniform(3)];
    for (int c : counts)
      QVERIFY2(c > 9500 && c < 10500, qPrintable(QString::number(c)));
    // choose gives distinct values.
    std::vector<int> ch = r2.choose(10, 10);
    QCOMPARE(std::set<int>(ch.begin(), ch.end()).size(), size_t(10));
  }

  void sameSeedSameWorld() {
    const ToyWorld again = ToyWorld::build();
    QCOMPARE(fingerprint(again), fingerprint(w_));
    QVERIFY(again.tokens == w_.tokens);
    QVERIFY(again.words[0] == w_.words[0] && again.words[1] == w_.words[1]);
    QVERIFY(again.antonym == w_.antonym && again.successor == w_.successor);
    ToyWorldConfig other;
    other.seed = 99;
    const ToyWorld w2 = ToyWorld::build(other);
    QVERIFY(w2.words[0] != w_.words[0]);
    QVERIFY(w2.antonym != w_.antonym);
  }

  void defaultWorldIsPinned() {
    // The shipped toy model was trained on exactly this world: a change here means retraining it.
    const uint64_t fp = fingerprint(w_);
    qInfo("default world fingerprint: %llu", static_cast<unsigned long long>(fp));
    QCOMPARE(fp, 1843334358495719060ULL);
  }

  void tokenTable() {
    QCOMPARE(w_.tokenString(tok::kPad), std::string("<pad>"));
    QCOMPARE(w_.tokenString(tok::kBos), std::string("<bos>"));
    QCOMPARE(w_.tokenString(tok::kEos), std::string("<eos>"));
    QCOMPARE(w_.tokenString(tok::kColon), std::string(":"));
    QCOMPARE(w_.tokenString(tok::kArrow), std::string("\xE2\x86\x92"));
    QCOMPARE(w_.tokenString(tok::kSemi), std::string(";"));
    QCOMPARE(w_.tokenString(tok::kNl), std::string("<nl>"));
    QCOMPARE(w_.tokenString(tok::kComma), std::string(","));
    for (int d = 0; d < 10; ++d)
      QCOMPARE(w_.tokenString(tok::kDigit0 + d), std::to_string(d));
    QCOMPARE(w_.label_tokens.front(), tok::kFirstLabel);
    QCOMPARE(int(w_.label_tokens.size()), 24);
    QCOMPARE(int(w_.syllables[0].size() + w_.syllables[1].size()), 200);
    QCOMPARE(w_.vocabSize(), 10 + 10 + 24 + 200);
    std::set<std::string> seen;
    for (int id = 0; id < w_.vocabSize(); ++id) {
      const std::string& s = w_.tokenString(id);
      QVERIFY2(!s.empty() && s.find_first_of(" \t\n\r") == std::string::npos, s.c_str());
      QVERIFY2(seen.insert(s).second, s.c_str());
      QCOMPARE(w_.tokenId(s), id);
    }
    QVERIFY_THROWS_EXCEPTION(hs::Error, w_.tokenString(w_.vocabSize()));
    QVERIFY_THROWS_EXCEPTION(hs::Error, w_.tokenId("nope"));
    QVERIFY(QString::fromStdString(w_.describe()).contains("vocab 244"));
  }

  void wordsAreSyllablesOfTheirLanguage() {
    for (Lang l : {Lang::A, Lang::B}) {
      std::set<std::vector<int>> unique;
      for (int c = 0; c < w_.numConcepts(); ++c) {
        const auto& wd = w_.word(l, c);
        QVERIFY(wd.size() >= 1 && wd.size() <= 3);
        for (int id : wd)
          QCOMPARE(w_.languageOfToken(id), index(l));
        QVERIFY(unique.insert(wd).second);
        QCOMPARE(w_.conceptOf(l, wd), c);
      }
      QCOMPARE(int(unique.size()), 256);
    }
  }

  void syllableIdRangeHoldsExactlyTheSyllables() {
    const auto [first, end] = w_.syllableIdRange();
    int syllables = 0;
    for (int id = 0; id < w_.vocabSize(); ++id) {
      const bool inRange = id >= first && id < end;
      QCOMPARE(w_.languageOfToken(id) >= 0, inRange);
      syllables += inRange;
    }
    QCOMPARE(syllables, 2 * w_.config.syllables_per_language);
  }

  void translationIsABijection() {
    const auto ab = asMap(taskPairs(w_, "translate_a_b"));
    const auto ba = asMap(taskPairs(w_, "translate_b_a"));
    QCOMPARE(int(ab.size()), w_.numConcepts());  // inputs distinct: a function on all A words
    std::set<std::vector<int>> images;
    for (const auto& [a, b] : ab) {
      QCOMPARE(languageOfWordHelper(a), 0);
      QCOMPARE(languageOfWordHelper(b), 1);
      images.insert(b);
      // translate_b_a undoes translate_a_b.
      QVERIFY(ba.count(b));
      QVERIFY(ba.at(b) == a);
    }
    QCOMPARE(int(images.size()), w_.numConcepts());  // injective, onto all B words
  }

  void antonymIsAnInvolutionCommutingWithTranslation() {
    const auto ant_a = asMap(taskPairs(w_, "antonym_a"));
    const auto tr = asMap(taskPairs(w_, "translate_a_b"));
    QCOMPARE(int(ant_a.size()), w_.numConcepts());
    for (const auto& [a, ant] : ant_a) {
      QVERIFY(ant != a);            // no fixed points
      QVERIFY(ant_a.at(ant) == a);  // involution
      // ant_B(tr(a)) == tr(ant_A(a)), with ant_B read from the world's B words.
      const int cb = w_.conceptOf(Lang::B, tr.at(a));
      QVERIFY(cb >= 0);
      QVERIFY(w_.word(Lang::B, w_.antonym[cb]) == tr.at(ant));
    }
  }

  void successorIsOneCycle() {
    std::set<int> visited;
    int c = 0;
    for (int i = 0; i < w_.numConcepts(); ++i) {
      QVERIFY(visited.insert(c).second);
      c = w_.successor[c];
    }
    QCOMPARE(c, 0);
    QCOMPARE(int(visited.size()), w_.numConcepts());
    const auto succ = asMap(taskPairs(w_, "successor_a"));
    for (const auto& [a, s] : succ)
      QVERIFY(s != a);
  }

  void categoryIsAFunctionOfTheFirstSyllable() {
    for (Lang l : {Lang::A, Lang::B}) {
      std::map<int, int> by_first;
      std::set<int> firsts;
      std::vector<int> per_category(w_.numCategories(), 0);
      for (int c = 0; c < w_.numConcepts(); ++c) {
        const auto& wd = w_.word(l, c);
        const int k = w_.category[c];
        auto [it, inserted] = by_first.emplace(wd.front(), k);
        QVERIFY2(it->second == k, "two categories share a first syllable");
        QCOMPARE(w_.categoryOfFirstSyllable(l, wd.front()), k);
        firsts.insert(wd.front());
        ++per_category[k];
      }
      // A category's syllable never appears inside a word, so the category token is unambiguous.
      for (int c = 0; c < w_.numConcepts(); ++c) {
        const auto& wd = w_.word(l, c);
        for (size_t i = 1; i < wd.size(); ++i)
          QVERIFY(!firsts.count(wd[i]));
      }
      for (int n : per_category)
        QCOMPARE(n, w_.numConcepts() / w_.numCategories());
      // Other tokens own no category.
      QCOMPARE(w_.categoryOfFirstSyllable(l, tok::kColon), -1);
    }
    // Same category in both languages (through translation).
    for (const auto& [a, b] : taskPairs(w_, "translate_a_b"))
      QCOMPARE(w_.categoryOfFirstSyllable(Lang::A, a.front()),
               w_.categoryOfFirstSyllable(Lang::B, b.front()));
  }

  void fvExportsRoundTripThroughTheVocabulary() {
    for (const auto& info : toyTasks()) {
      const auto pairs = taskPairs(w_, info.name);
      const nlohmann::json j = exportFvJson(w_, info.name);
      QVERIFY(j.is_array());
      QCOMPARE(j.size(), pairs.size());
      for (size_t i = 0; i < pairs.size(); ++i) {
        // Splitting on spaces gives vocabulary entries that are exactly the task's tokens.
        QVERIFY(tokenise(w_, j[i]["input"].get<std::string>()) == pairs[i].first);
        QVERIFY(tokenise(w_, j[i]["output"].get<std::string>()) == pairs[i].second);
      }
    }
    for (const auto& [x, y] : taskPairs(w_, "copy_a"))
      QVERIFY(x == y);
    QVERIFY_THROWS_EXCEPTION(hs::Error, taskPairs(w_, "no_such_task"));
  }

  void classificationExportUsesCategoryOfFirstSyllable() {
    const auto pairs = taskPairs(w_, "category_label");
    QCOMPARE(int(pairs.size()), 2 * w_.numConcepts());
    const nlohmann::json cls = exportClassificationJson(w_);
    QCOMPARE(int(cls["label_words"].size()), w_.numCategories());
    QCOMPARE(cls["items"].size(), pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      const auto& x = pairs[i].first;
      const Lang l = static_cast<Lang>(w_.languageOfToken(x.front()));
      const int k = w_.categoryOfFirstSyllable(l, x.front());
      QCOMPARE(pairs[i].second, std::vector<int>{w_.label_tokens[k]});
      QCOMPARE(cls["items"][i]["label"].get<int>(), k);
      QCOMPARE(cls["label_words"][k].get<std::string>(), w_.tokenString(w_.label_tokens[k]));
    }
  }

  void tokenizerJsonIsHfWordLevel() {
    const nlohmann::json j = nlohmann::json::parse(tokenizerJson(w_));
    QCOMPARE(j["model"]["type"].get<std::string>(), std::string("WordLevel"));
    QCOMPARE(j["model"]["unk_token"].get<std::string>(), std::string("<pad>"));
    QCOMPARE(j["pre_tokenizer"]["type"].get<std::string>(), std::string("WhitespaceSplit"));
    QVERIFY(j["decoder"].is_null());
    const auto& vocab = j["model"]["vocab"];
    QCOMPARE(int(vocab.size()), w_.vocabSize());
    std::set<int> ids;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      QVERIFY2(it.key().find_first_of(" \t\n\r") == std::string::npos, it.key().c_str());
      QCOMPARE(w_.tokenString(it.value().get<int>()), it.key());
      ids.insert(it.value().get<int>());
    }
    QCOMPARE(int(ids.size()), w_.vocabSize());  // every id once: strings unique
    std::map<std::string, int> added;
    for (const auto& t : j["added_tokens"])
      added[t["content"].get<std::string>()] = t["id"].get<int>();
    QCOMPARE(added.at("<pad>"), 0);
    QCOMPARE(added.at("<bos>"), 1);
    QCOMPARE(added.at("<eos>"), 2);
  }

  void worldJsonAndTokenizerConfigDescribeTheWorld() {
    const nlohmann::json j = exportWorldJson(w_);
    QCOMPARE(j["format_version"].get<int>(), 1);
    QCOMPARE(int(j["concepts"].size()), w_.numConcepts());
    QCOMPARE(int(j["categories"].size()), w_.numCategories());
    for (int c = 0; c < w_.numConcepts(); ++c) {
      const auto& e = j["concepts"][c];
      QVERIFY(tokenise(w_, e["a"].get<std::string>()) == w_.word(Lang::A, c));
      QVERIFY(tokenise(w_, e["b"].get<std::string>()) == w_.word(Lang::B, c));
      QCOMPARE(e["antonym"].get<int>(), w_.antonym[c]);
      // The listed first syllables of the concept's category start its words.
      const auto& firsts = j["categories"][e["category"].get<int>()];
      bool found = false;
      for (const auto& f : firsts[0])
        found = found || f.get<std::string>() == w_.tokenString(w_.word(Lang::A, c)[0]);
      QVERIFY(found);
    }
    const nlohmann::json cfg = nlohmann::json::parse(tokenizerConfigJson(w_));
    QCOMPARE(cfg["bos_token"].get<std::string>(), std::string("<bos>"));
    QVERIFY(cfg["add_bos_token"].get<bool>());
  }

  void impossibleConfigsAreRejected() {
    ToyWorldConfig odd;
    odd.words_per_language = 255;
    QVERIFY_THROWS_EXCEPTION(hs::Error, ToyWorld::build(odd));
    ToyWorldConfig crowded;
    crowded.syllables_per_language = 20;
    crowded.first_syllables_per_category = 3;  // 24 first syllables > 20
    QVERIFY_THROWS_EXCEPTION(hs::Error, ToyWorld::build(crowded));
    ToyWorldConfig small;
    small.syllables_per_language = 40;
    small.words_per_language = 64;
    const ToyWorld w = ToyWorld::build(small);
    QCOMPARE(w.numConcepts(), 64);
    QCOMPARE(w.vocabSize(), 20 + 24 + 80);
  }

 private:
  int languageOfWordHelper(const std::vector<int>& word) const {
    return hs::toy::test::languageOfWord(w_, word);
  }
};

QTEST_GUILESS_MAIN(TestToyWorld)
#include "test_toy_world.moc"
