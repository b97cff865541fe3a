#include "model/load/gguf_vocab_meta.h"

#include "model/config_limits.h"
#include "util/error.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

// The metadata keys are flat ("tokenizer.ggml.tokens"): a key is a name, not a path.
class Meta {
 public:
  Meta(const json& m, std::string path) : m_(m), path_(std::move(path)) {}

  std::optional<JsonNode> find(const std::string& key) const {
    auto it = m_.find(key);
    if (it == m_.end() || it->is_null()) return std::nullopt;
    return JsonNode(*it, path_, "metadata " + key);
  }
  JsonNode at(const std::string& key) const {
    auto n = find(key);
    if (!n) fail(path_, ": metadata key ", key, " is missing");
    return *n;
  }
  // A token id, or -1 for none: llama.cpp writes "none" as the U32 0xFFFFFFFF (its -1).
  int id(const std::string& key) const {
    auto n = find(key);
    if (!n) return -1;
    if (n->raw().is_number_unsigned() && n->raw().get<uint64_t>() == 0xFFFFFFFFull) return -1;
    return n->intIn(-1, static_cast<int>(limits::kMaxVocab - 1));
  }
  bool flag(const std::string& key, bool dflt) const {
    auto n = find(key);
    return n ? n->boolean() : dflt;
  }

 private:
  const json& m_;
  std::string path_;
};

}  // namespace

GgufVocab ggufVocabFromMetadata(const json& metadata, const std::string& path) {
  const Meta m(metadata, path);
  GgufVocab v;
  v.source = path;
  v.model = m.at("tokenizer.ggml.model").string();
  if (auto pre = m.find("tokenizer.ggml.pre"); pre && pre->isString()) v.pre = pre->string();
  const uint64_t maxTokens = static_cast<uint64_t>(limits::kMaxVocab);
  m.at("tokenizer.ggml.tokens").array(maxTokens);
  m.at("tokenizer.ggml.tokens").forEachElement([&](size_t, const JsonNode& t) {
    v.tokens.push_back(t.string());
  });
  if (auto scores = m.find("tokenizer.ggml.scores")) {
    scores->array(maxTokens);
    scores->forEachElement(
        [&](size_t, const JsonNode& s) { v.scores.push_back(static_cast<float>(s.number())); });
  }
  if (auto types = m.find("tokenizer.ggml.token_type")) {
    types->array(maxTokens);
    types->forEachElement([&](size_t, const JsonNode& t) { v.token_types.push_back(t.intIn(0, 255)); });
  }
  if (auto merges = m.find("tokenizer.ggml.merges")) {
    merges->array(maxTokens);
    merges->forEachElement([&](size_t, const JsonNode& s) { v.merges.push_back(s.string()); });
  }
  v.bos = m.id("tokenizer.ggml.bos_token_id");
  v.eos = m.id("tokenizer.ggml.eos_token_id");
  v.unk = m.id("tokenizer.ggml.unknown_token_id");
  v.pad = m.id("tokenizer.ggml.padding_token_id");
  v.add_bos = m.flag("tokenizer.ggml.add_bos_token", true);
  v.add_eos = m.flag("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = m.flag("tokenizer.ggml.add_space_prefix", true);
  return v;
}

}  // namespace hs
