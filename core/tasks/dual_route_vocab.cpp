#include "tasks/dual_route_vocab.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/file_text.h"

namespace hs {

namespace {

// Words of 2..5 tokens (as they follow other text), each once, in the order given.
std::vector<std::vector<int64_t>> wordsOf(const Tokenizer& tok, const std::vector<std::string>& words) {
  std::vector<std::vector<int64_t>> out;
  std::set<std::vector<int64_t>> seen;
  for (const std::string& w : words) {
    std::vector<int64_t> ids = continuationIds(tok, " " + w);
    if (ids.size() >= 2 && ids.size() <= 5 && seen.insert(ids).second) out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace

std::vector<int64_t> continuationIds(const Tokenizer& tok, const std::string& text) {
  // Encoded after an anchor word, the text is tokenized as it is inside running text; the anchor's own
  // tokens are dropped when they come first unchanged (else the text is encoded on its own).
  const std::string anchor = "x";
  const std::vector<int> a = tok.encode(anchor, false);
  const std::vector<int> both = tok.encode(anchor + text, false);
  if (both.size() > a.size() && std::equal(a.begin(), a.end(), both.begin()))
    return {both.begin() + static_cast<std::ptrdiff_t>(a.size()), both.end()};
  const std::vector<int> alone = tok.encode(text, false);
  return {alone.begin(), alone.end()};
}

int64_t newlineId(const Tokenizer& tok) {
  const std::vector<int> ids = tok.encode("\n", false);
  if (ids.empty()) fail("dual route: the tokenizer encodes \"\\n\" to no token");
  return ids.back();
}

DualRouteVocab toyDualRouteVocab(const toy::ToyWorld& w, const std::string& sep) {
  DualRouteVocab v;
  v.bos = toy::tok::kBos;
  v.sep = sep.empty() ? -1 : w.tokenId(sep);
  for (int li = 0; li < 2; ++li)
    for (int s : w.syllables[li])
      v.random_tokens.push_back(s);
  for (int li = 0; li < 2; ++li)
    for (const auto& word : w.words[li])
      if (word.size() >= 2) v.words.emplace_back(word.begin(), word.end());
  v.source = "toy world (syllables; words of >= 2 tokens; sep \"" + sep + "\")";
  return v;
}

DualRouteVocab modelDualRouteVocab(const Tokenizer& tok, int64_t vocabSize, const std::string& corpusFile,
                                   const std::string& wordsFile, const std::string& sep) {
  DualRouteVocab v;
  v.bos = tok.bosId();
  if (sep == "\n") {
    v.sep = newlineId(tok);
  } else if (!sep.empty()) {
    const std::vector<int> s = tok.encode(sep, false);
    if (s.size() != 1)
      fail("dual route: separator \"", sep, "\" encodes to ", s.size(), " tokens, expected 1");
    v.sep = s[0];
  }
  const int64_t lo = vocabSize / 4, hi = 3 * vocabSize / 4;
  for (int64_t t = lo; t < hi; ++t)
    if (t != tok.bosId() && t != tok.eosId()) v.random_tokens.push_back(t);
  v.source = cat("vocab [", lo, ", ", hi, ")");
  std::string text;
  if (!corpusFile.empty()) {
    text = withContext(corpusFile, [&] { return readTextFile(corpusFile, "corpus"); });
    const std::vector<int> ids = tok.encode(text, false);
    v.corpus.assign(ids.begin(), ids.end());
    v.source += cat(" + corpus ", corpusFile, " (", v.corpus.size(), " tokens)");
  }
  if (!wordsFile.empty()) {
    std::istringstream f(readTextFile(wordsFile, "word list", 64ull << 20));
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(f, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
      if (!line.empty()) lines.push_back(line);
    }
    v.words = wordsOf(tok, lines);
    if (v.words.empty()) fail("dual route: no word of 2..5 tokens in ", wordsFile);
    v.source += " + words of " + wordsFile;
  } else if (!text.empty()) {
    // Alphabetic words of the corpus (>= 3 letters), in order of first occurrence.
    std::vector<std::string> words;
    std::set<std::string> seen;
    std::string cur;
    for (size_t i = 0; i <= text.size(); ++i) {
      const char ch = i < text.size() ? text[i] : ' ';
      if (std::isalpha(static_cast<unsigned char>(ch))) {
        cur += ch;
        continue;
      }
      if (cur.size() >= 3 && seen.insert(cur).second) words.push_back(cur);
      cur.clear();
    }
    v.words = wordsOf(tok, words);
    if (!v.words.empty()) v.source += cat(" + ", v.words.size(), " multi-token words of the corpus");
  }
  return v;
}

}  // namespace hs
