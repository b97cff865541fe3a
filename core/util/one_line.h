#pragma once
// Error messages as one line at the boundaries (the CLI's main, the GUI's job slot): a libtorch error's
// "Exception raised from ..." backtrace is cut (also when withContext has wrapped it), other line breaks
// become "; ", and other control characters (bytes a file put into a key or value the message quotes) become
// escapes such as \x1b.
#include <string>

namespace hs {

inline std::string oneLine(const std::string& message) {
  std::string m = message.substr(0, message.find("\nException raised from "));
  while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
    m.pop_back();
  std::string out;
  static const char* const kHex = "0123456789abcdef";
  for (char c : m) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\r') continue;
    if (c == '\n') {
      out += "; ";
    } else if (c == '\t') {
      out += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// A message that only says an allocation failed ("std::bad_alloc", possibly after withContext's
// prefixes): reported as running out of memory.
inline bool isBadAllocMessage(const std::string& message) {
  const std::string tail = "std::bad_alloc";
  return message.size() >= tail.size() &&
         message.compare(message.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace hs
