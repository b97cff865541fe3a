// GGUF: the container, the Llama model mapping and the tokenizer.ggml.* vocabulary.
#include "fuzz_util.h"
#include "model/io/gguf.h"
#include "model/load/gguf_vocab_meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "m.gguf");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const auto f = hs::GgufFile::open(path);
    const auto& m = f->metadata();
    if (m.contains("tokenizer.ggml.model") && m.contains("tokenizer.ggml.tokens"))
      hs::fuzz::expectCleanOutcome(data, size, [&] {
        const auto tok = hs::tokenizerFromGguf(hs::ggufVocabFromMetadata(m, path));
        hs::fuzz::exerciseTokenizer(*tok);
      });
    (void)hs::readGgufModel(path);
  });
  return 0;
}
