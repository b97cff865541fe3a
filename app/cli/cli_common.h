#pragma once
// Shared pieces of the headscope-cli commands: loading, parsing lists, printing JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

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
// "L.H,L.H" → (layer, head) pairs.
std::vector<std::pair<int, int>> parseHeadList(const std::string& s);

void printJson(const nlohmann::json& j);
void progress(const std::string& message);  // stderr

// Each command file registers its subcommand.
void addInfoCommand(CLI::App& app);
void addTokenizeCommand(CLI::App& app);
void addLogitsCommand(CLI::App& app);
void addGenerateCommand(CLI::App& app);
void addTrainToyCommand(CLI::App& app);
void addEvalToyCommand(CLI::App& app);

}  // namespace hs::cli
