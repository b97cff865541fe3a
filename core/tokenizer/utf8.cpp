#include "tokenizer/utf8.h"

namespace hs::utf8 {
namespace {

// Valid second-byte range per lead byte (Unicode Table 3-7), which rules out overlongs and surrogates.
bool secondByteOk(unsigned char lead, unsigned char b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

size_t expectedLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, C0/C1 or F5..FF: never a lead
}

// Number of bytes that form a valid prefix of a sequence starting at i (at least 1): the "maximal subpart"
// that one U+FFFD replaces when the sequence is invalid.
size_t maximalSubpart(const std::string& s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t n = expectedLength(lead);
  if (n <= 1) return 1;
  size_t k = 1;
  while (k < n && i + k < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    const bool ok = (k == 1) ? secondByteOk(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++k;
  }
  return k;
}

}  // namespace

size_t validSequenceLength(const std::string& s, size_t i) {
  if (i >= s.size()) return 0;
  const size_t n = expectedLength(static_cast<unsigned char>(s[i]));
  if (n == 0) return 0;
  return maximalSubpart(s, i) == n ? n : 0;
}

std::vector<std::string> chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = validSequenceLength(s, i);
    if (n == 0) n = 1;
    out.emplace_back(s, i, n);
    i += n;
  }
  return out;
}

std::string repair(const std::string& s) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = validSequenceLength(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
    } else {
      out += kReplacement;
      i += maximalSubpart(s, i);
    }
  }
  return out;
}

bool isValid(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = validSequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

}  // namespace hs::utf8
