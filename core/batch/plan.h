#pragma once
// Batch plans (docs/batch.md): a study written as a grid of models × tasks × methods × seeds, expanded into
// jobs with stable ids. A job is one runMethod call (registry.h) on one model, one task and one seed, with
// the method's options resolved against its record, on one device at one dtype.
//
// Plan JSON (format_version 1); relative paths are relative to the plan's folder:
//   {"format_version": 1, "name": "toy-study",
//    "models": ["toy", {"path": "models/llama", "tokenizer": "tok.json", "device": "cuda", "dtype": "bf16"}],
//    "tasks": ["toy:category_label", {"dataset": "fv/antonym.json", "shots": 10}],
//    "task_defaults": {"n_prompts": 20},
//    "methods": ["induction", {"method": "fv", "options": {"top": 5}}],
//    "seeds": [1, 2], "device": "cpu", "dtype": "auto",
//    "resources": {"shards": 4, "cpus": 2, "gpus": 1, "memory": "32G", "time": "02:00:00", ...}}
//
// Expansion order: models, then tasks, then methods, then seeds (the last varies fastest), so every
// shard (every N-th job) meets each model in one stretch and loads it once. A method that takes no task
// runs once per model and seed (the tasks do not change it); a method whose task kinds exclude a task
// skips that task (listed in Expansion::skipped). The job id is "<method>-<16 hex digits>": the start of
// the SHA-256 of the job's spec (below), so the same job has the same id in every expansion, on every
// machine, and any change to what it computes gives it a new id.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/icl_task.h"

namespace hs::batch {

constexpr int kPlanFormatVersion = 1;

// What each array task of a Slurm submission asks for (`--slurm`): one shard per array task.
struct Resources {
  int shards = 0;        // array tasks; 0 = one per job
  int max_parallel = 0;  // at most this many array tasks at once (sbatch --array=...%N); 0 = no limit
  int cpus = 1;          // --cpus-per-task (also the job's compute threads)
  int gpus = 0;          // --gres=gpu:N
  std::string memory;    // --mem ("32G"); "" = the partition's default
  std::string time;      // --time ("02:00:00"); "" = the partition's default
  std::string partition, account, qos;
  std::vector<std::string> sbatch;  // further sbatch options, one per line ("--constraint=a100")
};

struct PlanModel {
  std::string path;       // as written: "toy", a path (relative to the plan) or a hub id
  std::string tokenizer;  // as written; "" = the model's own
  std::string device;     // the plan's device unless given here
  std::string dtype;      // the plan's dtype unless given here
};

struct PlanMethod {
  std::string method;
  nlohmann::json options = nlohmann::json::object();  // as written (a subset of the method's options)
};

struct Plan {
  std::string file;       // the plan file as given
  std::string folder;     // its folder, absolute: relative paths are taken from here
  std::string name;       // "name", default: the file's stem
  nlohmann::json source;  // the plan JSON as read
  std::vector<PlanModel> models;
  std::vector<TaskSpec> tasks;  // as written (dataset paths not yet resolved), seeds from `seeds`
  std::vector<PlanMethod> methods;
  std::vector<uint64_t> seeds;
  std::string device = "cpu";
  std::string dtype = "auto";
  Resources resources;
};

// One run to make. `spec` is what the id hashes and what the run file records:
//   {"model": as written, "tokenizer": as written, "device", "dtype", "method",
//    "options": resolved (every option, defaults included; file options as written),
//    "task": TaskSpec JSON (seed included; dataset as written) or null, "seed"}
// The other fields are what running it needs (paths resolved against the plan's folder).
struct Job {
  std::string id;
  int index = 0;  // position in the expansion (0-based); shard K of N runs the jobs with index % N == K
  nlohmann::json spec;
  std::string method;
  std::string model;      // to load, and what provenance records: "toy", the resolved path, or a hub id
  std::string tokenizer;  // resolved; "" = the model's own
  std::string device, dtype;
  std::optional<TaskSpec> task;  // resolved; none for methods that take no task
  uint64_t seed = 0;
  nlohmann::json options = nlohmann::json::object();  // resolved options to run with (paths resolved)

  // "method · model · task · seed N", as run labels read (registry.h runLabel).
  std::string label() const;
};

struct Expansion {
  std::vector<Job> jobs;
  std::vector<std::string> skipped;  // "fv on toy:category_label: fv needs a generation task; ..."
};

// Reads and checks a plan: every key known, every value of the right type. Errors name the plan file and
// the place ("plan.json: methods[1].options: ...").
Plan loadPlan(const std::string& path);
// The same from JSON already read; `file` names it in errors and its folder anchors relative paths.
Plan planFromJson(const nlohmann::json& j, const std::string& file);

// Every job of the plan. Options are resolved against each method's record here, and each task's kind is
// checked against each method, so a typo fails before any job runs, naming the plan file, the job and the
// key ("plan.json: job fv · toy · toy:antonym_a · seed 1: fv: unknown option topp (options: ...)").
Expansion expandPlan(const Plan& plan);

// Shard `k` of `n` (0-based): the jobs whose index % n == k, in order.
std::vector<const Job*> shardJobs(const Expansion& e, int k, int n);

// The job id of a spec: "<spec.method>-" + the first 16 hex digits of SHA-256(spec.dump()).
std::string jobId(const nlohmann::json& spec);

}  // namespace hs::batch
