#include "cli_common.h"

#include <ATen/Context.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "analysis/framework/registry.h"
#include "model/compute_dtype.h"
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
                 "tokenizer.json, vocab.json (merges.txt beside it), llama2.c tok.bin or .gguf")
      ->default_str("the model's own");
  // f16 is offered only where it runs: with CUDA, or a libtorch with float16 CPU kernels (1.13 has none).
  const bool f16 = at::hasCUDA() || computeDtypeProblem(at::kHalf, at::kCPU).empty();
  std::vector<std::string> dtypes = {"auto", "f32", "bf16"};
  if (f16) dtypes.push_back("f16");
  cmd.add_option(
         "--dtype", args.dtype,
         std::string("compute dtype; auto: f32 when that copy fits comfortably in memory, else the "
                     "checkpoint's; bf16 keeps norms, softmax, attention scores, pattern·V, the residual "
                     "stream and logits in float32") +
             (f16 ? "" : "; float16 needs CUDA with this libtorch"))
      ->capture_default_str()
      ->check(CLI::IsMember(dtypes));
  cmd.add_option("--device", args.device, "cpu, cuda, cuda:N, or cuda:0,cuda:1 to split the layers")
      ->capture_default_str();
  cmd.add_option("--gpu-layers", args.gpu_layers,
                 "the last N layers and the head on --device, the rest on CPU")
      ->default_str("all layers on --device")
      ->check(CLI::NonNegativeNumber);
}

LoadedModel loadForCli(const ModelArgs& args) {
  LoadOptions opts;
  opts.tokenizer = args.tokenizer;
  opts.dtype = args.dtype;
  opts.device = args.device;
  opts.gpu_layers = args.gpu_layers;
  progress("loading " + args.model);
  LoadedModel m = loadModel(args.model, opts);
  for (const auto& n : m.notes)
    if (n.rfind("dtype auto:", 0) == 0 || n.rfind("weights:", 0) == 0 || n.rfind("devices:", 0) == 0)
      progress(n);
  return m;
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

std::vector<HeadRef> parseHeadList(const std::string& s) {
  static const OptionSpec spec = [] {
    OptionSpec o;
    o.key = "ablate";
    o.type = OptionType::HeadList;
    o.default_value = nlohmann::json::array();
    return o;
  }();
  std::vector<HeadRef> heads;
  for (const nlohmann::json& h : parseOptionText(spec, s))
    heads.push_back({h[0].get<int>(), h[1].get<int>()});
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
  cmd.add_option("--template", spec.template_id, "prompt template (default: the dataset's)")
      ->default_str("the dataset's");
  cmd.add_option("--shots", spec.shots, "demonstrations per prompt")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--n", spec.n_prompts, "prompts")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--seed", spec.seed, "seed of the split, the queries and the demonstrations")
      ->capture_default_str();
  cmd.add_option("--labels", spec.label_words, "classification label words (replace the dataset's)")
      ->delimiter(',')
      ->default_str("the dataset's");
  cmd.add_option("--split", spec.split, "queries from this split")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test"}));
}

void addRunOutputArgs(CLI::App& cmd, RunOutputArgs& args) {
  cmd.add_option("--out", args.out, "write the run as a HeadScope session (.hscope)")->required();
  cmd.add_option("--json", args.json, "also write the run as JSON")->default_str("none");
  cmd.add_option("--run-id", args.run_id, "the run's id in the session")->default_str("<method>-1");
}

std::string modelLabel(const LoadedModel& m, const ModelArgs& margs) {
  return margs.model == "toy" ? "toy" : m.path;
}

void writeRunOutputs(const LoadedModel& m, const ModelArgs& margs, const TaskSpec* task,
                     const AnalysisOutput& output, const RunOutputArgs& args) {
  Session s;
  s.model = modelIdentity(m.files);
  s.model["path"] = modelLabel(m, margs);
  s.model["format"] = m.format;
  s.model["dtype"] = dtypeName(m.model->dtype());  // what it ran at ("auto" resolved)
  s.tokenizer = {{"path", margs.tokenizer}};
  if (task) s.task = taskSpecToJson(*task);
  s.runs.push_back(output.run);
  s.tensors = output.tensors;
  s.methods = methodRecords(s.runs);
  const nlohmann::json runJson = output.run;
  writeRunFiles(s, args.out, args.json, args.json.empty() ? std::string() : runJson.dump(1) + "\n");
  nlohmann::json grids = nlohmann::json::array();
  for (const auto& g : output.run.grids)
    grids.push_back(g.id);
  printJson({{"run", output.run.id},
             {"method", output.run.method},
             {"label", runLabel(output.run)},
             {"summary", output.run.summary},
             {"grids", grids},
             {"out", args.out},
             {"json", args.json}});
}

void checkRunDestinations(const RunOutputArgs& args) {
  std::vector<std::string> paths = {args.out};
  if (!args.json.empty()) paths.push_back(args.json);
  checkDestinations(paths);
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
