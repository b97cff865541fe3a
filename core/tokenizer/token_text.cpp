#include "tokenizer/token_text.h"

#include <cstdio>

#include "tokenizer/utf8.h"

namespace hs::tokentext {

std::optional<unsigned char> parseBytePiece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return std::nullopt;
  auto hexValue = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hexValue(piece[3]), lo = hexValue(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

std::string bytePiece(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  return buf;
}

std::string displayBytes(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    const size_t n = utf8::validSequenceLength(raw, i);
    if (n > 0) {
      out.append(raw, i, n);
      i += n;
    } else {
      out += bytePiece(static_cast<unsigned char>(raw[i]));
      ++i;
    }
  }
  return out;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

}  // namespace hs::tokentext
