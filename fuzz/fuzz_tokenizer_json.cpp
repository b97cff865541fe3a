// Hugging Face tokenizer.json (BPE byte-level and SentencePiece-style, WordLevel), then encode/decode.
#include "fuzz_util.h"
#include "tokenizer/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "tokenizer.json");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const auto tok = hs::detail::loadHfTokenizerJson(path, "");
    hs::fuzz::exerciseTokenizer(*tok);
  });
  return 0;
}
