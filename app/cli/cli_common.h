#pragma once
// Shared pieces of the headscope-cli commands: loading, parsing lists, printing JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/icl_task.h"
#include "model/load/model_loader.h"

namespace hs::cli {

// Options every model-using command shares.
struct ModelArgs {
  std::string model;      // HF folder, .bin, .gguf or "toy"
  std::string tokenizer;  // optional override
  std::string dtype = "f32";
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
// "L.H,L.H" → (layer, head) pairs.
std::vector<std::pair<int, int>> parseHeadList(const std::string& s);
// The same, each head checked against the model; errors name `option` and the valid ranges.
std::vector<std::pair<int, int>> parseHeadList(const std::string& s, const ModelConfig& c,
                                               const std::string& option);

// Task options every ICL analysis shares: --task, --template, --shots, --n, --seed, --labels, --split.
void addTaskArgs(CLI::App& cmd, TaskSpec& spec);
// The default task of the function-vector family (fv, site, ltv): toy:antonym_a with 10 demonstrations.
TaskSpec functionTaskSpec();

// A numeric option that must be positive; --help shows its default.
template <typename T>
CLI::Option* addPositiveOption(CLI::App& cmd, const std::string& name, T& value, const std::string& help) {
  return cmd.add_option(name, value, help)->capture_default_str()->check(CLI::PositiveNumber);
}
// An option naming a split (train, valid or test); --help shows its default.
CLI::Option* addSplitOption(CLI::App& cmd, const std::string& name, std::string& split,
                            const std::string& help);

// --out RUN.hscope (session) and --json RUN.json (the run as JSON).
struct RunOutputArgs {
  std::string out;
  std::string json;
};
void addRunOutputArgs(CLI::App& cmd, RunOutputArgs& args);
// Writes the session (model identity, dtype, tokenizer, task, the run and its tensors) to args.out (atomic)
// and the run JSON to args.json when given, then prints {"run", "summary", "out", "json"} on stdout.
void writeRunOutputs(const LoadedModel& m, const ModelArgs& margs, const TaskSpec* task,
                     const AnalysisOutput& output, const RunOutputArgs& args);
// Refuses unwritable --out / --json destinations (output_set.h checkDestinations); commands call it
// before loading the model, so a bad path fails at once instead of after the analysis.
void checkRunDestinations(const RunOutputArgs& args);
// The callback of a task analysis command: loads the model, runs `analysis` with the model's tokenizer and
// writes its outputs with `spec` as the session's task.
using TaskAnalysis = std::function<AnalysisOutput(const LoadedModel&, const Tokenizer&)>;
void runTaskAnalysis(const ModelArgs& margs, const TaskSpec& spec, const RunOutputArgs& outArgs,
                     const TaskAnalysis& analysis);
// The same for an analysis of the ICL task built from `spec`; the session's task is the built task's spec.
using IclTaskAnalysis = std::function<AnalysisOutput(const LoadedModel&, const Tokenizer&, const IclTask&)>;
void runIclTaskAnalysis(const ModelArgs& margs, const TaskSpec& spec, const RunOutputArgs& outArgs,
                        const IclTaskAnalysis& analysis);
// Progress on stderr ("<what>: 42% message"), never cancelled.
AnalysisContext cliContext(const std::string& what);

void printJson(const nlohmann::json& j);
void progress(const std::string& message);  // stderr

// Each command file registers its subcommand.
void addInfoCommand(CLI::App& app);
void addTokenizeCommand(CLI::App& app);
void addLogitsCommand(CLI::App& app);
void addGenerateCommand(CLI::App& app);
void addTrainToyCommand(CLI::App& app);
void addEvalToyCommand(CLI::App& app);
void addFvCommand(CLI::App& app);
void addSiteCommand(CLI::App& app);
void addPatchCommand(CLI::App& app);
void addExportCommand(CLI::App& app);
void addInductionCommand(CLI::App& app);
void addLtvCommand(CLI::App& app);
void addTslaCommand(CLI::App& app);
void addGeometryCommand(CLI::App& app);

}  // namespace hs::cli
