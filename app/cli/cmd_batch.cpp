// headscope-cli batch PLAN --out DIR [--shard K/N] [--slurm [--dry-run]]
//
// Expands a plan (core/batch/plan.h) into jobs and runs them into DIR (core/batch/runner.h): finished runs
// are skipped, failures logged and the batch goes on; the exit status is the number of failed jobs (at most
// 125), 0 when all ran. Under a Slurm job array the shard comes from SLURM_ARRAY_TASK_*. With --slurm it
// writes DIR/batch.sbatch (one array task per shard) and submits it with sbatch when that is on the PATH.
// Prints one JSON object on stdout; progress goes to stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "batch/plan.h"
#include "batch/runner.h"
#include "batch/slurm.h"
#include "batch/text_file.h"
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {
namespace {

namespace fs = std::filesystem;

struct BatchArgs {
  std::string plan, out, shard;
  bool slurm = false, dryRun = false;
};

std::string absolutePath(const std::string& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? fs::path(p) : a).lexically_normal().string();
}

// The running program, for the array script (the same build runs every shard).
std::string selfPath() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) fail("--slurm: cannot find this program's path (/proc/self/exe: ", ec.message(), ")");
  return p.string();
}

// `name` on the PATH, or "".
std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    const std::string candidate = (fs::path(dir.empty() ? "." : dir) / name).string();
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// Runs `sbatch --parsable SCRIPT` and returns the job id it prints; throws with sbatch's own words.
std::string submit(const std::string& sbatch, const std::string& script) {
  const std::string command = sbatch + " --parsable " + script + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) fail("cannot run ", sbatch);
  std::string output;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0)
    output.append(buf.data(), n);
  const int status = ::pclose(pipe.release());
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r'))
    output.pop_back();
  if (status != 0 || output.empty())
    fail(sbatch, " refused ", script, " (exit ", WIFEXITED(status) ? WEXITSTATUS(status) : status,
         "): ", output);
  // --parsable prints "jobid" or "jobid;cluster".
  return output.substr(0, output.find(';'));
}

nlohmann::json jobIds(const std::vector<std::string>& ids) {
  return nlohmann::json(ids);
}

void runBatchCommand(const BatchArgs& a) {
  const batch::Plan plan = batch::loadPlan(a.plan);  // errors name the plan file
  const batch::Expansion e = batch::expandPlan(plan);
  for (const std::string& s : e.skipped)
    progress("plan: skipped " + s);
  const std::string dir = absolutePath(a.out);
  batch::prepareOutput(dir, plan, e);

  if (a.slurm) {
    if (!a.shard.empty())
      fail("--slurm: --shard does not apply (each array task reads its shard from Slurm)");
    const std::string script = (fs::path(dir) / "batch.sbatch").string();
    std::error_code ec;
    fs::create_directories(fs::path(dir) / "slurm", ec);
    if (ec) fail(dir, "/slurm: cannot create the folder for Slurm's output: ", ec.message());
    batch::writeTextAtomic(script, batch::sbatchScript(plan, e, selfPath(), absolutePath(a.plan), dir));
    nlohmann::json out = {{"plan", a.plan},        {"out", dir},
                          {"jobs", e.jobs.size()}, {"shards", batch::slurmShards(plan, e)},
                          {"sbatch", script},      {"submitted", false}};
    const std::string sbatch = onPath("sbatch");
    if (a.dryRun) {
      progress("dry run: wrote " + script + "; submit it with: sbatch " + script);
    } else if (sbatch.empty()) {
      progress("sbatch is not on the PATH: wrote " + script + "; submit it on the cluster with: sbatch " +
               script);
    } else {
      const std::string id = submit(sbatch, script);
      progress("submitted Slurm job " + id + " (" + std::to_string(batch::slurmShards(plan, e)) +
               " array tasks)");
      out["submitted"] = true;
      out["slurm_job"] = id;
    }
    printJson(out);
    return;
  }

  batch::Shard shard;
  if (!a.shard.empty())
    shard = batch::parseShard(a.shard);
  else if (const auto s = batch::shardFromSlurm([](const char* n) { return std::getenv(n); }))
    shard = *s;
  batch::BatchOptions o;
  o.out = dir;
  o.shard = shard.index;
  o.shards = shard.count;
  o.log = [](const std::string& line) { progress(line); };
  progress("batch " + plan.name + ": " + std::to_string(e.jobs.size()) + " jobs" +
           (shard.count > 1 ? ", shard " + shard.text() + " (" + shard.source + ")" : std::string()));
  const batch::BatchReport r = batch::runBatch(e, o);
  printJson({{"plan", a.plan},
             {"out", dir},
             {"shard", shard.text()},
             {"jobs", e.jobs.size()},
             {"shard_jobs", r.jobs},
             {"ran", jobIds(r.ran)},
             {"skipped", jobIds(r.skipped)},
             {"failed", jobIds(r.failed)}});
  // The exit status counts the failures (CLI11 exits with it without a message).
  if (!r.failed.empty()) throw CLI::RuntimeError(std::min<int>(static_cast<int>(r.failed.size()), 125));
}

}  // namespace

void addBatchCommand(CLI::App& app) {
  static BatchArgs a;
  auto* cmd =
      app.add_subcommand("batch", "Run a plan's grid of models × tasks × methods × seeds as resumable jobs");
  cmd->footer(
      "Each job's run goes to DIR/runs/<id>.hscope (finished runs are skipped, so a stopped batch resumes), "
      "failures to DIR/failed/<id>.log; the exit status is the number of failed jobs. Under a Slurm job "
      "array "
      "the shard comes from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT. docs/batch.md describes the "
      "plan.");
  cmd->add_option("plan", a.plan, "the plan (JSON; docs/batch.md)")->required();
  cmd->add_option("--out", a.out, "the batch folder (created if missing)")->required();
  cmd->add_option("--shard", a.shard, "run shard K of N: every N-th job, starting with job K (1 <= K <= N)")
      ->default_str("all jobs, or the Slurm array task's shard");
  auto* slurm = cmd->add_flag("--slurm", a.slurm,
                              "write DIR/batch.sbatch (a job array, one shard per task, resources from the "
                              "plan) and submit it with sbatch when on the PATH");
  cmd->add_flag("--dry-run", a.dryRun, "with --slurm: write the script, do not submit")->needs(slurm);
  cmd->callback([] { runBatchCommand(a); });
}

}  // namespace hs::cli
