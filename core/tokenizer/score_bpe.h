#pragma once
// Score-based SentencePiece BPE, as llama2.c run.c `encode` and llama.cpp's llm_tokenizer_spm do it:
// a dummy-prefix space, each UTF-8 character looked up (unknown characters fall back to "<0xNN>" byte
// pieces), then the adjacent pair whose concatenation is a vocabulary piece with the highest score merges
// first, until no pair merges. Used for llama2.c tok.bin and GGUF "llama" vocabularies.
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct ScoreBpeConfig {
  std::vector<std::string> pieces;   // id -> piece as stored
  std::vector<float> scores;         // id -> score (higher merges first)
  std::vector<bool> control;         // id -> control token (rendered as nothing); empty: BOS and EOS
  std::vector<AddedToken> specials;  // split out of the text before BPE (GGUF control / user-defined)
  std::string space = " ";           // how pieces spell a space: " " (llama2.c) or "▁" (GGUF)
  bool addSpacePrefix = true;        // dummy prefix before text at the start or after a special token
  int bos = -1, eos = -1, unk = -1;
  bool addBos = true, addEos = false;
  // run.c drops the leading space of the piece that follows BOS; llama.cpp that of the first piece.
  bool stripSpaceOnlyAfterBos = false;
  std::string kind;    // "llama2c" or "gguf-llama"
  std::string source;  // file, for error messages
};

class ScoreBpeTokenizer : public Tokenizer {
 public:
  explicit ScoreBpeTokenizer(ScoreBpeConfig cfg);

  std::vector<int> encode(const std::string& text, std::optional<bool> addBos = std::nullopt) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  int vocabSize() const override { return static_cast<int>(cfg_.pieces.size()); }
  int bosId() const override { return cfg_.bos; }
  int eosId() const override { return cfg_.eos; }
  int unkId() const override { return cfg_.unk; }
  bool addsBos() const override { return cfg_.addBos; }
  std::optional<int> idOf(const std::string& piece) const override;
  std::string kind() const override { return cfg_.kind; }

 private:
  void checkId(int id) const;
  void encodeText(const std::string& text, std::vector<int>& out) const;

  ScoreBpeConfig cfg_;
  std::unordered_map<std::string, int> vocab_;
  int byteIds_[256];
  MergeRanks merges_;  // (left, right) -> merged id (rank unused: priority comes from scores)
  AddedTokenSplitter specials_;
};

}  // namespace hs
