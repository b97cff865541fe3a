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
#include "util/json_read.h"

namespace hs::detail {

std::unique_ptr<Tokenizer> loadGpt2VocabMerges(const std::string& vocabPath, const std::string& mergesPath,
                                               const std::string& configPath) {
  using nlohmann::json;
  const json vocabJson = readJsonFile(vocabPath, json_limits::vocab());
  if (!vocabJson.is_object() || vocabJson.empty()) fail(vocabPath, ": expected a JSON object of piece -> id");
  ByteLevelBpeConfig cfg;
  // Ids are bounded like a model's vocabulary: one id of 1.5e9 would size the id tables at gigabytes.
  JsonNode(vocabJson, vocabPath).forEachMember([&](const std::string& piece, const JsonNode& id) {
    cfg.vocab.emplace(piece, id.intIn(0, (1 << 22) - 1));
  });

  std::istringstream merges(readTextFile(mergesPath, "merges.txt", 256ull << 20));
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
    const json configJson = readJsonFile(configPath, json_limits::tokenizerConfig());
    const JsonNode configNode(configJson, configPath);
    if (!configJson.is_object()) configNode.wrongType("an object");
    auto idFor = [&](const char* key) -> int {
      const auto t = configNode.find(key);
      if (!t) return -1;
      const std::string content = t->isString() ? t->string() : t->optString("content", "");
      auto it = cfg.vocab.find(content);
      if (it == cfg.vocab.end()) t->fail("\"", content, "\" is not in ", vocabPath);
      return it->second;
    };
    if (int b = idFor("bos_token"); b >= 0) cfg.bos = b;
    if (int e = idFor("eos_token"); e >= 0) cfg.eos = e;
    if (configNode.has("add_bos_token") && configNode.at("add_bos_token").isBool())
      cfg.addBos = configNode.at("add_bos_token").boolean();
    if (configNode.has("add_prefix_space") && configNode.at("add_prefix_space").isBool())
      cfg.addPrefixSpace = configNode.at("add_prefix_space").boolean();
  }
  cfg.source = vocabPath;
  return std::make_unique<ByteLevelBpeTokenizer>(std::move(cfg));
}

}  // namespace hs::detail
