#pragma once
// Added / special tokens ("<|endoftext|>", "<s>", "<|begin_of_text|>") are cut out of the text before any
// normalisation or BPE and map straight to their ids, as Hugging Face tokenizers and llama.cpp do.
#include <string>
#include <unordered_map>
#include <vector>

namespace hs {

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
  bool lstrip = false;  // also swallow whitespace to the left of the match
  bool rstrip = false;  // also swallow whitespace to the right of the match
};

// One stretch of the input: either plain text to tokenize, or an added token's id.
struct TextSegment {
  std::string text;  // plain text (empty for a token segment)
  int tokenId = -1;  // >= 0: an added token
};

class AddedTokenSplitter {
 public:
  AddedTokenSplitter() = default;
  explicit AddedTokenSplitter(std::vector<AddedToken> tokens);

  // Leftmost-longest matching of the added tokens; plain-text segments are never empty.
  std::vector<TextSegment> split(const std::string& text) const;
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  // First byte -> indices into tokens_, longest content first.
  std::unordered_map<unsigned char, std::vector<size_t>> byFirstByte_;
};

}  // namespace hs
