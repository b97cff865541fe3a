#include "batch/slurm.h"

#include <algorithm>
#include <cctype>

#include "util/error.h"

namespace hs::batch {
namespace {

std::optional<long long> wholeNumber(const std::string& s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stoll(s);
}

// A path as an #SBATCH line or a shell word can carry it unquoted-safe.
void checkPlainPath(const std::string& what, const std::string& p) {
  if (p.empty() || p.front() != '/') fail("--slurm: ", what, " ", p, " must be an absolute path");
  for (char c : p)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"' || c == '\\' || c == '$' ||
        c == '`' || c == '%')
      fail("--slurm: ", what, " ", p, " holds '", std::string(1, c),
           "', which an sbatch script cannot carry; use a path without spaces, quotes, $, % or \\");
}

// The job name: the plan's name reduced to letters, digits, '-', '_' and '.'.
std::string jobName(const std::string& name) {
  std::string out = "headscope-";
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out;
}

}  // namespace

Shard parseShard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto k = slash == std::string::npos ? std::nullopt : wholeNumber(text.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : wholeNumber(text.substr(slash + 1));
  if (!k || !n) fail("--shard ", text, ": expected K/N, e.g. 2/4 (shard 2 of 4)");
  if (*n < 1 || *k < 1 || *k > *n) fail("--shard ", text, ": K must be between 1 and N, and N at least 1");
  return {static_cast<int>(*k - 1), static_cast<int>(*n), "--shard"};
}

std::optional<Shard> shardFromSlurm(const std::function<const char*(const char*)>& env) {
  auto read = [&](const char* name) -> std::optional<long long> {
    const char* v = env(name);
    if (!v) return std::nullopt;
    const auto n = wholeNumber(v);
    if (!n) fail(name, "=", v, " is not a whole number");
    return n;
  };
  const auto id = read("SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const auto count = read("SLURM_ARRAY_TASK_COUNT");
  const auto min = read("SLURM_ARRAY_TASK_MIN");
  const auto max = read("SLURM_ARRAY_TASK_MAX");
  const long long lo = min.value_or(0);
  long long n = 0;
  if (count)
    n = *count;
  else if (max)
    n = *max - lo + 1;
  else
    fail("SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is");
  if (count && max && *count != *max - lo + 1)
    fail("the Slurm array is not contiguous (SLURM_ARRAY_TASK_COUNT=", *count, ", MIN=", lo, ", MAX=", *max,
         "): submit the batch as --array=0-", *count - 1);
  const long long k = *id - lo;
  if (n < 1 || k < 0 || k >= n)
    fail("SLURM_ARRAY_TASK_ID=", *id, " is outside the array (MIN ", lo, ", ", n, " tasks)");
  return Shard{static_cast<int>(k), static_cast<int>(n), "Slurm array task " + std::to_string(*id)};
}

int slurmShards(const Plan& plan, const Expansion& e) {
  const int jobs = std::max<int>(1, static_cast<int>(e.jobs.size()));
  return plan.resources.shards > 0 ? std::min(plan.resources.shards, jobs) : jobs;
}

std::string sbatchScript(const Plan& plan, const Expansion& e, const std::string& cli,
                         const std::string& planPath, const std::string& dir) {
  checkPlainPath("the headscope-cli program", cli);
  checkPlainPath("the plan", planPath);
  checkPlainPath("the output folder", dir);
  const Resources& r = plan.resources;
  const int shards = slurmShards(plan, e);
  std::string s = "#!/bin/bash\n";
  s += "# HeadScope batch \"" + plan.name + "\": " + std::to_string(e.jobs.size()) + " jobs in " +
       std::to_string(shards) + " shards, one per array task (docs/batch.md).\n";
  s += "# Submit again to finish what is missing: finished runs are skipped.\n";
  s += "#SBATCH --job-name=" + jobName(plan.name) + "\n";
  s += "#SBATCH --array=0-" + std::to_string(shards - 1);
  if (r.max_parallel > 0) s += "%" + std::to_string(r.max_parallel);
  s += "\n#SBATCH --output=" + dir + "/slurm/%A_%a.out\n";
  s += "#SBATCH --ntasks=1\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(r.cpus) + "\n";
  if (r.gpus > 0) s += "#SBATCH --gres=gpu:" + std::to_string(r.gpus) + "\n";
  if (!r.memory.empty()) s += "#SBATCH --mem=" + r.memory + "\n";
  if (!r.time.empty()) s += "#SBATCH --time=" + r.time + "\n";
  if (!r.partition.empty()) s += "#SBATCH --partition=" + r.partition + "\n";
  if (!r.account.empty()) s += "#SBATCH --account=" + r.account + "\n";
  if (!r.qos.empty()) s += "#SBATCH --qos=" + r.qos + "\n";
  for (const std::string& o : r.sbatch)
    s += "#SBATCH " + o + "\n";
  s += "set -eu\n";
  s += "# Compute threads: the CPUs Slurm gave this task unless HEADSCOPE_THREADS says otherwise.\n";
  s += "export HEADSCOPE_THREADS=\"${HEADSCOPE_THREADS:-${SLURM_CPUS_PER_TASK:-1}}\"\n";
  s += "exec " + cli + " batch " + planPath + " --out " + dir + "\n";
  return s;
}

}  // namespace hs::batch
