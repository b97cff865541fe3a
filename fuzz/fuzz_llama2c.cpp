// llama2.c .bin checkpoints (v0, v1, v2).
#include "fuzz_util.h"
#include "model/io/llama2c.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "m.bin");
  hs::fuzz::expectCleanOutcome(data, size, [&] { (void)hs::readLlama2c(path); });
  return 0;
}
