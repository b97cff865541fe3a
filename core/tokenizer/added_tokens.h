#pragma once
// Added / special tokens ("<|endoftext|>", "<s>", "<|begin_of_text|>") are cut out of the text before BPE and
// map straight to their ids, as Hugging Face tokenizers and llama.cpp do. As in the `tokenizers` library,
// tokens with normalized=false are matched in the raw text first; each stretch between them is then
// normalized, and tokens with normalized=true (their content normalized the same way) are matched in that.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hs {

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
  bool lstrip = false;      // also swallow whitespace to the left of the match
  bool rstrip = false;      // also swallow whitespace to the right of the match
  bool normalized = false;  // matched in the normalized text instead of the raw text
};

// One stretch of the input: either text to tokenize (normalized when the splitter was given a normalizer),
// or an added token's id.
struct TextSegment {
  std::string text;      // plain text (empty for a token segment)
  int tokenId = -1;      // >= 0: an added token
  bool atStart = false;  // the text begins at offset 0 of the input (Metaspace prepend_scheme "first")
};

class AddedTokenSplitter {
 public:
  using Normalize = std::function<std::string(const std::string&)>;

  AddedTokenSplitter() = default;
  // normalize: the tokenizer's normalizer (empty: none); applied to the text between raw-matched tokens
  // and to the content of normalized=true tokens.
  explicit AddedTokenSplitter(std::vector<AddedToken> tokens, Normalize normalize = {});

  // Leftmost-longest matching of the added tokens (raw ones, then normalized ones); text segments are
  // never empty. Whitespace swallowed by lstrip / rstrip is Unicode whitespace.
  std::vector<TextSegment> split(const std::string& text) const;
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Matcher {
    std::vector<AddedToken> tokens;  // content as matched (normalized for the normalized matcher)
    // First byte -> indices into tokens, longest content first.
    std::unordered_map<unsigned char, std::vector<size_t>> byFirstByte;
    void build();
    // Appends to out: text pieces (atStart for the piece at offset 0 when textAtStart) and tokens.
    void split(const std::string& text, bool textAtStart, std::vector<TextSegment>& out) const;
  };
  std::vector<AddedToken> tokens_;
  Normalize normalize_;
  Matcher raw_, normalized_;
};

}  // namespace hs
