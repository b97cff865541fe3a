#pragma once
// Errors thrown inside core carry their context (file, key, what was expected).
// Throw inside, catch at the boundary (CLI main, GUI worker slot), add context on the way up.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "util/cancelled.h"

namespace hs {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenate any streamable values into one message: fail("file ", path, ": bad magic ", m).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

// Re-throw an error with a prefix naming where it happened ("loading /x/model.safetensors: ...").
// Cancellation (hs::Cancelled) passes through unchanged, however deeply it is nested.
template <typename F>
auto withContext(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(context + ": " + e.what());
  }
}

}  // namespace hs
