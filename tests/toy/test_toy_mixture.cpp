// The training mixture: a deterministic, seekable stream; fixed-length samples with valid ids; and, parsed
// back from the tokens alone, episodes of the right format whose loss masks cover exactly the intended
// positions (repeats, copied/translated lists, labels, function outputs).
#include <QtTest>

#include <map>
#include <set>

#include "tasks/toy/curriculum.h"
#include "tasks/toy/mixture.h"
#include "tasks/toy/tasks.h"
#include "toy_parse.h"
#include "util/error.h"

using namespace hs::toy;
using hs::toy::test::splitOn;

namespace {

struct Span {
  size_t begin, end;  // one episode [begin, end) inside a sample, begin at its <bos>
};

std::vector<Span> episodesOf(const Sample& s) {
  std::vector<Span> out;
  size_t used = s.tokens.size();
  while (used > 0 && s.tokens[used - 1] == tok::kPad)
    --used;
  for (size_t i = 0; i < s.episode_starts.size(); ++i)
    out.push_back({s.episode_starts[i], i + 1 < s.episode_starts.size() ? s.episode_starts[i + 1] : used});
  return out;
}

bool sameSample(const Sample& a, const Sample& b) {
  return a.tokens == b.tokens && a.loss_mask == b.loss_mask && a.kind == b.kind &&
         a.episode_starts == b.episode_starts;
}

}  // namespace

class TestToyMixture : public QObject {
  Q_OBJECT
 private:
  ToyWorld w_ = ToyWorld::build();
  static constexpr int kSamples = 600;
  static constexpr uint64_t kPlainStreamFingerprint =
      1228041482232816523ULL;  // default MixtureConfig, seed 9, samples [0, 600)

