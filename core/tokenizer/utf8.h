#pragma once
// UTF-8 helpers for the tokenizers: codepoint splitting that never fails on invalid input, and the
// U+FFFD repair used by every decode().
#include <cstdint>
#include <string>
#include <vector>

namespace hs::utf8 {

// Length in bytes of the well-formed UTF-8 sequence starting at s[i], or 0 when the bytes there are not a
// valid sequence (bad lead byte, bad continuation, overlong form, surrogate, > U+10FFFF, truncated).
size_t validSequenceLength(const std::string& s, size_t i);

// Split into UTF-8 characters; each invalid byte becomes its own one-byte element.
std::vector<std::string> chars(const std::string& s);

// Replace each maximal invalid subsequence (the W3C/WHATWG "substitution of maximal subparts" rule, as in
// Python's bytes.decode(errors="replace")) by U+FFFD. Valid input is returned unchanged.
std::string repair(const std::string& s);

bool isValid(const std::string& s);

// Encode one codepoint (must be <= U+10FFFF).
std::string encode(uint32_t cp);

}  // namespace hs::utf8
