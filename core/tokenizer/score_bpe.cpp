#include "tokenizer/score_bpe.h"

#include "tokenizer/bpe_merge.h"
#include "tokenizer/token_text.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hs {

ScoreBpeTokenizer::ScoreBpeTokenizer(ScoreBpeConfig cfg) : cfg_(std::move(cfg)), specials_(cfg_.specials) {
  const size_t n = cfg_.pieces.size();
  if (cfg_.scores.size() != n)
    fail(cfg_.source, ": ", n, " tokens but ", cfg_.scores.size(), " scores (expected one score per token)");
  if (cfg_.control.empty()) {
    cfg_.control.assign(n, false);
    if (cfg_.bos >= 0 && static_cast<size_t>(cfg_.bos) < n) cfg_.control[cfg_.bos] = true;
    if (cfg_.eos >= 0 && static_cast<size_t>(cfg_.eos) < n) cfg_.control[cfg_.eos] = true;
  }
  if (cfg_.control.size() != n)
    fail(cfg_.source, ": ", n, " tokens but ", cfg_.control.size(), " token types");
  for (int special : {cfg_.bos, cfg_.eos, cfg_.unk})
    if (special >= static_cast<int>(n))
      fail(cfg_.source, ": special token id ", special, " is out of range (vocab size ", n, ")");
  // First occurrence wins when a piece repeats, as in llama2.c's sorted lookup of distinct strings.
  for (size_t i = 0; i < n; ++i)
    vocab_.emplace(cfg_.pieces[i], static_cast<int>(i));
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(tokentext::bytePiece(static_cast<unsigned char>(b)));
    byteIds_[b] = it == vocab_.end() ? -1 : it->second;
  }
  // Every pair (l, r) with pieces[l] + pieces[r] in the vocabulary, found by cutting each piece at every
  // byte: the merge loop then looks up integers instead of concatenating strings.
  for (const auto& [whole, merged] : vocab_) {
    for (size_t cut = 1; cut < whole.size(); ++cut) {
      auto l = vocab_.find(whole.substr(0, cut));
      if (l == vocab_.end()) continue;
      auto r = vocab_.find(whole.substr(cut));
      if (r == vocab_.end()) continue;
      merges_.add(l->second, r->second, 0, merged);
    }
  }
}

void ScoreBpeTokenizer::checkId(int id) const {
  if (id < 0 || id >= vocabSize())
    fail(cfg_.source, ": token id ", id, " is out of range (vocab size ", vocabSize(), ")");
}

void ScoreBpeTokenizer::encodeText(const std::string& text, std::vector<int>& out) const {
  std::vector<int> symbols;
  for (const std::string& c : utf8::chars(text)) {
    auto it = vocab_.find(c);
    if (it != vocab_.end()) {
      symbols.push_back(it->second);
      continue;
    }
    for (unsigned char b : c) {
      if (byteIds_[b] >= 0) {
        symbols.push_back(byteIds_[b]);
      } else if (cfg_.unk >= 0) {
        symbols.push_back(cfg_.unk);
      } else {
        fail(cfg_.source, ": byte ", tokentext::bytePiece(b),
             " is not in the vocabulary and there is no unk token");
      }
    }
  }
  // Highest score of the concatenated piece merges first (priority = -score).
  const auto lookup = [this](int l, int r) -> std::optional<MergeResult> {
    auto m = merges_.find(l, r);
    if (!m) return std::nullopt;
    return MergeResult{-static_cast<double>(cfg_.scores[m->id]), m->id};
  };
  for (int id : bpeMerge(std::move(symbols), lookup))
    out.push_back(id);
}

std::vector<int> ScoreBpeTokenizer::encode(const std::string& text, std::optional<bool> addBos) const {
  std::vector<int> out;
  if (addBos.value_or(cfg_.addBos)) {
    if (cfg_.bos < 0) fail(cfg_.source, ": BOS requested but the tokenizer has no BOS token");
    out.push_back(cfg_.bos);
  }
  bool afterSpecial = true;  // the text start counts as following a special token
  for (const TextSegment& seg : specials_.split(text)) {
    if (seg.tokenId >= 0) {
      out.push_back(seg.tokenId);
      afterSpecial = true;
      continue;
    }
    std::string s = (cfg_.addSpacePrefix && afterSpecial) ? " " + seg.text : seg.text;
    if (cfg_.space != " ") s = tokentext::replaceAll(s, " ", cfg_.space);
    encodeText(s, out);
    afterSpecial = false;
  }
  if (cfg_.addEos) {
    if (cfg_.eos < 0) fail(cfg_.source, ": add_eos is set but the tokenizer has no EOS token");
    out.push_back(cfg_.eos);
  }
  return out;
}

std::string ScoreBpeTokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes;
  bool first = true;  // no text-bearing piece emitted yet
  int prev = -1;
  for (int id : ids) {
    checkId(id);
    const int before = prev;
    prev = id;
    if (cfg_.control[id]) continue;
    const std::string& p = cfg_.pieces[id];
    std::string text;
    if (auto b = tokentext::parseBytePiece(p)) {
      text = std::string(1, static_cast<char>(*b));
    } else {
      text = cfg_.space == " " ? p : tokentext::replaceAll(p, cfg_.space, " ");
    }
    const bool strip =
        cfg_.stripSpaceOnlyAfterBos ? (before == cfg_.bos && cfg_.bos >= 0) : (first && cfg_.addSpacePrefix);
    if (strip && !text.empty() && text[0] == ' ') text.erase(0, 1);
    first = false;
    bytes += text;
  }
  return utf8::repair(bytes);
}

std::string ScoreBpeTokenizer::piece(int id) const {
  checkId(id);
  return tokentext::displayBytes(cfg_.pieces[id]);
}

std::optional<int> ScoreBpeTokenizer::idOf(const std::string& piece) const {
  auto it = vocab_.find(piece);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

}  // namespace hs
