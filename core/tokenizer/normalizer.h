#pragma once
// The normalizers of a Hugging Face tokenizer.json that HeadScope applies, in file order: the Unicode
// normal forms (NFC for Qwen2/Qwen3; NFD, NFKC, NFKD), Prepend (Llama-2's "▁" dummy prefix) and Replace of a
// literal string (" " -> "▁" of Llama-2 and Gemma). They run on each stretch of text between the added tokens
// that are matched in the raw text, as the library runs them.
//
// Normal forms follow the Unicode algorithm with the tables of unicode_tables.cpp (Unicode
// tables::kUnicodeVersion); bytes that are not valid UTF-8 pass through unchanged and block composition.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hs {

namespace unicode {

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(const std::string& utf8, NormalForm form);

// Rust's char::is_whitespace (the White_Space property), which the library's WhitespaceSplit and the
// lstrip / rstrip of added tokens use.
bool isWhitespace(char32_t cp);

// The codepoint at s[i] and its length in bytes; an invalid byte is returned as (0xFFFFFFFF, 1).
std::pair<char32_t, size_t> decodeAt(const std::string& s, size_t i);
// The start of the character that ends right before byte i (i > 0).
size_t previousCharStart(const std::string& s, size_t i);

}  // namespace unicode

struct NormalizerStep {
  enum class Kind { NFC, NFD, NFKC, NFKD, Prepend, Replace } kind;
  std::string text;  // Prepend: what is prepended; Replace: the literal pattern
  std::string with;  // Replace: the replacement
};

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}
  // Prepend adds nothing to an empty string; Replace replaces every non-overlapping occurrence, left to
  // right.
  std::string apply(const std::string& text) const;
  bool empty() const { return steps_.empty(); }
  bool prepends(const std::string& text) const;  // has a Prepend step of exactly `text`

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace hs