  // Expected mask of one episode, derived independently from its tokens; also checks the format.
  std::vector<uint8_t> expectedMask(const std::string& kind, const std::vector<int>& ep) {
    std::vector<uint8_t> m(ep.size(), 0);
    if (kind == kKindInduction) {
      // Span length = first recurrence of the first span token (span tokens are distinct).
      size_t L = 0;
      for (size_t p = 2; p < ep.size() && !L; ++p)
        if (ep[p] == ep[1]) L = p - 1;
      const size_t body = ep.size() - 1;
      if (L < 8 || L > 24 || body % L != 0 || body / L < 2 || body / L > 4) return {};
      std::set<int> distinct(ep.begin() + 1, ep.begin() + 1 + static_cast<long>(L));
      if (distinct.size() != L) return {};
      for (size_t p = 1 + L; p < ep.size(); ++p) {
        if (ep[p] != ep[p - L] || w_.languageOfToken(ep[p]) < 0) return {};
        m[p] = p == 1 + L ? 0 : 1;
      }
      return m;
    }
    if (kind == kKindCopyList || kind == kKindTranslateList) {
      const int sep = kind == kKindCopyList ? tok::kSemi : tok::kArrow;
      const auto it = std::find(ep.begin(), ep.end(), sep);
      if (it == ep.end()) return {};
      const size_t s = static_cast<size_t>(it - ep.begin());
      const auto first = splitOn(ep, 1, s, tok::kComma);
      const auto second = splitOn(ep, s + 1, ep.size(), tok::kComma);
      if (first.size() != second.size() || first.size() < 3 || first.size() > 8) return {};
      for (size_t i = 0; i < first.size(); ++i) {
        const int la = hs::toy::test::languageOfWord(w_, first[i]);
        const int lb = hs::toy::test::languageOfWord(w_, second[i]);
        if (la < 0 || lb < 0) return {};
        const int ca = w_.conceptOf(static_cast<Lang>(la), first[i]);
        const int cb = w_.conceptOf(static_cast<Lang>(lb), second[i]);
        if (ca < 0 || ca != cb) return {};                     // same concept
        if ((kind == kKindCopyList) != (la == lb)) return {};  // copy: same language
      }
      for (size_t p = s + 1; p < ep.size(); ++p)
        m[p] = 1;
      return m;
    }
    if (kind == kKindFuzzyList) {
      // w1 , .. wn | v1 , .. vn (or with ":" between the words): v_i is another word of w_i's category, one
      // language, 2n distinct words.
      const auto it = std::find(ep.begin(), ep.end(), tok::kBar);
      if (it == ep.end()) return {};
      const size_t s = static_cast<size_t>(it - ep.begin());
      const auto first = splitOn(ep, 1, s, fuzzy_sep_);
      const auto second = splitOn(ep, s + 1, ep.size(), fuzzy_sep_);
      if (first.size() != second.size() || first.size() < 3 || first.size() > 8) return {};
      const int lang = hs::toy::test::languageOfWord(w_, first[0]);
      if (lang < 0) return {};
      std::set<int> concepts;
      size_t p = s + 1;
      for (size_t i = 0; i < first.size(); ++i) {
        const int ca = w_.conceptOf(static_cast<Lang>(lang), first[i]);
        const int cb = w_.conceptOf(static_cast<Lang>(lang), second[i]);
        if (ca < 0 || cb < 0 || w_.category[static_cast<size_t>(ca)] != w_.category[static_cast<size_t>(cb)])
          return {};
        concepts.insert({ca, cb});
        m[p] = 1;  // only the first syllable, which names the category, is a target
        p += second[i].size() + 1;
      }
      if (concepts.size() != 2 * first.size()) return {};
      ++fuzzy_lists_;
      return m;
    }
    if (kind == kKindIclCls) {
      // x : label <nl> ... ; every item ends with <nl>.
      if (ep.back() != tok::kNl) return {};
      size_t start = 1;
      std::map<int, int> cat_to_label, label_to_cat;
      for (size_t p = 1; p < ep.size(); ++p) {
        if (ep[p] != tok::kNl) continue;
        // item [start, p): word tokens, ":", label
        if (p - start < 3 || ep[p - 2] != tok::kColon || !hs::toy::test::isLabel(w_, ep[p - 1])) return {};
        const std::vector<int> word(ep.begin() + static_cast<long>(start),
                                    ep.begin() + static_cast<long>(p - 2));
        const int l = hs::toy::test::languageOfWord(w_, word);
        if (l < 0) return {};
        const int k = hs::toy::test::categoryOfWord(w_, static_cast<Lang>(l), word);
        if (k < 0) return {};
        // Within an episode the mapping category -> label is a bijection.
        if (cat_to_label.count(k) && cat_to_label[k] != ep[p - 1]) return {};
        if (label_to_cat.count(ep[p - 1]) && label_to_cat[ep[p - 1]] != k) return {};
        cat_to_label[k] = ep[p - 1];
        label_to_cat[ep[p - 1]] = k;
        cls_mappings_[k].insert(ep[p - 1]);
        m[p - 1] = 1;
        start = p + 1;
      }
      cls_items_.push_back(static_cast<int>(std::count(ep.begin(), ep.end(), tok::kNl)));
      return m;
    }
    if (kind == kKindCategory) {
      // x = d <nl> ... (or x : d); d is the digit of x's category, the same fixed naming in every episode.
      if (ep.back() != tok::kNl) return {};
      size_t start = 1;
      for (size_t p = 1; p < ep.size(); ++p) {
        if (ep[p] != tok::kNl) continue;
        if (p - start < 3 || ep[p - 2] != cat_sep_) return {};
        const std::vector<int> word(ep.begin() + static_cast<long>(start),
                                    ep.begin() + static_cast<long>(p - 2));
        const int l = hs::toy::test::languageOfWord(w_, word);
        if (l < 0) return {};
        const int k = hs::toy::test::categoryOfWord(w_, static_cast<Lang>(l), word);
        if (k < 0 || ep[p - 1] != tok::kDigit0 + k) return {};
        m[p - 1] = 1;
        start = p + 1;
      }
      cat_items_.push_back(static_cast<int>(std::count(ep.begin(), ep.end(), tok::kNl)));
      return m;
    }
    // function: x → y <nl> ...; one task for the whole episode.
    if (ep.back() != tok::kNl) return {};
    std::vector<std::pair<std::vector<int>, std::vector<int>>> items;
    size_t start = 1;
    for (size_t p = 1; p < ep.size(); ++p) {
      if (ep[p] != tok::kNl) continue;
      const auto parts = splitOn(ep, start, p, tok::kArrow);
      if (parts.size() != 2) return {};
      const size_t arrow = start + parts[0].size();
      for (size_t q = arrow + 1; q <= p; ++q)
        m[q] = 1;  // output and its <nl>
      items.push_back({parts[0], parts[1]});
      start = p + 1;
    }
    bool some_task = false;
    for (const auto& name : wordTaskNames()) {
      const auto& info = taskInfo(name);
      bool all = true;
      for (const auto& [x, y] : items) {
        const int c = w_.conceptOf(info.input_lang, x);
        all = all && c >= 0 && wordTaskPair(w_, name, c).second == y;
      }
      some_task = some_task || all;
    }
    if (!some_task) return {};
    fn_items_.push_back(static_cast<int>(items.size()));
    return m;
  }

