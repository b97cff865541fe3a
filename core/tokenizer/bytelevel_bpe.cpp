#include "tokenizer/bytelevel_bpe.h"

#include <cstdio>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/token_text.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hs {

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(ByteLevelBpeConfig cfg)
    : MergeBpeTokenizer(cfg, bytelevel::charOfByte),
      addPrefixSpace_(cfg.addPrefixSpace),
      ignoreMerges_(cfg.ignoreMerges) {
  for (const std::string& re : cfg.splitRegexes)
    splitters_.push_back(std::make_unique<RegexSplitter>(re));
}

std::vector<int> ByteLevelBpeTokenizer::encodeWord(const std::string& raw) const {
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    auto it = cache_.find(raw);
    if (it != cache_.end()) return it->second;
  }
  std::vector<int> ids;
  if (ignoreMerges_) {
    auto it = vocab_.find(bytelevel::encodeBytes(raw));
    if (it != vocab_.end()) ids = {it->second};
  }
  if (ids.empty()) {
    std::vector<int> symbols;
    symbols.reserve(raw.size());
    for (unsigned char b : raw) {
      if (byteIds_[b] < 0) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02X", b);
        fail(source_, ": byte ", hex, " has no token (byte-level vocabulary lacks \"",
             bytelevel::charOfByte(b), "\")");
      }
      symbols.push_back(byteIds_[b]);
    }
    ids = bpeMerge(std::move(symbols), [this](int l, int r) { return ranks_.find(l, r); });
  }
  std::lock_guard<std::mutex> lock(cacheMutex_);
  if (cache_.size() > 200000) cache_.clear();  // bound memory on huge corpora
  cache_.emplace(raw, ids);
  return ids;
}

void ByteLevelBpeTokenizer::encodeSegment(const TextSegment& seg, std::vector<int>& out) const {
  std::string s = seg.text;
  if (addPrefixSpace_ && s[0] != ' ') s.insert(s.begin(), ' ');
  std::vector<std::string> words{s};
  for (const auto& splitter : splitters_) {
    std::vector<std::string> finer;
    for (const std::string& w : words)
      for (std::string& p : splitter->split(w))
        finer.push_back(std::move(p));
    words = std::move(finer);
  }
  for (const std::string& w : words)
    for (int id : encodeWord(w))
      out.push_back(id);
}

std::string ByteLevelBpeTokenizer::tokenBytes(int id) const {
  checkId(id);
  if (isAdded_[id]) return pieces_[id];
  auto raw = bytelevel::decodeChars(pieces_[id]);
  // Pieces outside the byte alphabet do not occur in byte-level vocabularies; keep them verbatim.
  return raw ? *raw : pieces_[id];
}

std::string ByteLevelBpeTokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes;
  for (size_t i = firstDecoded(ids); i < ids.size(); ++i)
    bytes += tokenBytes(ids[i]);
  return utf8::repair(bytes);
}

std::string ByteLevelBpeTokenizer::piece(int id) const {
  return tokentext::displayBytes(tokenBytes(id));
}

}  // namespace hs
