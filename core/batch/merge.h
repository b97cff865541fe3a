#pragma once
// Reading a batch folder (runner.h) and merging its runs into one study session (docs/batch.md).
//
// A study is an ordinary session whose runs are the batch's runs, sorted by id (the job ids), with their
// tensors; "batch" holds {"format_version": 1, "plan": the plan JSON, "jobs": {id: {"spec", "model",
// "tokenizer", "task"}}, "failed": {id: error}, "pending": [ids]}. The session's model, tokenizer and task
// are the runs' own when all runs share them, else empty (each job keeps its own under "jobs"). Merging the
// same runs gives the same bytes: nothing in it depends on the order files are listed or on the time of
// the merge (each run's provenance keeps the time the run was made).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/session.h"

namespace hs::batch {

// The finished runs' files, DIR/runs/<id>.hscope, sorted by id (temporary files left by a writer are not
// runs).
std::vector<std::string> runFiles(const std::string& dir);

struct Failure {
  std::string id;
  std::string error;  // the log's "error: " line
  std::string label;  // "method · model · task · seed N"
};
// Failed jobs with no finished run, sorted by id (a job that failed and later succeeded is not one).
std::vector<Failure> failures(const std::string& dir);
// One failure log; throws naming the file when it has no "error: " line.
Failure readFailure(const std::string& path);

// DIR/jobs.json (every job of the plan), or null when the folder has none. Throws naming a malformed file.
nlohmann::json readJobIndex(const std::string& dir);

// All runs of DIR into one session. Throws naming the file when a run file is unreadable, holds other than
// one run, or holds a run whose id is not its file name; and when DIR has no finished run.
Session mergeBatch(const std::string& dir);

// Whether the session file at `path` is a merged study (its "batch" has "jobs"); reads only its header.
// False for anything unreadable (opening it reports the problem).
bool isStudySession(const std::string& path);

}  // namespace hs::batch