  // Checks every episode of `x` against expectedMask (format and loss mask) and counts them into `episodes`;
  // returns what is wrong, or "" when all are right.
  std::string episodeProblem(const Sample& x, int& episodes) {
    for (const Span& e : episodesOf(x)) {
      const std::vector<int> ep(x.tokens.begin() + static_cast<long>(e.begin),
                                x.tokens.begin() + static_cast<long>(e.end));
      const std::vector<uint8_t> mask(x.loss_mask.begin() + static_cast<long>(e.begin),
                                      x.loss_mask.begin() + static_cast<long>(e.end));
      const std::vector<uint8_t> want = expectedMask(x.kind, ep);
      if (want.empty()) return x.kind + ": malformed episode: " + w_.text(ep);
      if (mask != want) return x.kind + ": wrong mask on " + w_.text(ep);
      ++episodes;
    }
    return "";
  }

  std::map<int, std::set<int>> cls_mappings_;          // category -> labels seen across episodes
  std::vector<int> cls_items_, fn_items_, cat_items_;  // demos + query per episode
  int cat_sep_ = tok::kEq;                             // the category episodes' separator expected
  int fuzzy_lists_ = 0;                                // well-formed fuzzy lists seen
  int fuzzy_sep_ = tok::kComma;                        // the fuzzy lists' separator expected

 private Q_SLOTS:
  void streamIsDeterministicAndSeekable() {
    MixtureSampler a(w_, {}, 42), b(w_, {}, 42), c(w_, {}, 43);
    std::vector<Sample> first;
    for (int i = 0; i < 40; ++i)
      first.push_back(a.next());
    QCOMPARE(a.position(), uint64_t(40));
    int differ = 0;
    for (int i = 0; i < 40; ++i) {
      QVERIFY(sameSample(first[i], b.next()));
      differ += !sameSample(first[i], c.next());
    }
    QVERIFY(differ >= 38);
    // seek(i) then next() is sample i, whatever came before.
    b.seek(17);
    QVERIFY(sameSample(b.next(), first[17]));
    QCOMPARE(b.position(), uint64_t(18));
    QVERIFY(sameSample(b.sampleAt(5), first[5]));
    b.seek(3);
    QVERIFY(sameSample(b.next(), first[3]));
    // A sampler built later (a resumed trainer) continues the same stream.
    MixtureSampler resumed(ToyWorld::build(), {}, 42);
    resumed.seek(39);
    QVERIFY(sameSample(resumed.next(), first[39]));
  }

