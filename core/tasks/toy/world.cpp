#include "tasks/toy/world.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs::toy {

namespace {

// Syllable shapes: language A is lowercase consonant+vowel ("ka", "shoi"), language B is capitalised
// vowel+consonant ("Ak", "Oish"), so a word's language is visible in every token and no string is shared.
const std::vector<std::string> kConsonants = {"b", "d", "f", "g", "h", "j", "k", "l", "m",  "n",
                                              "p", "r", "s", "t", "v", "w", "y", "z", "ch", "sh"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u", "ai", "au", "ei", "oi", "ou"};

// Label words: short English words, none of them a CV or VC syllable.
const std::vector<std::string> kLabelWords = {"red",  "blue", "green", "gold", "pink", "gray", "teal", "navy",
                                              "lime", "plum", "rose",  "jade", "ruby", "onyx", "sand", "mint",
                                              "coal", "snow", "fern",  "wine", "iron", "opal", "sky",  "ash"};

std::string capitalise(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

// The first n syllable strings of a language, single vowels first so small worlds use the simplest shapes.
std::vector<std::string> syllableStrings(Lang l, int n) {
  std::vector<std::string> out;
  for (const auto& v : kVowels)
    for (const auto& c : kConsonants)
      out.push_back(l == Lang::A ? c + v : capitalise(v) + c);
  if (n > static_cast<int>(out.size()))
    fail("toy world: syllables_per_language = ", n, ", at most ", out.size(), " syllable shapes exist");
  out.resize(static_cast<size_t>(n));
  return out;
}

void validate(const ToyWorldConfig& c) {
  if (c.categories < 2) fail("toy world: categories = ", c.categories, ", expected >= 2");
  if (c.first_syllables_per_category < 1)
    fail("toy world: first_syllables_per_category = ", c.first_syllables_per_category, ", expected >= 1");
  if (c.words_per_language % 2 != 0 || c.words_per_language < 2 * c.categories)
    fail("toy world: words_per_language = ", c.words_per_language,
         ", expected an even number >= ", 2 * c.categories,
         " (antonyms pair concepts; every category needs words)");
  const int owned = c.categories * c.first_syllables_per_category;
  if (owned + 2 > c.syllables_per_language)
    fail("toy world: ", c.categories, " categories x ", c.first_syllables_per_category,
         " first syllables leave fewer than 2 inner syllables of ", c.syllables_per_language);
  if (c.label_words < 4) fail("toy world: label_words = ", c.label_words, ", expected >= 4");
  if (!(c.p_len1 >= 0 && c.p_len2 >= 0 && c.p_len3 >= 0 && c.p_len1 + c.p_len2 + c.p_len3 > 0))
    fail("toy world: word length weights must be >= 0 with a positive sum");
}

}  // namespace

const char* langName(Lang l) {
  return l == Lang::A ? "A" : "B";
}

// Builds the world in a fixed order of draws from one Rng; changing the order changes every world.
struct WorldBuilder {
  static ToyWorld build(const ToyWorldConfig& cfg) {
    validate(cfg);
    ToyWorld w;
    w.config = cfg;
    Rng rng(deriveSeed(cfg.seed, kStreamWorld));

    // ---- token table: specials, separators, digits, labels, syllables A, syllables B ----
    auto add = [&](const std::string& s) {
      if (w.token_ids.count(s)) fail("toy world: token string \"", s, "\" defined twice");
      w.token_ids[s] = static_cast<int>(w.tokens.size());
      w.tokens.push_back(s);
      return static_cast<int>(w.tokens.size()) - 1;
    };
    for (const char* s : {"<pad>", "<bos>", "<eos>", ":", "\xE2\x86\x92", ";", "<nl>", "=", "|", ","})
      add(s);
    for (int d = 0; d < 10; ++d)
      add(std::to_string(d));
    for (int i = 0; i < cfg.label_words; ++i)
      w.label_tokens.push_back(add(i < static_cast<int>(kLabelWords.size())
                                       ? kLabelWords[static_cast<size_t>(i)]
                                       : "lbl" + std::to_string(i)));
    w.lang_of_token_.assign(static_cast<size_t>(w.label_tokens.back() + 1), -1);
    for (Lang l : {Lang::A, Lang::B})
      for (const auto& s : syllableStrings(l, cfg.syllables_per_language)) {
        w.syllables[index(l)].push_back(add(s));
        w.lang_of_token_.push_back(index(l));
      }

    // ---- categories own first syllables; the rest are inner syllables ----
    const int K = cfg.categories;
    for (Lang l : {Lang::A, Lang::B}) {
      const int li = index(l);
      std::vector<int> syl = w.syllables[li];
      rng.shuffle(syl);
      w.first_syllables[li].assign(static_cast<size_t>(K), {});
      size_t next = 0;
      for (int k = 0; k < K; ++k)
        for (int j = 0; j < cfg.first_syllables_per_category; ++j) {
          int s = syl[next++];
          w.first_syllables[li][static_cast<size_t>(k)].push_back(s);
          w.category_by_first_[li][s] = k;
        }
      w.inner_syllables[li].assign(syl.begin() + static_cast<long>(next), syl.end());
      std::sort(w.inner_syllables[li].begin(), w.inner_syllables[li].end());
    }

    // ---- concepts: balanced categories; each concept gets a unique word per language ----
    const int N = cfg.words_per_language;
    w.category.resize(static_cast<size_t>(N));
    w.concepts_of_category.assign(static_cast<size_t>(K), {});
    for (int c = 0; c < N; ++c) {
      w.category[static_cast<size_t>(c)] = c % K;
      w.concepts_of_category[static_cast<size_t>(c % K)].push_back(c);
    }
    const std::vector<double> len_weights = {cfg.p_len1, cfg.p_len2, cfg.p_len3};
    for (Lang l : {Lang::A, Lang::B}) {
      const int li = index(l);
      w.words[li].resize(static_cast<size_t>(N));
      for (int c = 0; c < N; ++c) {
        const int k = c % K;
        // Round-robin over the category's first syllables keeps their use balanced.
        const auto& firsts = w.first_syllables[li][static_cast<size_t>(k)];
        const int first = firsts[static_cast<size_t>((c / K) % static_cast<int>(firsts.size()))];
        for (int attempt = 0;; ++attempt) {
          if (attempt > 10000) fail("toy world: cannot make ", N, " unique words in language ", langName(l));
          std::vector<int> word = {first};
          const int len = 1 + static_cast<int>(rng.weighted(len_weights));
          while (static_cast<int>(word.size()) < len)
            word.push_back(rng.pick(w.inner_syllables[li]));
          if (w.concept_by_word_[li].emplace(word, c).second) {
            w.words[li][static_cast<size_t>(c)] = std::move(word);
            break;
          }
        }
      }
    }

    // ---- antonym: a random perfect matching of concepts (an involution without fixed points) ----
    std::vector<int> order(static_cast<size_t>(N));
    std::iota(order.begin(), order.end(), 0);
    rng.shuffle(order);
    w.antonym.assign(static_cast<size_t>(N), -1);
    for (size_t i = 0; i + 1 < order.size(); i += 2) {
      w.antonym[static_cast<size_t>(order[i])] = order[i + 1];
      w.antonym[static_cast<size_t>(order[i + 1])] = order[i];
    }

    // ---- successor: one random cycle through all concepts ----
    std::iota(order.begin(), order.end(), 0);
    rng.shuffle(order);
    w.successor.assign(static_cast<size_t>(N), -1);
    for (size_t i = 0; i < order.size(); ++i)
      w.successor[static_cast<size_t>(order[i])] = order[(i + 1) % order.size()];
    return w;
  }
};

ToyWorld ToyWorld::build(const ToyWorldConfig& config) {
  return WorldBuilder::build(config);
}

const std::string& ToyWorld::tokenString(int id) const {
  if (id < 0 || id >= vocabSize()) fail("toy world: token id ", id, " out of range [0, ", vocabSize(), ")");
  return tokens[static_cast<size_t>(id)];
}

int ToyWorld::tokenId(const std::string& s) const {
  auto it = token_ids.find(s);
  if (it == token_ids.end()) fail("toy world: unknown token string \"", s, "\"");
  return it->second;
}

std::string ToyWorld::text(const std::vector<int>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ' ';
    out += tokenString(ids[i]);
  }
  return out;
}

int ToyWorld::categoryOfFirstSyllable(Lang l, int first_syllable) const {
  const auto& m = category_by_first_[index(l)];
  auto it = m.find(first_syllable);
  return it == m.end() ? -1 : it->second;
}

int ToyWorld::conceptOf(Lang l, const std::vector<int>& word_tokens) const {
  const auto& m = concept_by_word_[index(l)];
  auto it = m.find(word_tokens);
  return it == m.end() ? -1 : it->second;
}

int ToyWorld::languageOfToken(int id) const {
  if (id < 0 || id >= static_cast<int>(lang_of_token_.size())) return -1;
  return lang_of_token_[static_cast<size_t>(id)];
}

std::string ToyWorld::describe() const {
  std::ostringstream os;
  int lens[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  for (int li = 0; li < 2; ++li)
    for (const auto& wd : words[li])
      ++lens[li][wd.size()];
  os << "toy ICL world (seed " << config.seed << "): vocab " << vocabSize()
     << " tokens = 10 specials/separators + 10 digits + " << label_tokens.size() << " label words + "
     << syllables[0].size() << " + " << syllables[1].size() << " syllables (A, B)\n"
     << "  " << numConcepts() << " concepts, one word each in A and B (translation = same concept)\n";
  for (int li = 0; li < 2; ++li)
    os << "  language " << langName(static_cast<Lang>(li)) << ": words of 1/2/3 syllables: " << lens[li][1]
       << "/" << lens[li][2] << "/" << lens[li][3] << "; e.g. \"" << text(words[li][0]) << "\"\n";
  os << "  " << numCategories() << " categories, each owning " << config.first_syllables_per_category
     << " first syllables per language (category = function of a word's first syllable)\n"
     << "  antonym: " << numConcepts() / 2 << " concept pairs; successor: one cycle of " << numConcepts()
     << "\n";
  return os.str();
}

}  // namespace hs::toy
