#include "cli_common.h"

#include <iostream>
#include <sstream>

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

std::vector<int64_t> parseIdList(const std::string& s) {
  std::vector<int64_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) fail("--ids: '", item, "' is not an integer token id");
    ids.push_back(v);
  }
  if (ids.empty()) fail("--ids: no token ids given");
  return ids;
}

std::vector<std::pair<int, int>> parseHeadList(const std::string& s) {
  std::vector<std::pair<int, int>> heads;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
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

std::vector<int64_t> promptIds(const LoadedModel& m, const std::string& text, const std::string& ids) {
  if (!text.empty() && !ids.empty()) fail("give either --text or --ids, not both");
  if (!ids.empty()) return parseIdList(ids);
  if (text.empty()) fail("give a prompt with --text or --ids");
  const auto enc = requireTokenizer(m).encode(text);
  return {enc.begin(), enc.end()};
}

void printJson(const nlohmann::json& j) {
  std::cout << j.dump() << std::endl;
}

void progress(const std::string& message) {
  std::cerr << message << std::endl;
}

}  // namespace hs::cli