  void samplesHaveFixedLengthAndValidIds() {
    MixtureSampler s(w_, {}, 7);
    std::map<std::string, int> kinds;
    for (int i = 0; i < kSamples; ++i) {
      const Sample x = s.next();
      QCOMPARE(int(x.tokens.size()), 256);
      QCOMPARE(int(x.loss_mask.size()), 256);
      ++kinds[x.kind];
      for (size_t p = 0; p < x.tokens.size(); ++p) {
        QVERIFY(x.tokens[p] >= 0 && x.tokens[p] < w_.vocabSize());
        QVERIFY(x.loss_mask[p] <= 1);
        if (x.tokens[p] == tok::kPad) QCOMPARE(int(x.loss_mask[p]), 0);
      }
      QVERIFY(!x.episode_starts.empty());
      QCOMPARE(int(x.episode_starts[0]), 0);
      for (size_t st : x.episode_starts)
        QCOMPARE(x.tokens[st], tok::kBos);
      QCOMPARE(int(std::count(x.tokens.begin(), x.tokens.end(), tok::kBos)), int(x.episode_starts.size()));
    }
    // Every kind appears, roughly by weight (1 : .75 : .75 : 2 : 2 of 6.5).
    QCOMPARE(int(kinds.size()), 5);
    QVERIFY(kinds[kKindIclCls] > kinds[kKindCopyList]);
    QVERIFY(kinds[kKindFunction] > kinds[kKindTranslateList]);
    QVERIFY(kinds[kKindInduction] > kSamples / 12);
  }

  void lossMasksCoverExactlyTheIntendedPositions() {
    MixtureSampler s(w_, {}, 11);
    std::map<std::string, int> checked;
    for (int i = 0; i < kSamples; ++i) {
      const Sample x = s.next();
      const std::string problem = episodeProblem(x, checked[x.kind]);
      QVERIFY2(problem.empty(), problem.c_str());
    }
    QCOMPARE(int(checked.size()), 5);
    // Packing: several episodes per sample on average.
    int episodes = 0;
    for (const auto& kv : checked)
      episodes += kv.second;
    QVERIFY(episodes > 2 * kSamples);
  }

  void classificationLabelsAreDrawnAfreshPerEpisode() {
    MixtureSampler s(w_, {}, 5);
    for (int i = 0; i < kSamples; ++i) {
      const Sample x = s.next();
      if (x.kind != kKindIclCls) continue;
      for (const Span& e : episodesOf(x))
        expectedMask(x.kind, std::vector<int>(x.tokens.begin() + static_cast<long>(e.begin),
                                              x.tokens.begin() + static_cast<long>(e.end)));
    }
    // Every category has been named by many different label words: the mapping cannot be memorised.
    QCOMPARE(int(cls_mappings_.size()), w_.numCategories());
    for (const auto& [k, labels] : cls_mappings_)
      QVERIFY2(labels.size() >= 10, qPrintable(QString::number(labels.size())));
    // Shots range over 0..12 (items = shots + query), with a share of zero-shot episodes.
    const int zero = static_cast<int>(std::count(cls_items_.begin(), cls_items_.end(), 1));
    QCOMPARE(*std::max_element(cls_items_.begin(), cls_items_.end()), 13);
    QVERIFY(zero > 0);
    QVERIFY(zero < static_cast<int>(cls_items_.size()) / 4);
  }

