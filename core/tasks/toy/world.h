#pragma once
// The synthetic ICL world of the toy model: a token table, two "languages" of syllable words with a
// one-to-one translation, word attributes (category, antonym, successor) and label words. Built
// deterministically from a seed with portable sampling (tasks/toy/rng.h), so the same seed gives the same
// world on every platform. No torch, no Qt: token ids are plain ints.
//
// Words are indexed by *concept*: concept c has one word in each language, words[A][c] and words[B][c], so
// translation is "same concept, other language". Attributes belong to concepts, which makes them consistent
// across languages by construction: category(tr(w)) == category(w), ant(tr(w)) == tr(ant(w)).
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hs::toy {

enum class Lang : int { A = 0, B = 1 };
inline int index(Lang l) {
  return static_cast<int>(l);
}
const char* langName(Lang l);  // "A" / "B"

// Fixed token ids (the head of the token table).
namespace tok {
constexpr int kPad = 0;      // "<pad>", also the tokenizer's unk token
constexpr int kBos = 1;      // "<bos>", starts every episode
constexpr int kEos = 2;      // "<eos>"
constexpr int kColon = 3;    // ":"  classification: word : label
constexpr int kArrow = 4;    // "→"  function episodes and translated lists: x → f(x)
constexpr int kSemi = 5;     // ";"  between a list and its copy
constexpr int kNl = 6;       // "<nl>" ends a demonstration
constexpr int kEq = 7;       // "="
constexpr int kBar = 8;      // "|"
constexpr int kComma = 9;    // ","  between the words of a list
constexpr int kDigit0 = 10;  // "0".."9" are ids 10..19
constexpr int kFirstLabel = 20;
}  // namespace tok

struct ToyWorldConfig {
  uint64_t seed = 20240611;
  int syllables_per_language = 100;  // <= 200
  int words_per_language = 256;      // concepts; even (antonym pairs them), >= 2 * categories
  int categories = 8;
  int first_syllables_per_category = 4;  // the syllables that start a category's words, per language
  int label_words = 24;
  // Word length distribution (1, 2 or 3 syllables), relative weights.
  double p_len1 = 0.15, p_len2 = 0.5, p_len3 = 0.35;
};

struct ToyWorld {
  // Build the world; throws hs::Error on an impossible config.
  static ToyWorld build(const ToyWorldConfig& config = {});

  ToyWorldConfig config;

  // Token table: id -> string (no whitespace, unique) and back.
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int> token_ids;

  std::vector<int> label_tokens;  // [label_words] ids of the label words
  std::vector<int> syllables[2];  // [lang][syllables_per_language] ids of each language's syllables
  // [lang][category] -> the first-syllable token ids owned by that category. A word's category is decided by
  // its first syllable alone; first syllables never occur elsewhere in a word.
  std::vector<std::vector<int>> first_syllables[2];
  std::vector<int> inner_syllables[2];  // [lang] syllables usable at positions 2 and 3 of a word

  // Concepts c in [0, words_per_language).
  std::vector<std::vector<int>> words[2];  // [lang][concept] -> 1..3 syllable token ids, unique per language
  std::vector<int> category;               // [concept] -> category in [0, categories)
  std::vector<int> antonym;                // [concept] -> concept; involution without fixed points
  std::vector<int> successor;              // [concept] -> concept; one cycle through all concepts
  std::vector<std::vector<int>> concepts_of_category;  // [category] -> concepts

  int vocabSize() const { return static_cast<int>(tokens.size()); }
  // [first, end) of the syllable ids: both languages' syllables close the vocabulary, A's then B's. Random
  // spans over this range are what the induction prompts copy (eval-toy, `headscope-cli induction toy`).
  std::pair<int, int> syllableIdRange() const { return {syllables[0].front(), vocabSize()}; }
  int numConcepts() const { return static_cast<int>(category.size()); }
  int numCategories() const { return static_cast<int>(concepts_of_category.size()); }
  const std::vector<int>& word(Lang l, int conceptId) const {
    return words[index(l)][static_cast<size_t>(conceptId)];
  }

  const std::string& tokenString(int id) const;  // throws on an out-of-range id
  int tokenId(const std::string& s) const;       // throws on an unknown string
  // Space-joined token strings: the text form the WordLevel tokenizer splits back into the same ids.
  std::string text(const std::vector<int>& ids) const;
  // Category owning `first_syllable` in language l, or -1 when it starts no word.
  int categoryOfFirstSyllable(Lang l, int first_syllable) const;
  // Concept whose word in language l is exactly `word_tokens`, or -1.
  int conceptOf(Lang l, const std::vector<int>& word_tokens) const;
  // Language of a syllable token, or -1 for any other token.
  int languageOfToken(int id) const;

  std::string describe() const;

 private:
  std::map<std::vector<int>, int> concept_by_word_[2];
  std::unordered_map<int, int> category_by_first_[2];
  std::vector<int> lang_of_token_;
  friend struct WorldBuilder;
};

}  // namespace hs::toy
