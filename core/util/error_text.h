#pragma once
// The message of any exception as one line for the user, at the boundaries (CLI main, GUI worker): libtorch's
// c10::Error appends the C++ stack ("\nException raised from ... frame #0: ...") to what(), also when an
// hs::withContext wrapped it on the way up, and that tail is cut here; an allocation failure says so in
// words.
#include <exception>
#include <new>
#include <string>

namespace hs {

inline std::string errorText(const std::exception& e) {
  std::string s = e.what();
  const size_t frames = s.find("\nException raised from ");
  if (frames != std::string::npos) s.erase(frames);
  if (dynamic_cast<const std::bad_alloc*>(&e))
    s = "out of memory: a memory allocation failed (" + s + "); try --dtype bf16 or a smaller batch";
  return s;
}

}  // namespace hs
