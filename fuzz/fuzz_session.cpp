// Session files (.hscope): safetensors + the checksum + the session JSON, then what export renders.
#include "fuzz_util.h"
#include "session/export_csv.h"
#include "session/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::writeInput(data, size, "s.hscope");
  hs::fuzz::expectCleanOutcome(data, size, [&] {
    const hs::Session s = hs::loadSession(path);
    (void)hs::sessionToJson(s).dump();
    for (const auto& run : s.runs) {
      for (const auto& g : run.grids) {
        (void)hs::gridToCsvWide(g);
        (void)hs::gridToCsvLong(g);
        (void)hs::gridToJsonText(g);
      }
      for (const auto& c : run.curves)
        (void)hs::curveToCsv(c);
      for (const auto& t : run.tables)
        (void)hs::tableToCsv(t);
    }
  });
  return 0;
}
