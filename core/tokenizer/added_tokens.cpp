#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/normalizer.h"

namespace hs {

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedToken> tokens, Normalize normalize)
    : tokens_(std::move(tokens)), normalize_(std::move(normalize)) {
  for (const AddedToken& t : tokens_) {
    if (t.content.empty()) continue;
    if (!t.normalized) {
      raw_.tokens.push_back(t);
    } else {
      AddedToken n = t;
      if (normalize_) n.content = normalize_(t.content);
      if (!n.content.empty()) normalized_.tokens.push_back(std::move(n));
    }
  }
  raw_.build();
  normalized_.build();
}

void AddedTokenSplitter::Matcher::build() {
  for (size_t i = 0; i < tokens.size(); ++i)
    byFirstByte[static_cast<unsigned char>(tokens[i].content[0])].push_back(i);
  for (auto& [byte, list] : byFirstByte) {
    std::stable_sort(list.begin(), list.end(),
                     [&](size_t a, size_t b) { return tokens[a].content.size() > tokens[b].content.size(); });
  }
}

void AddedTokenSplitter::Matcher::split(const std::string& text, bool textAtStart,
                                        std::vector<TextSegment>& out) const {
  size_t plainStart = 0;
  size_t i = 0;
  auto emitText = [&](size_t begin, size_t end) {
    if (end > begin) out.push_back({text.substr(begin, end - begin), -1, textAtStart && begin == 0});
  };
  while (i < text.size() && !byFirstByte.empty()) {
    const AddedToken* match = nullptr;
    auto it = byFirstByte.find(static_cast<unsigned char>(text[i]));
    if (it != byFirstByte.end()) {
      for (size_t idx : it->second) {
        const std::string& c = tokens[idx].content;
        if (text.compare(i, c.size(), c) == 0) {
          match = &tokens[idx];
          break;  // sorted longest first
        }
      }
    }
    if (!match) {
      ++i;
      continue;
    }
    size_t plainEnd = i;
    if (match->lstrip) {
      while (plainEnd > plainStart) {
        const size_t prev = unicode::previousCharStart(text, plainEnd);
        if (!unicode::isWhitespace(unicode::decodeAt(text, prev).first)) break;
        plainEnd = prev;
      }
    }
    emitText(plainStart, plainEnd);
    out.push_back({std::string(), match->id, false});
    i += match->content.size();
    if (match->rstrip) {
      while (i < text.size()) {
        const auto [cp, n] = unicode::decodeAt(text, i);
        if (!unicode::isWhitespace(cp)) break;
        i += n;
      }
    }
    plainStart = i;
  }
  emitText(plainStart, text.size());
}

std::vector<TextSegment> AddedTokenSplitter::split(const std::string& text) const {
  std::vector<TextSegment> rawPieces, out;
  raw_.split(text, true, rawPieces);
  for (TextSegment& piece : rawPieces) {
    if (piece.tokenId >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    const std::string normalized = normalize_ ? normalize_(piece.text) : piece.text;
    normalized_.split(normalized, piece.atStart, out);
  }
  return out;
}

}  // namespace hs