  void categoryNamingEpisodesAreOptIn() {
    // Weight 0 (a default MixtureConfig's) leaves the stream of the five basic kinds untouched: recipes
    // without category naming or fuzzy lists keep their samples, so their weights stay reproducible. The
    // fingerprint pins that stream.
    const MixtureSampler plain(w_, MixtureConfig{}, 9);
    uint64_t fingerprint = 1469598103934665603ULL;  // FNV-1a over kinds, tokens and masks
    auto mix = [&](uint64_t v) { fingerprint = (fingerprint ^ v) * 1099511628211ULL; };
    for (uint64_t i = 0; i < kSamples; ++i) {
      const Sample x = plain.sampleAt(i);
      QVERIFY(x.kind != kKindCategory && x.kind != kKindFuzzyList);
      for (char ch : x.kind)
        mix(static_cast<unsigned char>(ch));
      for (size_t p = 0; p < x.tokens.size(); ++p)
        mix(static_cast<uint64_t>(x.tokens[p]) * 2 + x.loss_mask[p]);
    }
    QCOMPARE(fingerprint, kPlainStreamFingerprint);

    // A weight adds well-formed "x = digit" episodes at roughly its share.
    MixtureConfig on;
    on.w_category = 1.0;  // 1 of 7.5
    const MixtureSampler c(w_, on, 9);
    int category = 0, episodes = 0;
    for (uint64_t i = 0; i < kSamples; ++i) {
      const Sample x = c.sampleAt(i);
      if (x.kind != kKindCategory) continue;
      ++category;
      const std::string problem = episodeProblem(x, episodes);
      QVERIFY2(problem.empty(), problem.c_str());
    }
    QVERIFY2(category > kSamples / 12 && category < kSamples / 4, qPrintable(QString::number(category)));
    // Shots 0..6 (items = shots + query), zero-shot queries included.
    QCOMPARE(*std::max_element(cat_items_.begin(), cat_items_.end()), 7);
    QVERIFY(std::count(cat_items_.begin(), cat_items_.end(), 1) > 0);
    // The curriculum puts the weight in every stage.
    CurriculumOptions named;
    named.category_weight = 1.5;
    for (const CurriculumStage& st : defaultCurriculum(1000, 256, named))
      QCOMPARE(st.config.w_category, 1.5);
    for (const CurriculumStage& st : defaultCurriculum(1000))
      QCOMPARE(st.config.w_category, 0.0);
    named.category_weight = -1.0;
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, named));
  }

  void categoryNamingCanUseTheClassificationSeparator() {
    // "x : d": the same episodes with the classification episodes' ":" in place of "=".
    MixtureConfig colon;
    colon.w_category = 1.0;
    colon.cat_sep = tok::kColon;
    const MixtureSampler c(w_, colon, 9);
    cat_sep_ = tok::kColon;
    int category = 0, episodes = 0;
    for (uint64_t i = 0; i < kSamples; ++i) {
      const Sample x = c.sampleAt(i);
      if (x.kind != kKindCategory) continue;
      ++category;
      QVERIFY(std::count(x.tokens.begin(), x.tokens.end(), tok::kEq) == 0);
      const std::string problem = episodeProblem(x, episodes);
      QVERIFY2(problem.empty(), problem.c_str());
    }
    cat_sep_ = tok::kEq;
    QVERIFY(category > kSamples / 12);
    // The separator changes nothing else: the same samples are drawn, token for token but the separator.
    MixtureConfig eq = colon;
    eq.cat_sep = tok::kEq;
    const MixtureSampler e(w_, eq, 9);
    for (uint64_t i = 0; i < 50; ++i) {
      Sample a = c.sampleAt(i), b = e.sampleAt(i);
      if (a.kind == kKindCategory)
        std::replace(a.tokens.begin(), a.tokens.end(), int(tok::kColon), int(tok::kEq));
      QVERIFY(sameSample(a, b));
    }
    // The curriculum passes the option to every stage; anything but "=" and ":" is refused.
    CurriculumOptions named;
    named.category_weight = 1.0;
    named.category_sep = ":";
    for (const CurriculumStage& st : defaultCurriculum(1000, 256, named))
      QCOMPARE(st.config.cat_sep, int(tok::kColon));
    named.category_sep = "->";
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, named));
    colon.cat_sep = tok::kArrow;
    QVERIFY_THROWS_EXCEPTION(hs::Error, MixtureSampler(w_, colon, 9));
  }

  void fuzzyListsCopyCategoriesNotWords() {
    // Off by default (categoryNamingEpisodesAreOptIn's fingerprint covers the default stream); a weight adds
    // well-formed episodes whose only targets are the second list's first syllables.
    MixtureConfig on;
    on.w_fuzzy_list = 1.0;  // 1 of 7.5
    const MixtureSampler f(w_, on, 9);
    int fuzzy = 0, episodes = 0;
    for (uint64_t i = 0; i < kSamples; ++i) {
      const Sample x = f.sampleAt(i);
      QVERIFY(x.kind != kKindCategory);
      if (x.kind != kKindFuzzyList) continue;
      ++fuzzy;
      const std::string problem = episodeProblem(x, episodes);
      QVERIFY2(problem.empty(), problem.c_str());
    }
    QVERIFY2(fuzzy > kSamples / 12 && fuzzy < kSamples / 4, qPrintable(QString::number(fuzzy)));
    QCOMPARE(fuzzy_lists_, episodes);
    QVERIFY(episodes > 2 * fuzzy);  // packed
    // The curriculum puts the weight in every stage; a negative weight is refused.
    CurriculumOptions opts;
    opts.fuzzy_list_weight = 2.0;
    for (const CurriculumStage& st : defaultCurriculum(1000, 256, opts))
      QCOMPARE(st.config.w_fuzzy_list, 2.0);
    for (const CurriculumStage& st : defaultCurriculum(1000)) {  // the shipped recipe: on, with ":"
      QCOMPARE(st.config.w_fuzzy_list, 1.0);
      QCOMPARE(st.config.fuzzy_sep, int(tok::kColon));
    }
    opts.fuzzy_list_weight = -1.0;
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, opts));

    // ":" between the words: the same draws, token for token but the separator, and no "," left.
    MixtureConfig colon = on;
    colon.fuzzy_sep = tok::kColon;
    const MixtureSampler fc(w_, colon, 9);
    fuzzy_sep_ = tok::kColon;
    int colon_episodes = 0;
    for (uint64_t i = 0; i < kSamples; ++i) {
      Sample x = fc.sampleAt(i);
      if (x.kind == kKindFuzzyList) {
        QCOMPARE(int(std::count(x.tokens.begin(), x.tokens.end(), tok::kComma)), 0);
        const std::string problem = episodeProblem(x, colon_episodes);
        QVERIFY2(problem.empty(), problem.c_str());
        std::replace(x.tokens.begin(), x.tokens.end(), int(tok::kColon), int(tok::kComma));
      }
      QVERIFY(sameSample(x, f.sampleAt(i)));
    }
    fuzzy_sep_ = tok::kComma;
    QCOMPARE(colon_episodes, episodes);
    opts.fuzzy_list_weight = 1.0;
    opts.fuzzy_list_sep = ",";
    for (const CurriculumStage& st : defaultCurriculum(1000, 256, opts))
      QCOMPARE(st.config.fuzzy_sep, int(tok::kComma));
    opts.fuzzy_list_sep = ";";
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, opts));
    colon.fuzzy_sep = tok::kSemi;
    QVERIFY_THROWS_EXCEPTION(hs::Error, MixtureSampler(w_, colon, 9));

    // A fuzzy list needs 2N distinct concepts: lists longer than half the world are refused, and the
    // message says why; the same lists without fuzzy lists are fine.
    MixtureConfig long_lists = on;
    long_lists.list_min_words = 1;
    long_lists.list_max_words = w_.numConcepts() / 2 + 1;
    long_lists.seq_len = 4096;  // room for the longest lists
    std::string message;
    try {
      MixtureSampler(w_, long_lists, 9);
    } catch (const hs::Error& e) {
      message = e.what();
    }
    QVERIFY2(message.find("fuzzy lists: 2 per word") != std::string::npos, message.c_str());
    long_lists.w_fuzzy_list = 0.0;
    MixtureSampler(w_, long_lists, 9);
  }

  void unpackedSamplesHoldOneEpisode() {
    MixtureConfig cfg;
    cfg.pack = false;
    cfg.seq_len = 128;
    MixtureSampler s(w_, cfg, 3);
    for (int i = 0; i < 100; ++i) {
      const Sample x = s.next();
      QCOMPARE(int(x.tokens.size()), 128);
      QCOMPARE(int(x.episode_starts.size()), 1);
    }
  }

  void configsThatCannotFitAreRejected() {
    MixtureConfig cfg;
    cfg.seq_len = 64;  // induction episodes reach 1 + 24 * 4 = 97 tokens
    QVERIFY_THROWS_EXCEPTION(hs::Error, MixtureSampler(w_, cfg, 1));
    cfg.w_induction = 0;
    cfg.w_icl_cls = 0;
    cfg.w_function = 0;
    cfg.list_max_words = 4;  // lists: 1 + 2 * (4*3 + 3) + 1 = 32
    MixtureSampler ok(w_, cfg, 1);
    for (int i = 0; i < 20; ++i)
      QVERIFY(ok.next().kind != kKindInduction);
    MixtureConfig bad_task;
    bad_task.fn_tasks = {"category_label"};
    QVERIFY_THROWS_EXCEPTION(hs::Error, MixtureSampler(w_, bad_task, 1));
  }

  void curriculumSwitchesStagesDeterministically() {
    const auto stages = defaultCurriculum(1000);
    QCOMPARE(int(stages.size()), 3);
    CurriculumSampler cs(w_, stages, 42);
    QCOMPARE(int(cs.stageAt(0)), 0);
    QCOMPARE(int(cs.stageAt(149)), 0);
    QCOMPARE(int(cs.stageAt(150)), 1);
    QCOMPARE(int(cs.stageAt(699)), 1);
    QCOMPARE(int(cs.stageAt(700)), 2);
    QCOMPARE(int(cs.stageAt(5000)), 2);  // the last stage runs on past the plan
    // Sample i is the stage's mixture sample i: the stream depends on (seed, i) only.
    for (uint64_t i : {0ULL, 149ULL, 150ULL, 700ULL, 999ULL, 1200ULL}) {
      const MixtureSampler m(w_, stages[cs.stageAt(i)].config, 42);
      QVERIFY(sameSample(cs.sampleAt(i), m.sampleAt(i)));
    }
    cs.seek(698);
    const Sample a = cs.next(), b = cs.next();
    QVERIFY(sameSample(a, cs.sampleAt(698)) && sameSample(b, cs.sampleAt(699)));
    QCOMPARE(cs.position(), uint64_t(700));
    // The warm-up serves more induction and the last stage more ICL episodes than the main mixture.
    const CurriculumSampler big(w_, defaultCurriculum(10000), 42);
    auto share = [&](uint64_t from, const char* kind) {
      int n = 0;
      for (uint64_t i = from; i < from + 1000; ++i)
        n += big.sampleAt(i).kind == kind;
      return n;
    };
    QVERIFY(share(0, kKindInduction) > share(2000, kKindInduction) + 100);
    QVERIFY(share(8000, kKindIclCls) + share(8000, kKindFunction) >
            share(2000, kKindIclCls) + share(2000, kKindFunction) + 80);
    // The icl stage can start earlier; it must start after the warm-up.
    CurriculumOptions half;
    half.icl_from = 0.5;
    const CurriculumSampler early(w_, defaultCurriculum(1000, 256, half), 42);
    QCOMPARE(int(early.stageAt(499)), 1);
    QCOMPARE(int(early.stageAt(500)), 2);
    half.icl_from = 0.1;
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, half));
    // The icl stage's classification weight is the recipe's to choose; it must stay positive.
    CurriculumOptions heavy;
    heavy.icl_cls_weight = 8.0;
    QCOMPARE(defaultCurriculum(1000, 256, heavy).back().config.w_icl_cls, 8.0);
    QCOMPARE(defaultCurriculum(1000, 256, heavy)[1].config.w_icl_cls, MixtureConfig{}.w_icl_cls);
    heavy.icl_cls_weight = 0.0;
    QVERIFY_THROWS_EXCEPTION(hs::Error, defaultCurriculum(1000, 256, heavy));
    // One seq_len for all stages.
    auto bad = stages;
    bad[1].config.seq_len = 128;
    QVERIFY_THROWS_EXCEPTION(hs::Error, CurriculumSampler(w_, bad, 1));
  }
};

QTEST_GUILESS_MAIN(TestToyMixture)
#include "test_toy_mixture.moc"
