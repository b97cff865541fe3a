#include "cli_common.h"

#include <iostream>
#include <memory>
#include <sstream>

#include "results/results_json.h"
#include "session/model_identity.h"
#include "session/output_set.h"
#include "session/session.h"
#include "util/error.h"

namespace hs::cli {

void addModelArgs(CLI::App& cmd, ModelArgs& args, bool modelRequired) {
  auto* opt = cmd.add_option("model", args.model, "HF folder, llama2.c .bin, .gguf, or 'toy'");
  if (modelRequired) opt->required();
  cmd.add_option("--tokenizer", args.tokenizer,
                 "tokenizer.json, vocab.json (merges.txt beside it), llama2.c tok.bin or .gguf");
  cmd.add_option("--dtype", args.dtype, "compute dtype")->check(CLI::IsMember({"f32", "bf16", "f16"}));
}

LoadedModel loadForCli(const ModelArgs& args) {
  LoadOptions opts;
  opts.tokenizer = args.tokenizer;
  opts.dtype = args.dtype == "bf16" ? "bfloat16" : args.dtype == "f16" ? "float16" : "float32";
  progress("loading " + args.model);
  return loadModel(args.model, opts);
}

const Tokenizer& requireTokenizer(const LoadedModel& m) {
  if (!m.tokenizer)
    fail("no tokenizer found for ", m.path, "; pass --tokenizer PATH (tokenizer.json, vocab.json, tok.bin)");
  return *m.tokenizer;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> items;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

std::optional<long long> parseInteger(const std::string& s) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != s.size()) return std::nullopt;
  return v;
}

std::vector<int64_t> parseIdList(const std::string& s) {
  std::vector<int64_t> ids;
  for (const std::string& item : splitList(s)) {
    const auto v = parseInteger(item);
    if (!v) fail("--ids: '", item, "' is not an integer token id");
    ids.push_back(*v);
  }
  if (ids.empty()) fail("--ids: no token ids given");
  return ids;
}

std::vector<std::pair<int, int>> parseHeadList(const std::string& s) {
  std::vector<std::pair<int, int>> heads;
  for (const std::string& item : splitList(s)) {
    const auto dot = item.find('.');
    int layer = -1, head = -1;
    try {
      size_t a = 0, b = 0;
      if (dot == std::string::npos) throw std::invalid_argument("no dot");
      layer = std::stoi(item.substr(0, dot), &a);
      head = std::stoi(item.substr(dot + 1), &b);
      if (a != dot || b != item.size() - dot - 1) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
      fail("head '", item, "' is not LAYER.HEAD (e.g. 3.5)");
    }
    heads.emplace_back(layer, head);
  }
  return heads;
}

std::vector<std::pair<int, int>> parseHeadList(const std::string& s, const ModelConfig& c,
                                               const std::string& option) {
  const auto heads = withContext(option, [&] { return parseHeadList(s); });
  for (const auto& [layer, head] : heads)
    if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
      fail(option, ": head ", layer, ".", head, " is not in the model: layers 0..", c.n_layers - 1,
           ", heads 0..", c.n_heads - 1, " (LAYER.HEAD, e.g. ", c.n_layers - 1, ".", c.n_heads - 1, ")");
  return heads;
}

std::vector<int64_t> promptIds(const LoadedModel& m, const std::string& text, const std::string& ids) {
  if (!text.empty() && !ids.empty()) fail("give either --text or --ids, not both");
  if (!ids.empty()) {
    std::vector<int64_t> out = parseIdList(ids);
    for (int64_t id : out)
      if (id < 0 || id >= m.config.vocab_size)
        fail("--ids: token id ", id, " is outside the model's vocabulary 0..", m.config.vocab_size - 1);
    return out;
  }
  if (text.empty()) fail("give a prompt with --text or --ids");
  const auto enc = requireTokenizer(m).encode(text);
  return {enc.begin(), enc.end()};
}

