#pragma once
// The shared-data roots the CLI and the GUI give core at start (analysis/framework/data_roots.h), in order:
// the folders of $HEADSCOPE_DATA (colon-separated), the data installed beside the programs
// (share/headscope/data), and ../shared/data of the working directory (the layout of a source checkout
// beside its data).
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/framework/data_roots.h"
#include "util/resources.h"

namespace hs {

inline std::vector<std::string> appDataRoots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("HEADSCOPE_DATA")) {
    std::stringstream s(env);
    for (std::string r; std::getline(s, r, ':');)
      if (!r.empty()) roots.push_back(r);
  }
  for (const std::string& r : resourceCandidates("data"))
    roots.push_back(r);
  roots.push_back("../shared/data");
  return roots;
}

inline void useAppDataRoots() {
  setDataRoots(appDataRoots());
}

}  // namespace hs
