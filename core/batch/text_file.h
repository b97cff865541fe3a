#pragma once
// Small text files of a batch folder (plan.json, jobs.json, failure logs, batch.sbatch), written atomically:
// a temporary file in the same folder, renamed onto the target, so a reader never sees half a file.
#include <string>

namespace hs::batch {

// Throws naming the file.
void writeTextAtomic(const std::string& path, const std::string& text);

}  // namespace hs::batch
