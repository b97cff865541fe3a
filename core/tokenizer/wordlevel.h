#pragma once
// Hugging Face WordLevel model with a WhitespaceSplit pre-tokenizer: every word separated by Unicode
// whitespace (the library's char::is_whitespace) is one vocabulary entry, after the normalizer if any (the
// toy model's tokenizer.json is of this kind). Unknown words map to unk_token, or are an error naming the
// word when the tokenizer has none.
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct WordLevelConfig {
  std::unordered_map<std::string, int> vocab;
  std::vector<AddedToken> added;
  Normalizer normalizer;
  int unk = -1, bos = -1, eos = -1;
  bool addBos = false;
  std::string source;  // file path for error messages
};

class WordLevelTokenizer : public Tokenizer {
 public:
  explicit WordLevelTokenizer(WordLevelConfig cfg);
  std::vector<int> encode(const std::string& text, std::optional<bool> addBos = std::nullopt) const override;
  std::string decode(const std::vector<int>& ids) const override;  // pieces joined by single spaces
  std::string piece(int id) const override;
  int vocabSize() const override { return static_cast<int>(pieces_.size()); }
  int bosId() const override { return cfg_.bos; }
  int eosId() const override { return cfg_.eos; }
  int unkId() const override { return cfg_.unk; }
  bool addsBos() const override { return cfg_.addBos; }
  std::optional<int> idOf(const std::string& piece) const override;
  std::string kind() const override { return "wordlevel"; }

 private:
  WordLevelConfig cfg_;
  std::vector<std::string> pieces_;  // id -> word
  AddedTokenSplitter splitter_;
};

}  // namespace hs
