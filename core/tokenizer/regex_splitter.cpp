#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_splitter.h"

#include <pcre2.h>

#include "util/error.h"

namespace hs {

const char* const kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (literal) options |= PCRE2_LITERAL;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                              &errorCode, &errorOffset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(errorCode, message, sizeof(message));
    fail("split regex does not compile at offset ", errorOffset, ": ", reinterpret_cast<const char*>(message),
         " (pattern: ", pattern, ")");
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::vector<std::string> RegexSplitter::split(const std::string& text) const {
  std::vector<std::string> pieces;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gapStart = 0;  // first byte not yet emitted
  size_t offset = 0;    // where the next search starts
  while (offset <= text.size()) {
    int rc = pcre2_match(impl_->code, subject, text.size(), offset, 0, md, nullptr);
    // A pathological input can exhaust the JIT stack; the interpreter has no such limit worth hitting.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(impl_->code, subject, text.size(), offset, PCRE2_NO_JIT, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      fail("split regex failed at byte ", offset, ": ", reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {  // empty match: contributes nothing, move on by one byte
      offset = begin + 1;
      continue;
    }
    if (begin > gapStart) pieces.emplace_back(text, gapStart, begin - gapStart);
    pieces.emplace_back(text, begin, end - begin);
    gapStart = offset = end;
  }
  pcre2_match_data_free(md);
  if (gapStart < text.size()) pieces.emplace_back(text, gapStart, text.size() - gapStart);
  return pieces;
}

}  // namespace hs
