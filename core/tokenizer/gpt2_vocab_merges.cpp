// GPT-2's original files: vocab.json (piece -> id, byte-mapped pieces) and merges.txt ("#version" line,
// then one "a b" merge a line, in rank order). "<|endoftext|>" is GPT-2's BOS/EOS and is split out of text
// as a special token; no BOS is added unless a tokenizer_config.json beside the files says add_bos_token.
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/bytelevel_bpe.h"
#include "tokenizer/loaders.h"
#include "tokenizer/regex_splitter.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::detail {

std::unique_ptr<Tokenizer> loadGpt2VocabMerges(const std::string& vocabPath, const std::string& mergesPath,
                                               const std::string& configPath) {
  using nlohmann::json;
  const json vocabJson = readJsonFile(vocabPath);
  if (!vocabJson.is_object() || vocabJson.empty()) fail(vocabPath, ": expected a JSON object of piece -> id");
  ByteLevelBpeConfig cfg;
  for (const auto& [piece, id] : vocabJson.items()) {
    if (!id.is_number_integer())
      fail(vocabPath, ": entry \"", piece, "\" is ", id.dump(), ", expected an integer id");
    cfg.vocab.emplace(piece, id.get<int>());
  }

  std::istringstream merges(readTextFile(mergesPath));
  std::string line;
  size_t lineNo = 0;
  while (std::getline(merges, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size() ||
        line.find(' ', sp + 1) != std::string::npos)
      fail(mergesPath, ":", lineNo, ": \"", line,
           "\" is not a merge (expected two pieces separated by one space)");
    cfg.merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  if (cfg.merges.empty()) fail(mergesPath, ": no merges");

  cfg.splitRegexes = {kGpt2SplitRegex};
  const std::string eot = "<|endoftext|>";
  if (auto it = cfg.vocab.find(eot); it != cfg.vocab.end()) {
    cfg.added.push_back({eot, it->second, true, false, false});
    cfg.bos = cfg.eos = it->second;
  }
  if (!configPath.empty()) {
    const json config = readJsonFile(configPath);
    auto idFor = [&](const char* key) -> int {
      if (!config.contains(key) || config[key].is_null()) return -1;
      const std::string content =
          config[key].is_string() ? config[key].get<std::string>() : config[key].value("content", "");
      auto it = cfg.vocab.find(content);
      if (it == cfg.vocab.end()) fail(configPath, ": ", key, " \"", content, "\" is not in ", vocabPath);
      return it->second;
    };
    if (int b = idFor("bos_token"); b >= 0) cfg.bos = b;
    if (int e = idFor("eos_token"); e >= 0) cfg.eos = e;
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
      cfg.addBos = config["add_bos_token"].get<bool>();
    if (config.contains("add_prefix_space") && config["add_prefix_space"].is_boolean())
      cfg.addPrefixSpace = config["add_prefix_space"].get<bool>();
  }
  cfg.source = vocabPath;
  return std::make_unique<ByteLevelBpeTokenizer>(std::move(cfg));
}

}  // namespace hs::detail
