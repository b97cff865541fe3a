#pragma once
// Shared by the fuzz targets: the readers take paths, so each input is written to a file in a private
// temporary folder (tmpfs when there is one); and what counts as a finding besides a crash.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/user_message.h"

namespace hs::fuzz {

inline const std::string& scratchDir() {
  static const std::string dir = [] {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string t = std::string(base) + "/headscope-fuzz-XXXXXX";
    if (!mkdtemp(t.data())) std::abort();
    return t;
  }();
  return dir;
}

// Writes the input to <scratch>/<name> (replacing the previous input) and returns the path.
inline std::string writeInput(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = scratchDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// A reader may refuse an input only with hs::Error whose message, as the CLI and GUI show it, neither
// dumps the parser's raw exception nor a libtorch backtrace nor only says "std::bad_alloc"; anything else
// (another exception type, bad_alloc, such a message) is a finding, reported like a crash.
// An input that itself holds one of the markers may see it quoted back in a message (libFuzzer learns
// them from this very check), so each marker counts only for inputs without it.
template <typename F>
void expectCleanOutcome(const uint8_t* data, size_t size, F&& body) {
  try {
    body();
  } catch (const hs::Error& e) {
    const std::string m = userMessage(e);  // as the CLI and the GUI show it
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    auto raw = [&](std::string_view marker) {
      return m.find(marker) != std::string::npos && input.find(marker) == std::string_view::npos;
    };
    if (raw("[json.exception") || raw("Exception raised from")) {  // oneLine leaves no line break
      std::fprintf(stderr, "finding: unclear error message: %s\n", m.substr(0, 400).c_str());
      std::abort();
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "finding: std::bad_alloc escaped a reader (no plausibility check before allocating)\n");
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: a reader threw a non-hs::Error exception: %s\n",
                 std::string(e.what()).substr(0, 400).c_str());
    std::abort();
  }
}

// Exercises a tokenizer that loaded: encode and decode a fixed text, look up every piece of it.
inline void exerciseTokenizer(const Tokenizer& tok) {
  const std::vector<int> ids = tok.encode("Hello world, 12 tokens: <s> a b ab \xE2\x96\x81x \xC3\xA9");
  (void)tok.decode(ids);
  for (int id : ids)
    (void)tok.piece(id);
  (void)tok.vocabSize();
}

}  // namespace hs::fuzz
