#pragma once
// GPT-2's reversible byte <-> unicode map: every byte becomes a printable character so BPE can work on
// strings (0x20 ' ' -> 'Ġ' U+0120, 0x0A -> 'Ċ' U+010A, printable Latin-1 bytes map to themselves).
#include <array>
#include <optional>
#include <string>

namespace hs::bytelevel {

// UTF-8 encoding of the character that stands for byte b.
const std::string& charOfByte(unsigned char b);

// Byte-mapped form of raw bytes: each byte replaced by its character.
std::string encodeBytes(const std::string& raw);

// Inverse: a byte-mapped string back to raw bytes; std::nullopt when a character is not in the map.
std::optional<std::string> decodeChars(const std::string& mapped);

}  // namespace hs::bytelevel
