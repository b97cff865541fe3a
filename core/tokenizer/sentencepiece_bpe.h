#pragma once
// SentencePiece-style BPE from a Hugging Face tokenizer.json (Llama-2, Mistral, Gemma): spaces become "▁"
// (by the normalizer or a Metaspace pre-tokenizer), a "▁" dummy prefix is prepended where the file says so,
// characters merge by merge rank, characters missing from the vocabulary fall
// back to their UTF-8 bytes as "<0xNN>" pieces. Decoding maps "▁" back to spaces, regroups byte pieces
// into UTF-8 and strips the dummy-prefix space once at the start.
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// Which text segments (the stretches between added tokens) get the "▁" dummy prefix.
enum class PrependScheme { Never, First, Always };

struct SentencePieceBpeConfig {
  std::unordered_map<std::string, int> vocab;  // "▁the" -> id
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<AddedToken> added;
  // Legacy Llama-2: Prepend("▁") + Replace(" ", "▁"), which prefix every stretch between added tokens;
  // Gemma: Replace only.
  Normalizer normalizer;
  // A Metaspace pre-tokenizer: spaces become "▁", and "▁" is prepended to a stretch that does not start
  // with one: every stretch (always), only the one at the start of the text (first), or none.
  bool metaspace = false;
  PrependScheme prepend = PrependScheme::Always;
  bool splitOnMetaSpace = false;  // Metaspace split=true: no merges across "▁" word starts
  bool byteFallback = true;
  int unk = -1;
  bool fuseUnk = false;
  int bos = -1, eos = -1;
  bool addBos = false;
  std::string source;
};

class SentencePieceBpeTokenizer : public Tokenizer {
 public:
  explicit SentencePieceBpeTokenizer(SentencePieceBpeConfig cfg);

  std::vector<int> encode(const std::string& text, std::optional<bool> addBos = std::nullopt) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  int vocabSize() const override { return static_cast<int>(pieces_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  int unkId() const override { return unk_; }
  bool addsBos() const override { return addBos_; }
  std::optional<int> idOf(const std::string& piece) const override;
  std::string kind() const override { return "bpe-sentencepiece"; }

 private:
  void checkId(int id) const;
  void encodeWord(const std::string& word, std::vector<int>& out) const;

  std::unordered_map<std::string, int> vocab_;
  std::vector<std::string> pieces_;
  std::vector<bool> present_, isAdded_;
  MergeRanks ranks_;
  int byteIds_[256];
  AddedTokenSplitter added_;
  Normalizer normalizer_;
  bool metaspace_;
  PrependScheme prepend_;
  bool dropDummyPrefix_;  // decode() drops one leading space (the dummy prefix)
  bool splitOnMetaSpace_, byteFallback_;
  int unk_;
  bool fuseUnk_;
  int bos_, eos_;
  bool addBos_;
  std::string source_;
};

}  // namespace hs
