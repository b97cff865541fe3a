#pragma once
// Where the shared data (word lists, task files, corpora) lies. Core has no default: the CLI and the GUI set
// the roots at start (app/common/data_roots.h), and an option declared with OptionCheck::sharedData("rel")
// that is left empty becomes <root>/rel for the first root that holds it, before the run's options are
// resolved, so the run records the folder it read.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/framework/options.h"

namespace hs {

// Replaces the roots (searched in this order); an empty list means no option is filled in.
void setDataRoots(std::vector<std::string> roots);
const std::vector<std::string>& dataRoots();
// `given` with each empty or absent shared-data option of `specs` set to the first existing <root>/<rel>
// (left as it was when no root holds it).
nlohmann::json withDataFolders(const std::vector<OptionSpec>& specs, nlohmann::json given);

}  // namespace hs
