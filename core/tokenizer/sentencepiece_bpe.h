#pragma once
// SentencePiece-style BPE from a Hugging Face tokenizer.json (Llama-2, Mistral, Gemma): spaces become "▁"
// (by the normalizer or a Metaspace pre-tokenizer), a "▁" dummy prefix is prepended where the file says so,
// characters merge by merge rank, characters missing from the vocabulary fall
// back to their UTF-8 bytes as "<0xNN>" pieces. Decoding maps "▁" back to spaces, regroups byte pieces
// into UTF-8 and strips the dummy-prefix space once at the start.
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace hs {

// Which text segments (the stretches between added tokens) get the "▁" dummy prefix.
enum class PrependScheme { Never, First, Always };

// vocab: "▁the" -> id. normalizer: legacy Llama-2's Prepend("▁") + Replace(" ", "▁"), which prefix every
// stretch between added tokens; Gemma's Replace only.
struct SentencePieceBpeConfig : MergeBpeConfig {
  // A Metaspace pre-tokenizer: spaces become "▁", and "▁" is prepended to a stretch that does not start
  // with one: every stretch (always), only the one at the start of the text (first), or none.
  bool metaspace = false;
  PrependScheme prepend = PrependScheme::Always;
  bool splitOnMetaSpace = false;  // Metaspace split=true: no merges across "▁" word starts
  bool byteFallback = true;
  int unk = -1;
  bool fuseUnk = false;
};

class SentencePieceBpeTokenizer : public MergeBpeTokenizer {
 public:
  explicit SentencePieceBpeTokenizer(SentencePieceBpeConfig cfg);

  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  int unkId() const override { return unk_; }
  std::string kind() const override { return "bpe-sentencepiece"; }

 private:
  void encodeSegment(const TextSegment& seg, std::vector<int>& out) const override;
  void encodeWord(const std::string& word, std::vector<int>& out) const;

  bool metaspace_;
  PrependScheme prepend_;
  bool dropDummyPrefix_;  // decode() drops one leading space (the dummy prefix)
  bool splitOnMetaSpace_, byteFallback_;
  int unk_;
  bool fuseUnk_;
};

}  // namespace hs
