#include "tokenizer/tokenizer.h"

#include "tokenizer/vocab_setup.h"
#include "util/error.h"

namespace hs {

MergeBpeTokenizer::MergeBpeTokenizer(MergeBpeConfig& cfg,
                                     const std::function<std::string(unsigned char)>& pieceOfByte)
    : vocab_(std::move(cfg.vocab)),
      added_(
          cfg.added, cfg.normalizer.empty()
                         ? AddedTokenSplitter::Normalize()
                         : [n = cfg.normalizer](const std::string& text) { return n.apply(text); }),
      bos_(cfg.bos),
      eos_(cfg.eos),
      addBos_(cfg.addBos),
      source_(std::move(cfg.source)) {
  vocabsetup::buildIdTables(vocab_, cfg.added, source_, pieces_, present_, isAdded_);
  vocabsetup::buildByteIds(vocab_, pieceOfByte, byteIds_);
  vocabsetup::buildMergeRanks(vocab_, cfg.merges, source_, ranks_);
}

std::vector<int> MergeBpeTokenizer::encode(const std::string& text, std::optional<bool> addBos) const {
  std::vector<int> out;
  if (addBos.value_or(addBos_)) {
    if (bos_ < 0) fail(source_, ": BOS requested but the tokenizer has no BOS token");
    out.push_back(bos_);
  }
  for (const TextSegment& seg : added_.split(text)) {
    if (seg.tokenId >= 0)
      out.push_back(seg.tokenId);
    else
      encodeSegment(seg, out);
  }
  return out;
}

void MergeBpeTokenizer::checkId(int id) const {
  vocabsetup::checkId(id, present_, source_);
}

size_t MergeBpeTokenizer::firstDecoded(const std::vector<int>& ids) const {
  return (addBos_ && !ids.empty() && ids[0] == bos_) ? 1 : 0;
}

std::optional<int> MergeBpeTokenizer::idOf(const std::string& piece) const {
  return vocabsetup::idOf(vocab_, added_, piece);
}

}  // namespace hs
