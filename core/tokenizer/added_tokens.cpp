#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace hs {
namespace {

bool isAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    byFirstByte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& [byte, list] : byFirstByte_) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::vector<TextSegment> AddedTokenSplitter::split(const std::string& text) const {
  std::vector<TextSegment> out;
  if (byFirstByte_.empty()) {
    if (!text.empty()) out.push_back({text, -1});
    return out;
  }
  size_t plainStart = 0;
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* match = nullptr;
    auto it = byFirstByte_.find(static_cast<unsigned char>(text[i]));
    if (it != byFirstByte_.end()) {
      for (size_t idx : it->second) {
        const std::string& c = tokens_[idx].content;
        if (text.compare(i, c.size(), c) == 0) {
          match = &tokens_[idx];
          break;  // sorted longest first
        }
      }
    }
    if (!match) {
      ++i;
      continue;
    }
    size_t plainEnd = i;
    if (match->lstrip)
      while (plainEnd > plainStart && isAsciiSpace(text[plainEnd - 1]))
        --plainEnd;
    if (plainEnd > plainStart) out.push_back({text.substr(plainStart, plainEnd - plainStart), -1});
    out.push_back({std::string(), match->id});
    i += match->content.size();
    if (match->rstrip)
      while (i < text.size() && isAsciiSpace(text[i]))
        ++i;
    plainStart = i;
  }
  if (plainStart < text.size()) out.push_back({text.substr(plainStart), -1});
  return out;
}

}  // namespace hs
