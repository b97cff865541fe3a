#pragma once
// Tokenizers: text <-> token ids for every checkpoint family HeadScope loads.
//
// Conventions shared by all implementations:
// - encode() never prepends anything the tokenizer's own configuration does not ask for (BOS per
//   tokenizer_config.json add_bos_token / post_processor template / the llama2.c rule / GGUF add_bos),
//   unless the caller overrides it with addBos. Added/special tokens written literally in the text
//   ("<|endoftext|>", "<s>") are split out first and map to their ids.
// - decode() returns valid UTF-8: byte sequences that are not valid UTF-8 become U+FFFD (one per maximal
//   invalid subsequence, as Python's errors="replace"). The BOS that encode() itself adds is not rendered
//   (a leading BOS when addsBos()), so decode(encode(s)) == s for valid UTF-8 text. Other added tokens are
//   rendered as their content, except control tokens of llama2.c / GGUF vocabularies (BOS, EOS), which are
//   rendered as nothing (as run.c and llama.cpp do). The SentencePiece dummy-prefix space is dropped once
//   (llama2.c: only right after BOS, like run.c).
//   Ids outside [0, vocabSize()) are an error naming the id and the vocabulary size.
// - piece() is for display: byte-level pieces are shown as their decoded bytes ("Ġthe" -> " the", bytes
//   that are not valid UTF-8 on their own as "<0xNN>"), SentencePiece pieces as stored ("▁the", "<0x0A>").
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/normalizer.h"

namespace hs {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Encode exactly what the tokenizer's own config says (BOS when add_bos_token / llama2.c rule), unless
  // addBos overrides. Special/added tokens in the text are split out before BPE and map to their ids.
  virtual std::vector<int> encode(const std::string& text,
                                  std::optional<bool> addBos = std::nullopt) const = 0;
  // UTF-8 text; invalid bytes -> U+FFFD; a leading BOS is dropped.
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  // Readable piece for display (bytes decoded, "▁" shown as-is).
  virtual std::string piece(int id) const = 0;
  virtual int vocabSize() const = 0;
  virtual int bosId() const { return -1; }  // -1 when none
  virtual int eosId() const { return -1; }  // -1 when none
  virtual int unkId() const { return -1; }  // what text outside the vocabulary becomes; -1 when none
  virtual bool addsBos() const { return false; }
  // The raw vocabulary string ("Ġthe", "▁the", " the" for llama2.c) or an added token's content.
  virtual std::optional<int> idOf(const std::string& piece) const = 0;
  // "bpe-bytelevel", "bpe-sentencepiece", "llama2c", "gguf-llama".
  virtual std::string kind() const = 0;
};

// What the merge-rank BPE tokenizers (byte-level and SentencePiece-style) are built from.
struct MergeBpeConfig {
  std::unordered_map<std::string, int> vocab;               // piece -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added;
  Normalizer normalizer;  // applied to the text between the added tokens
  int bos = -1, eos = -1;
  bool addBos = false;
  std::string source;  // for error messages
};

// The part the merge-rank BPE tokenizers share: the id tables, merge ranks and byte ids built from a
// MergeBpeConfig, and an encode() that adds the BOS, splits out the added tokens and hands each text
// segment between them to encodeSegment().
class MergeBpeTokenizer : public Tokenizer {
 public:
  std::vector<int> encode(const std::string& text, std::optional<bool> addBos = std::nullopt) const override;
  int vocabSize() const override { return static_cast<int>(pieces_.size()); }
  int bosId() const override { return bos_; }
  int eosId() const override { return eos_; }
  bool addsBos() const override { return addBos_; }
  std::optional<int> idOf(const std::string& piece) const override;

 protected:
  // pieceOfByte(b): the vocabulary piece that stands for byte b. Moves cfg.vocab and cfg.source. Throws
  // hs::Error naming cfg.source on a bad id or a merge of a piece missing from the vocabulary.
  MergeBpeTokenizer(MergeBpeConfig& cfg, const std::function<std::string(unsigned char)>& pieceOfByte);

  // Appends the ids of one text segment (never an added token).
  virtual void encodeSegment(const TextSegment& seg, std::vector<int>& out) const = 0;
  void checkId(int id) const;
  // The index decode() starts at: past a leading BOS when encode() adds one itself.
  size_t firstDecoded(const std::vector<int>& ids) const;

  std::unordered_map<std::string, int> vocab_;
  std::vector<std::string> pieces_;  // id -> vocabulary piece (or added content)
  std::vector<bool> present_, isAdded_;
  MergeRanks ranks_;
  int byteIds_[256];
  AddedTokenSplitter added_;
  int bos_, eos_;
  bool addBos_;
  std::string source_;
};

// Load by path: a folder (tokenizer.json [+ tokenizer_config.json], or vocab.json+merges.txt), a
// tokenizer.json, a vocab.json (merges.txt beside it), a llama2.c tok.bin (any other file: try tok.bin
// format, with a clear error naming the file if nothing fits). Errors name the file and the problem.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& path);

// From GGUF metadata, already extracted to plain values by the loader (tokenizer.ggml.*):
struct GgufVocab {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece BPE w/ scores) or "gpt2"
  std::string
      pre;  // tokenizer.ggml.pre (split regex family: "default", "llama3"/"llama-bpe", "qwen2", "gpt-2", ...)
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int> token_types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;
  int bos = -1, eos = -1, unk = -1, pad = -1;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix (SentencePiece dummy prefix)
  std::string source;            // file path for error messages
};
std::unique_ptr<Tokenizer> tokenizerFromGguf(const GgufVocab& v);

}  // namespace hs
