#pragma once
// Test-side parsing of toy episodes: the tests recover structure from the tokens alone, so they check what
// the model will actually see rather than the builders' own bookkeeping.
#include <algorithm>
#include <vector>

#include "tasks/toy/world.h"

namespace hs::toy::test {

// Split [begin, end) of `ids` at every `sep` token; the separators are dropped.
inline std::vector<std::vector<int>> splitOn(const std::vector<int>& ids, size_t begin, size_t end, int sep) {
  std::vector<std::vector<int>> out(1);
  for (size_t i = begin; i < end; ++i) {
    if (ids[i] == sep)
      out.emplace_back();
    else
      out.back().push_back(ids[i]);
  }
  return out;
}

inline bool isLabel(const ToyWorld& w, int id) {
  return std::find(w.label_tokens.begin(), w.label_tokens.end(), id) != w.label_tokens.end();
}

// Category of a word read from its tokens (first syllable), -1 when it is not a word of language l.
inline int categoryOfWord(const ToyWorld& w, Lang l, const std::vector<int>& word) {
  const int c = w.conceptOf(l, word);
  return c < 0 ? -1 : w.categoryOfFirstSyllable(l, word.front());
}

// Language of a word from its first token, or -1.
inline int languageOfWord(const ToyWorld& w, const std::vector<int>& word) {
  return word.empty() ? -1 : w.languageOfToken(word.front());
}

}  // namespace hs::toy::test
