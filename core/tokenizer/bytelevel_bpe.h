#pragma once
// Byte-level BPE (GPT-2, Llama-3, Qwen2/3): added tokens split out, the text normalized (Qwen2's NFC), cut by
// the model's split regex, each piece's bytes mapped to GPT-2's printable characters, then merged by merge
// rank. Encoding works on bytes, so any input (even invalid UTF-8) encodes losslessly; decode() repairs
// invalid UTF-8 with U+FFFD.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/regex_splitter.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// vocab: byte-mapped piece -> id; normalizer: applied before the split regexes.
struct ByteLevelBpeConfig : MergeBpeConfig {
  std::vector<std::string> splitRegexes;  // applied one after the other ("Isolated"); empty: no split
  bool addPrefixSpace = false;            // ByteLevel add_prefix_space: " " before text not starting with one
  bool ignoreMerges = false;              // HF ignore_merges: a piece found whole in the vocab is one token
};

class ByteLevelBpeTokenizer : public MergeBpeTokenizer {
 public:
  // Throws hs::Error naming cfg.source when a merge refers to a piece missing from the vocabulary.
  explicit ByteLevelBpeTokenizer(ByteLevelBpeConfig cfg);

  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  std::string kind() const override { return "bpe-bytelevel"; }

  // The raw bytes of a token (an added token's content as is).
  std::string tokenBytes(int id) const;

 private:
  void encodeSegment(const TextSegment& seg, std::vector<int>& out) const override;
  std::vector<int> encodeWord(const std::string& mapped) const;

  std::vector<std::unique_ptr<RegexSplitter>> splitters_;
  bool addPrefixSpace_, ignoreMerges_;
  // Word -> ids cache; encode() is const and may run on several threads.
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace hs
