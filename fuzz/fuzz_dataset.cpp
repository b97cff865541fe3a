// Task datasets: the first byte picks the file name (FV .json, .csv, .tsv, or sniffed text: SST-2, TREC),
// the rest is the file.
#include "fuzz_util.h"
#include "tasks/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* names[] = {"d.json", "d.csv", "d.tsv", "d.txt"};
  const std::string path = hs::fuzz::writeInput(data + 1, size - 1, names[data[0] % 4]);
  hs::fuzz::expectCleanOutcome(data, size, [&] { (void)hs::loadDatasetAuto(path); });
  return 0;
}
