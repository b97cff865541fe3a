#pragma once
// Small text helpers shared by the tokenizers: SentencePiece byte pieces "<0xNN>" and display strings.
#include <optional>
#include <string>

namespace hs::tokentext {

// "<0x0A>" -> 0x0A; std::nullopt for anything else.
std::optional<unsigned char> parseBytePiece(const std::string& piece);
// 0x0A -> "<0x0A>".
std::string bytePiece(unsigned char b);
// Raw bytes for display: valid UTF-8 kept, each byte of an invalid sequence shown as "<0xNN>".
std::string displayBytes(const std::string& raw);
// Replace every occurrence of `from` by `to`.
std::string replaceAll(std::string s, const std::string& from, const std::string& to);

// SentencePiece's meta symbol for a space, U+2581 "▁".
inline const std::string kMetaSpace = "\xE2\x96\x81";

}  // namespace hs::tokentext
