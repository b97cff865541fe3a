#pragma once
// Error messages as one line at the boundaries (the CLI's main, the GUI's job slot): a libtorch error's
// "Exception raised from ..." backtrace is cut (also when withContext has wrapped it), other line breaks
// become "; ".
#include <string>

namespace hs {

inline std::string oneLine(const std::string& message) {
  std::string m = message.substr(0, message.find("\nException raised from "));
  while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
    m.pop_back();
  std::string out;
  for (char c : m) {
    if (c == '\r') continue;
    if (c == '\n')
      out += "; ";
    else
      out += c;
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
