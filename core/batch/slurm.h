#pragma once
// Shards and Slurm job arrays (docs/batch.md). A batch splits into N shards, shard K running every N-th job;
// on a cluster each array task of one Slurm job array runs one shard, reading its place from Slurm's
// SLURM_ARRAY_TASK_* variables. Slurm schedules; HeadScope only writes the array script and submits it.
#include <functional>
#include <optional>
#include <string>

#include "batch/plan.h"

namespace hs::batch {

struct Shard {
  int index = 0;  // 0-based
  int count = 1;
  std::string source;  // "--shard", "Slurm array task N" or "" (the whole batch)
  std::string text() const { return std::to_string(index + 1) + "/" + std::to_string(count); }
};

// "K/N" with 1 <= K <= N (the CLI's --shard). Throws naming the text and what is wrong.
Shard parseShard(const std::string& text);

// The shard of a Slurm array task: index SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (MIN 0 when unset) of
// SLURM_ARRAY_TASK_COUNT, or of MAX - MIN + 1 when COUNT is unset; nullopt outside an array (no
// SLURM_ARRAY_TASK_ID). The array must be contiguous (0-3, not 1,3,5): throws naming the variables when
// they disagree or are not whole numbers. `env` reads a variable (nullptr when unset).
std::optional<Shard> shardFromSlurm(const std::function<const char*(const char*)>& env);

// The array job script of a batch: one array task per shard (0 .. shards-1, "%max_parallel" when set),
// the plan's resources as #SBATCH lines, output to DIR/slurm/%A_%a.out, and each task running
// `<cli> batch <plan> --out <dir>` (the shard read from Slurm's variables). `shards` is the plan's
// resources.shards, or one per job when 0. Paths must be absolute and free of whitespace and quotes
// (#SBATCH lines cannot quote); throws naming the path otherwise.
std::string sbatchScript(const Plan& plan, const Expansion& e, const std::string& cli,
                         const std::string& planPath, const std::string& dir);

// The number of array tasks sbatchScript writes.
int slurmShards(const Plan& plan, const Expansion& e);

}  // namespace hs::batch