void addTaskArgs(CLI::App& cmd, TaskSpec& spec) {
  cmd.add_option("--task", spec.dataset,
                 "toy:<task> (category_label, translate_a_b, translate_b_a, antonym_a, successor_a, copy_a) "
                 "or a dataset file (FV .json, .csv, .tsv, SST-2, TREC)")
      ->capture_default_str();
  cmd.add_option("--template", spec.template_id, "prompt template (default: the dataset's)");
  cmd.add_option("--shots", spec.shots, "demonstrations per prompt")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--n", spec.n_prompts, "prompts")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--seed", spec.seed, "seed of the split, the queries and the demonstrations")
      ->capture_default_str();
  cmd.add_option("--labels", spec.label_words, "classification label words (replace the dataset's)")
      ->delimiter(',');
  addSplitOption(cmd, "--split", spec.split, "queries from this split");
}

TaskSpec functionTaskSpec() {
  TaskSpec s;
  s.dataset = "toy:antonym_a";  // a function task
  s.shots = 10;
  return s;
}

CLI::Option* addSplitOption(CLI::App& cmd, const std::string& name, std::string& split,
                            const std::string& help) {
  return cmd.add_option(name, split, help)
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test"}));
}

void addRunOutputArgs(CLI::App& cmd, RunOutputArgs& args) {
  cmd.add_option("--out", args.out, "write the run as a HeadScope session (.hscope)")->required();
  cmd.add_option("--json", args.json, "also write the run as JSON");
}

void writeRunOutputs(const LoadedModel& m, const ModelArgs& margs, const TaskSpec* task,
                     const AnalysisOutput& output, const RunOutputArgs& args) {
  Session s;
  s.model = modelIdentity(m.files);
  s.model["path"] = m.path;
  s.model["format"] = m.format;
  s.model["dtype"] = margs.dtype;
  s.tokenizer = {{"path", margs.tokenizer}};
  if (task) s.task = taskSpecToJson(*task);
  s.runs.push_back(output.run);
  s.tensors = output.tensors;
  const nlohmann::json runJson = output.run;
  writeRunFiles(s, args.out, args.json, args.json.empty() ? std::string() : runJson.dump(1) + "\n");
  printJson({{"run", output.run.id},
             {"method", output.run.method},
             {"summary", output.run.summary},
             {"grids",
              [&] {
                nlohmann::json ids = nlohmann::json::array();
                for (const auto& g : output.run.grids)
                  ids.push_back(g.id);
                return ids;
              }()},
             {"out", args.out},
             {"json", args.json}});
}

void checkRunDestinations(const RunOutputArgs& args) {
  std::vector<std::string> paths = {args.out};
  if (!args.json.empty()) paths.push_back(args.json);
  checkDestinations(paths);
}

void runTaskAnalysis(const ModelArgs& margs, const TaskSpec& spec, const RunOutputArgs& outArgs,
                     const TaskAnalysis& analysis) {
  checkRunDestinations(outArgs);
  const LoadedModel m = loadForCli(margs);
  const AnalysisOutput out = analysis(m, requireTokenizer(m));
  writeRunOutputs(m, margs, &spec, out, outArgs);
}

void runIclTaskAnalysis(const ModelArgs& margs, const TaskSpec& spec, const RunOutputArgs& outArgs,
                        const IclTaskAnalysis& analysis) {
  checkRunDestinations(outArgs);
  const LoadedModel m = loadForCli(margs);
  const Tokenizer& tok = requireTokenizer(m);
  const IclTask task = buildIclTask(tok, spec);
  const AnalysisOutput out = analysis(m, tok, task);
  writeRunOutputs(m, margs, &task.spec, out, outArgs);
}

AnalysisContext cliContext(const std::string& what) {
  AnalysisContext ctx;
  auto lastPct = std::make_shared<int>(-1);
  ctx.progress = [what, lastPct](double fraction, const std::string& message) {
    const int pct = static_cast<int>(fraction * 100.0);
    if (pct == *lastPct) return;
    *lastPct = pct;
    progress(what + ": " + std::to_string(pct) + "% " + message);
  };
  return ctx;
}

void printJson(const nlohmann::json& j) {
  std::cout << j.dump() << std::endl;
}

void progress(const std::string& message) {
  std::cerr << message << std::endl;
}

}  // namespace hs::cli
