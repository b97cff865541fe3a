// Hugging Face config.json: the bounded JSON reader, then the family mapping and the limits.
#include <string_view>

#include "fuzz_util.h"
#include "model/load/config_json.h"
#include "util/json_read.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json j = hs::parseJsonBounded(text, "config.json", hs::json_limits::modelConfig());
    (void)hs::parseHfConfig(j, "config.json");
  });
  return 0;
}
