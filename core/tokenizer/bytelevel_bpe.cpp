#include "tokenizer/bytelevel_bpe.h"

#include <cstdio>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/token_text.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hs {

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(ByteLevelBpeConfig cfg)
    : vocab_(std::move(cfg.vocab)),
      added_(cfg.added),
      addPrefixSpace_(cfg.addPrefixSpace),
      ignoreMerges_(cfg.ignoreMerges),
      bos_(cfg.bos),
      eos_(cfg.eos),
      addBos_(cfg.addBos),
      source_(std::move(cfg.source)) {
  int maxId = -1;
  for (const auto& [p, id] : vocab_) {
    if (id < 0) fail(source_, ": vocabulary entry \"", p, "\" has negative id ", id);
    maxId = std::max(maxId, id);
  }
  for (const AddedToken& t : cfg.added)
    maxId = std::max(maxId, t.id);
  pieces_.assign(maxId + 1, std::string());
  present_.assign(maxId + 1, false);
  isAdded_.assign(maxId + 1, false);
  for (const auto& [p, id] : vocab_) {
    pieces_[id] = p;
    present_[id] = true;
  }
  // An added token may reuse a vocabulary id (GPT-2's "<|endoftext|>"); its text is its content.
  for (const AddedToken& t : cfg.added) {
    if (t.id < 0) fail(source_, ": added token \"", t.content, "\" has negative id ", t.id);
    pieces_[t.id] = t.content;
    present_[t.id] = true;
    isAdded_[t.id] = true;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(bytelevel::charOfByte(static_cast<unsigned char>(b)));
    byteIds_[b] = it == vocab_.end() ? -1 : it->second;
  }
  for (size_t r = 0; r < cfg.merges.size(); ++r) {
    const auto& [a, b] = cfg.merges[r];
    auto ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || im == vocab_.end())
      fail(source_, ": merge ", r, " \"", a, " ", b, "\" uses a piece that is not in the vocabulary (\"",
           ia == vocab_.end() ? a : (ib == vocab_.end() ? b : a + b), "\")");
    ranks_.add(ia->second, ib->second, static_cast<int>(r), im->second);
  }
  for (const std::string& re : cfg.splitRegexes)
    splitters_.push_back(std::make_unique<RegexSplitter>(re));
}

void ByteLevelBpeTokenizer::checkId(int id) const {
  if (id < 0 || id >= vocabSize())
    fail(source_, ": token id ", id, " is out of range (vocab size ", vocabSize(), ")");
  if (!present_[id])
    fail(source_, ": token id ", id, " has no entry in the vocabulary (vocab size ", vocabSize(), ")");
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

std::vector<int> ByteLevelBpeTokenizer::encode(const std::string& text, std::optional<bool> addBos) const {
  std::vector<int> out;
  if (addBos.value_or(addBos_)) {
    if (bos_ < 0) fail(source_, ": BOS requested but the tokenizer has no BOS token");
    out.push_back(bos_);
  }
  for (const TextSegment& seg : added_.split(text)) {
    if (seg.tokenId >= 0) {
      out.push_back(seg.tokenId);
      continue;
    }
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
  return out;
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
  size_t start = (addBos_ && !ids.empty() && ids[0] == bos_) ? 1 : 0;
  for (size_t i = start; i < ids.size(); ++i)
    bytes += tokenBytes(ids[i]);
  return utf8::repair(bytes);
}

std::string ByteLevelBpeTokenizer::piece(int id) const {
  return tokentext::displayBytes(tokenBytes(id));
}

std::optional<int> ByteLevelBpeTokenizer::idOf(const std::string& piece) const {
  auto it = vocab_.find(piece);
  if (it != vocab_.end()) return it->second;
  for (const AddedToken& t : added_.tokens())
    if (t.content == piece) return t.id;
  return std::nullopt;
}

}  // namespace hs
