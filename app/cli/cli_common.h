#pragma once
// Shared pieces of the headscope-cli commands: loading, parsing lists, printing JSON. buildCli adds every
// command to an app: the tools (info, tokenize, logits, generate, train-toy, eval-toy, export) and one
// command per analysis method of the registry (core/analysis/framework/registry.h), generated from its
// record.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "model/load/model_loader.h"
#include "tasks/icl_task.h"

namespace hs::cli {

// Options every model-using command shares.
struct ModelArgs {
  std::string model;           // HF folder, .bin, .gguf or "toy"
  std::string tokenizer;       // optional override
  std::string dtype = "auto";  // auto: f32 when it fits comfortably, else the checkpoint's 16-bit dtype
  std::string device = "cpu";  // cpu, cuda, cuda:N, or cuda:0,cuda:1 (layers split in order)
  int gpu_layers = -1;         // >= 0: the last N layers and the head on --device, the rest on the CPU
};
void addModelArgs(CLI::App& cmd, ModelArgs& args, bool modelRequired = true);

LoadedModel loadForCli(const ModelArgs& args);
const Tokenizer& requireTokenizer(const LoadedModel& m);

// Prompt ids from --text (encoded by the model's tokenizer exactly as it says) or --ids "1,2,3".
std::vector<int64_t> promptIds(const LoadedModel& m, const std::string& text, const std::string& ids);
std::vector<int64_t> parseIdList(const std::string& s);
// The non-empty items of a comma-separated list.
std::vector<std::string> splitList(const std::string& s);
// s as a whole integer; nullopt for anything else (junk, out of range, empty).
std::optional<long long> parseInteger(const std::string& s);
// "L.H,L.H" → heads.
std::vector<HeadRef> parseHeadList(const std::string& s);

// Task options every ICL analysis shares: --task, --template, --shots, --n, --seed, --labels, --split.
void addTaskArgs(CLI::App& cmd, TaskSpec& spec);

// --out RUN.hscope (session), --json RUN.json (the run as JSON) and --run-id.
struct RunOutputArgs {
  std::string out;
  std::string json;
  std::string run_id;
};
void addRunOutputArgs(CLI::App& cmd, RunOutputArgs& args);
// The model as runs record it: "toy" for the embedded model, else the path as loaded.
std::string modelLabel(const LoadedModel& m, const ModelArgs& margs);
// Writes the session (model identity, dtype, tokenizer, task, the run and its tensors, the method's record)
// to args.out (atomic) and the run JSON to args.json when given, then prints {"run", "label", "summary",
// "out", "json"} on stdout.
void writeRunOutputs(const LoadedModel& m, const ModelArgs& margs, const TaskSpec* task,
                     const AnalysisOutput& output, const RunOutputArgs& args);
// Refuses unwritable --out / --json destinations (output_set.h checkDestinations); commands call it
// before loading the model, so a bad path fails at once instead of after the analysis.
void checkRunDestinations(const RunOutputArgs& args);
// Progress on stderr ("<what>: 42% message"), never cancelled.
AnalysisContext cliContext(const std::string& what);

void printJson(const nlohmann::json& j);
void progress(const std::string& message);  // stderr

// Every command of headscope-cli on `app`: the tools and one command per registered method (registry.h;
// methods registered before the call are included). Defaults show in every command's --help.
void buildCli(CLI::App& app);
// The command of one method: model options, task options when it takes a task (its default task),
// one flag per option of its record (--key-with-dashes, the default and range in --help), --out, --json,
// --run-id; the callback loads the model, runs the method through the registry and writes the run.
CLI::App* addMethodCommand(CLI::App& app, const MethodInfo& method);
// An option's help line with its range (what --help shows beside the default).
std::string helpOf(const OptionSpec& o);
// The placeholder --help and the man page show for an option's value ("INT", "REAL", ...; "" for a Bool).
const char* optionTypeName(OptionType t);

// Each command file registers its subcommand.
void addInfoCommand(CLI::App& app);
void addTokenizeCommand(CLI::App& app);
void addLogitsCommand(CLI::App& app);
void addGenerateCommand(CLI::App& app);
void addTrainToyCommand(CLI::App& app);
void addEvalToyCommand(CLI::App& app);
void addExportCommand(CLI::App& app);
void addImportPublishedCommand(CLI::App& app);
void addBatchCommand(CLI::App& app);  // cmd_batch.cpp
void addMergeCommand(CLI::App& app);  // cmd_merge.cpp
void addRerunCommand(CLI::App& app);  // cmd_rerun.cpp

}  // namespace hs::cli
