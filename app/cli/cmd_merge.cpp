// headscope-cli merge DIR --out STUDY.hscope
//
// Every finished run of a batch folder in one session (core/batch/merge.h): runs sorted by id, each with its
// model, task, method, seed and provenance; the failed and pending jobs listed. Merging the same runs again
// writes the same bytes. Prints {"study", "runs", "failed", "pending"} on stdout.
#include "batch/merge.h"
#include "cli_common.h"
#include "session/session.h"

namespace hs::cli {
namespace {

struct MergeArgs {
  std::string dir, out;
};

}  // namespace

void addMergeCommand(CLI::App& app) {
  static MergeArgs a;
  auto* cmd = app.add_subcommand("merge", "Merge a batch folder's runs into one study session");
  cmd->add_option("dir", a.dir, "the batch folder (headscope-cli batch --out DIR)")->required();
  cmd->add_option("--out", a.out, "the study session to write (.hscope)")->required();
  cmd->callback([] {
    const Session s = batch::mergeBatch(a.dir);
    saveSession(a.out, s);  // atomic
    printJson({{"study", a.out},
               {"runs", s.runs.size()},
               {"failed", s.batch["failed"].size()},
               {"pending", s.batch["pending"].size()}});
  });
}

}  // namespace hs::cli
