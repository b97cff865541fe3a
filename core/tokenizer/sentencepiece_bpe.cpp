#include "tokenizer/sentencepiece_bpe.h"

#include "tokenizer/token_text.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hs {

using tokentext::kMetaSpace;

SentencePieceBpeTokenizer::SentencePieceBpeTokenizer(SentencePieceBpeConfig cfg)
    : MergeBpeTokenizer(cfg, tokentext::bytePiece),
      metaspace_(cfg.metaspace),
      prepend_(cfg.prepend),
      dropDummyPrefix_(cfg.normalizer.prepends(kMetaSpace) ||
                       (cfg.metaspace && cfg.prepend != PrependScheme::Never)),
      splitOnMetaSpace_(cfg.splitOnMetaSpace),
      byteFallback_(cfg.byteFallback),
      unk_(cfg.unk),
      fuseUnk_(cfg.fuseUnk) {
  // An added token matched in the normalized text is that text's token: the library decodes it as its
  // normalized content (Llama-2's "Hello" as "▁Hello", a space after decoding).
  for (const AddedToken& t : cfg.added)
    if (t.normalized) pieces_[static_cast<size_t>(t.id)] = cfg.normalizer.apply(t.content);
}

void SentencePieceBpeTokenizer::encodeWord(const std::string& word, std::vector<int>& out) const {
  std::vector<int> symbols;
  for (const std::string& c : utf8::chars(word)) {
    auto it = vocab_.find(c);
    if (it != vocab_.end()) {
      symbols.push_back(it->second);
      continue;
    }
    bool allBytes = byteFallback_;
    for (unsigned char b : c)
      allBytes = allBytes && byteIds_[b] >= 0;
    if (allBytes) {
      for (unsigned char b : c)
        symbols.push_back(byteIds_[b]);
    } else {
      if (unk_ < 0)
        fail(source_, ": character \"", utf8::repair(c),
             "\" is not in the vocabulary and there is no unk token");
      symbols.push_back(unk_);
    }
  }
  std::vector<int> merged = bpeMerge(std::move(symbols), [this](int l, int r) { return ranks_.find(l, r); });
  // fuse_unk joins runs of unknown characters within this word only, as the library does.
  const size_t wordStart = out.size();
  for (int id : merged) {
    if (fuseUnk_ && id == unk_ && out.size() > wordStart && out.back() == unk_) continue;
    out.push_back(id);
  }
}

void SentencePieceBpeTokenizer::encodeSegment(const TextSegment& seg, std::vector<int>& out) const {
  // seg.text is normalized already (Llama-2's Prepend + Replace, Gemma's Replace).
  std::string s = seg.text;
  if (metaspace_) {
    s = tokentext::replaceAll(std::move(s), " ", kMetaSpace);
    const bool prepend =
        prepend_ == PrependScheme::Always || (prepend_ == PrependScheme::First && seg.atStart);
    if (prepend && s.compare(0, kMetaSpace.size(), kMetaSpace) != 0) s = kMetaSpace + s;
  }
  if (!splitOnMetaSpace_) {
    encodeWord(s, out);
    return;
  }
  // Each word starts at a "▁" (the meta space stays with the word that follows it).
  size_t begin = 0;
  while (begin < s.size()) {
    size_t next = s.find(
        kMetaSpace, begin + (s.compare(begin, kMetaSpace.size(), kMetaSpace) == 0 ? kMetaSpace.size() : 0));
    if (next == std::string::npos) next = s.size();
    encodeWord(s.substr(begin, next - begin), out);
    begin = next;
  }
}

std::string SentencePieceBpeTokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes;
  for (size_t i = firstDecoded(ids); i < ids.size(); ++i) {
    const int id = ids[i];
    checkId(id);
    if (isAdded_[id]) {
      bytes += tokentext::replaceAll(pieces_[id], kMetaSpace, " ");  // the decoder's Replace runs on them too
    } else if (auto b = tokentext::parseBytePiece(pieces_[id])) {
      bytes += static_cast<char>(*b);
    } else {
      bytes += tokentext::replaceAll(pieces_[id], kMetaSpace, " ");
    }
  }
  // The dummy prefix is not part of the text: drop it once.
  if (dropDummyPrefix_ && !bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
  return utf8::repair(bytes);
}

std::string SentencePieceBpeTokenizer::piece(int id) const {
  checkId(id);
  return pieces_[id];
}

}  // namespace hs
