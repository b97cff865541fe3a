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

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct ByteLevelBpeConfig {
  std::unordered_map<std::string, int> vocab;               // byte-mapped piece -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added;
  Normalizer normalizer;                  // applied between the added tokens, before the split regexes
  std::vector<std::string> splitRegexes;  // applied one after the other ("Isolated"); empty: no split
  bool addPrefixSpace = false;            // ByteLevel add_prefix_space: " " before text not starting with one
  bool ignoreMerges = false;              // HF ignore_merges: a piece found whole in the vocab is one token
  int bos = -1, eos = -1;
  bool addBos = false;
  std::string source;  // for error messages
};

class ByteLevelBpeTokenizer : public Tokenizer {
 public:
  // Throws hs::Error naming cfg.source when a merge refers to a piece missing from the vocabulary.
  explicit ByteLevelBpeTokenizer(ByteLevelBpeConfig cfg);

  std::vector<int> encode(const std::string& text, std::optional<bool> addBos = std::nullopt) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  int vocabSize() const override { return static_cast<int>(pieces_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  bool addsBos() const override { return addBos_; }
  std::optional<int> idOf(const std::string& piece) const override;
  std::string kind() const override { return "bpe-bytelevel"; }

  // The raw bytes of a token (an added token's content as is).
  std::string tokenBytes(int id) const;

 private:
  std::vector<int> encodeWord(const std::string& mapped) const;
  void checkId(int id) const;

  std::unordered_map<std::string, int> vocab_;
  std::vector<std::string> pieces_;  // id -> byte-mapped piece (or added content)
  std::vector<bool> isAdded_;
  std::vector<bool> present_;
  MergeRanks ranks_;
  int byteIds_[256];
  AddedTokenSplitter added_;
  std::vector<std::unique_ptr<RegexSplitter>> splitters_;
  bool addPrefixSpace_, ignoreMerges_;
  int bos_, eos_;
  bool addBos_;
  std::string source_;
  // Word -> ids cache; encode() is const and may run on several threads.
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace hs
