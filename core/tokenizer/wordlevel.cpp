#include "tokenizer/wordlevel.h"

#include <algorithm>

#include "util/error.h"

namespace hs {

WordLevelTokenizer::WordLevelTokenizer(WordLevelConfig cfg)
    : cfg_(std::move(cfg)),
      splitter_(
          cfg_.added, cfg_.normalizer.empty()
                          ? AddedTokenSplitter::Normalize()
                          : [n = cfg_.normalizer](const std::string& text) { return n.apply(text); }) {
  int maxId = -1;
  for (const auto& [w, id] : cfg_.vocab)
    maxId = std::max(maxId, id);
  for (const auto& a : cfg_.added) {
    if (a.id < 0) fail(cfg_.source, ": added token \"", a.content, "\" has negative id ", a.id);
    maxId = std::max(maxId, a.id);
  }
  if (maxId >= (1 << 22))
    fail(cfg_.source, ": token id ", maxId, " is out of range 0..", (1 << 22) - 1,
         " (the limit on vocabulary ids)");
  pieces_.assign(static_cast<size_t>(maxId + 1), std::string());
  for (const auto& [w, id] : cfg_.vocab) {
    if (id < 0) fail(cfg_.source, ": WordLevel id ", id, " of \"", w, "\" is negative");
    if (!pieces_[static_cast<size_t>(id)].empty())
      fail(cfg_.source, ": WordLevel id ", id, " is used by both \"", pieces_[static_cast<size_t>(id)],
           "\" and \"", w, "\"");
    pieces_[static_cast<size_t>(id)] = w;
  }
  for (const auto& a : cfg_.added)
    pieces_[static_cast<size_t>(a.id)] = a.content;
  for (size_t i = 0; i < pieces_.size(); ++i)
    if (pieces_[i].empty()) fail(cfg_.source, ": WordLevel vocabulary has no entry for id ", i);
}

std::vector<int> WordLevelTokenizer::encode(const std::string& text, std::optional<bool> addBos) const {
  std::vector<int> ids;
  if (addBos.value_or(cfg_.addBos)) ids.push_back(cfg_.bos);
  const auto spaceAt = [](const std::string& s, size_t i) -> size_t {  // its length, 0 when not a space
    const auto [cp, n] = unicode::decodeAt(s, i);
    return unicode::isWhitespace(cp) ? n : 0;
  };
  for (const TextSegment& seg : splitter_.split(text)) {
    if (seg.tokenId >= 0) {
      ids.push_back(seg.tokenId);
      continue;
    }
    size_t i = 0;
    const std::string& s = seg.text;
    while (i < s.size()) {
      while (i < s.size() && spaceAt(s, i) > 0)
        i += spaceAt(s, i);
      size_t j = i;
      while (j < s.size() && spaceAt(s, j) == 0)
        j += unicode::decodeAt(s, j).second;
      if (j > i) {
        const std::string word = s.substr(i, j - i);
        auto it = cfg_.vocab.find(word);
        if (it != cfg_.vocab.end()) {
          ids.push_back(it->second);
        } else if (cfg_.unk >= 0) {
          ids.push_back(cfg_.unk);
        } else {
          fail(cfg_.source, ": \"", word, "\" is not in the WordLevel vocabulary and there is no unk_token");
        }
      }
      i = j;
    }
  }
  return ids;
}

std::string WordLevelTokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  bool first = true;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == 0 && ids[i] == cfg_.bos && cfg_.addBos) continue;  // the BOS that encode added
    if (!first) out += ' ';
    out += piece(ids[i]);
    first = false;
  }
  return out;
}

std::string WordLevelTokenizer::piece(int id) const {
  if (id < 0 || id >= vocabSize())
    fail(cfg_.source, ": token id ", id, " is out of range for a vocabulary of ", vocabSize());
  return pieces_[static_cast<size_t>(id)];
}

std::optional<int> WordLevelTokenizer::idOf(const std::string& piece) const {
  for (const auto& a : cfg_.added)
    if (a.content == piece) return a.id;
  auto it = cfg_.vocab.find(piece);
  if (it == cfg_.vocab.end()) return std::nullopt;
  return it->second;
}

}  // namespace hs
