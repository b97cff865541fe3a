#pragma once
// Running a batch's jobs into its output folder (docs/batch.md):
//
//   DIR/plan.json            the plan as read
//   DIR/jobs.json            every job of the expansion: {"format_version", "plan", "jobs": [{id, label,
//   spec}],
//                            "skipped": [...]}
//   DIR/runs/<id>.hscope     one session per finished job (the run, its tensors, the model's identity, and
//                            "batch": {"job": spec}), written to a temporary file in DIR/runs and renamed, so
//                            a file there is always complete
//   DIR/failed/<id>.log      why a job failed ("error: ..." first), removed when the job later succeeds
//
// A job whose run file exists is skipped, so a killed or requeued batch resumes where it stopped; shards
// (every N-th job) write into the same folder without coordination since their jobs are disjoint.
#include <functional>
#include <string>
#include <vector>

#include "batch/plan.h"

namespace hs::batch {

std::string runFilePath(const std::string& dir, const std::string& id);     // DIR/runs/<id>.hscope
std::string failureLogPath(const std::string& dir, const std::string& id);  // DIR/failed/<id>.log

// Creates DIR, DIR/runs and DIR/failed and writes DIR/plan.json and DIR/jobs.json (atomically; every shard
// writes the same bytes). Throws naming the folder when it cannot.
void prepareOutput(const std::string& dir, const Plan& plan, const Expansion& e);

struct BatchOptions {
  std::string out;                              // DIR
  int shard = 0, shards = 1;                    // 0-based shard of `shards`
  std::function<void(const std::string&)> log;  // one line per event (stderr in the CLI)
};

struct BatchReport {
  int jobs = 0;                      // jobs of the shard
  std::vector<std::string> ran;      // finished now
  std::vector<std::string> skipped;  // finished before
  std::vector<std::string> failed;   // failed now (each has its DIR/failed/<id>.log)
};

// Runs the shard's jobs in order: skips finished ones, loads each model once for a stretch of jobs that
// share it, runs each through runMethod (run id = job id, provenance model = Job::model), writes the run
// atomically; a failing job (its model included) leaves its log and the batch goes on.
BatchReport runBatch(const Expansion& e, const BatchOptions& options);

}  // namespace hs::batch
