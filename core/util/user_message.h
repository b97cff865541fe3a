#pragma once
// Error messages as one line for the user, at the boundaries (the CLI's main, the GUI's job slot, the batch
// runner): libtorch's c10::Error appends the C++ stack ("\nException raised from ... frame #0: ...") to
// what(), also when an hs::withContext wrapped it on the way up, and that tail is cut; other line breaks
// become "; ", other control characters (bytes a file put into a key or value the message quotes) become
// escapes such as \x1b; and an allocation failure says so in words, with the ways out.
#include <exception>
#include <new>
#include <string>

namespace hs {

// A message as one line (the stack tail cut, control characters escaped).
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

// What the user reads for any exception: oneLine(e.what()), and for an allocation failure (std::bad_alloc,
// possibly wrapped by withContext, whose message then ends in "std::bad_alloc") the words "out of memory".
inline std::string userMessage(const std::exception& e) {
  const std::string m = oneLine(e.what());
  const std::string tail = "std::bad_alloc";
  const bool badAlloc = dynamic_cast<const std::bad_alloc*>(&e) ||
                        (m.size() >= tail.size() && m.compare(m.size() - tail.size(), tail.size(), tail) == 0);
  if (!badAlloc) return m;
  return "out of memory: an allocation failed (" + m +
         "); try fewer prompts, a smaller batch, --dtype bf16 or a smaller model";
}

}  // namespace hs
