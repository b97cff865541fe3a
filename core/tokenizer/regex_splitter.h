#pragma once
// Pre-tokenisation by a Unicode-aware regex (PCRE2 with UTF + UCP, JIT when available): the text is cut
// into the matches and the gaps between them, both kept ("Isolated" in Hugging Face terms). Invalid UTF-8
// is accepted (PCRE2_MATCH_INVALID_UTF): invalid bytes never match and end up in the gaps.
#include <memory>
#include <string>
#include <vector>

namespace hs {

// The split regex of GPT-2's encoder.py (also HF ByteLevel with use_regex=true).
extern const char* const kGpt2SplitRegex;
// Llama-3 (tiktoken cl100k-style, numbers in groups of up to 3).
extern const char* const kLlama3SplitRegex;
// Qwen2/Qwen3 (like Llama-3 but single digits).
extern const char* const kQwen2SplitRegex;

class RegexSplitter {
 public:
  // literal: match the pattern as a plain string. Throws hs::Error naming the pattern when it does not
  // compile.
  explicit RegexSplitter(const std::string& pattern, bool literal = false);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Matches and gaps in text order; concatenated they give back text exactly. No empty pieces.
  std::vector<std::string> split(const std::string& text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

}  // namespace hs
