// safetensors: header parsing, entry checks, and a read of every tensor's first and last bytes.
#include <ATen/ATen.h>

#include "fuzz_util.h"
#include "model/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "model.safetensors");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const auto f = hs::SafetensorsFile::open(path);
    for (const std::string& name : f->names()) {
      (void)f->metadata();
      at::Tensor t;
      try {
        t = f->tensor(name);
      } catch (const hs::Error&) {
        continue;  // a dtype libtorch lacks
      }
      if (t.numel() > 0) {
        const auto* bytes = static_cast<const volatile uint8_t*>(t.data_ptr());
        (void)bytes[0];
        (void)bytes[t.numel() * t.element_size() - 1];
      }
    }
  });
  return 0;
}
