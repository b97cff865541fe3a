#include "tokenizer/byte_unicode.h"

#include <unordered_map>

#include "tokenizer/utf8.h"

namespace hs::bytelevel {
namespace {

// bytes_to_unicode() of GPT-2's encoder.py: printable ranges keep their codepoint, the other 68 bytes
// take 256, 257, ... in byte order.
struct Tables {
  std::array<std::string, 256> byteToChar;
  std::unordered_map<std::string, unsigned char> charToByte;
  Tables() {
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next++);
      byteToChar[b] = utf8::encode(cp);
      charToByte[byteToChar[b]] = static_cast<unsigned char>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& charOfByte(unsigned char b) {
  return tables().byteToChar[b];
}

std::string encodeBytes(const std::string& raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char b : raw)
    out += tables().byteToChar[b];
  return out;
}

std::optional<std::string> decodeChars(const std::string& mapped) {
  std::string out;
  out.reserve(mapped.size());
  for (const std::string& c : utf8::chars(mapped)) {
    auto it = tables().charToByte.find(c);
    if (it == tables().charToByte.end()) return std::nullopt;
    out += static_cast<char>(it->second);
  }
  return out;
}

}  // namespace hs::bytelevel
