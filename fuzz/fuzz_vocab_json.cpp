// GPT-2 vocab.json + merges.txt. The input is the vocab.json, optionally followed by "\n#merges\n" and
// the merges.txt; without the marker, the merges are "a b".
#include "fuzz_util.h"
#include "tokenizer/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const std::string marker = "\n#merges\n";
  const size_t at = all.find(marker);
  const std::string vocab = at == std::string::npos ? all : all.substr(0, at);
  const std::string merges =
      at == std::string::npos ? std::string("#version: 0.2\na b\n") : all.substr(at + marker.size());
  const std::string vocabPath =
      hs::fuzz::writeInput(reinterpret_cast<const uint8_t*>(vocab.data()), vocab.size(), "vocab.json");
  const std::string mergesPath =
      hs::fuzz::writeInput(reinterpret_cast<const uint8_t*>(merges.data()), merges.size(), "merges.txt");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const auto tok = hs::detail::loadGpt2VocabMerges(vocabPath, mergesPath, "");
    hs::fuzz::exerciseTokenizer(*tok);
  });
  return 0;
}
