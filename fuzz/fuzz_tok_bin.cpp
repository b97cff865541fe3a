// llama2.c tok.bin, then encode/decode.
#include "fuzz_util.h"
#include "tokenizer/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "tok.bin");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const auto tok = hs::detail::loadLlama2cTokenizer(path);
    hs::fuzz::exerciseTokenizer(*tok);
  });
  return 0;
}
