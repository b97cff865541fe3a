// Hugging Face tokenizer.json (model.type "BPE"): byte-level (ByteLevel pre-tokenizer, optionally after
// Split regexes: GPT-2, Llama-3, Qwen2/3) or SentencePiece-style (Metaspace pre-tokenizer or the legacy
// Prepend/Replace "▁" normalizer, byte fallback: Llama-2, Mistral). BOS per tokenizer_config.json
// add_bos_token, else the post_processor's TemplateProcessing.
#include <cctype>
#include <functional>

#include <nlohmann/json.hpp>

#include "tokenizer/bytelevel_bpe.h"
#include "tokenizer/loaders.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/sentencepiece_bpe.h"
#include "tokenizer/token_text.h"
#include "tokenizer/wordlevel.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::detail {
namespace {

using nlohmann::json;

// A component ("normalizer", "pre_tokenizer", ...) flattened: Sequence members in order, nulls dropped.
std::vector<json> flatten(const json& node, const char* listKey) {
  std::vector<json> out;
  if (node.is_null()) return out;
  if (node.value("type", "") == "Sequence" && node.contains(listKey)) {
    for (const json& child : node[listKey])
      for (json& c : flatten(child, listKey))
        out.push_back(std::move(c));
  } else {
    out.push_back(node);
  }
  return out;
}

// Regex that matches a literal string (ASCII punctuation escaped; UTF-8 bytes are literal anyway).
std::string escapeRegex(const std::string& s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out += '\\';
    out += c;
  }
  return out;
}

std::string tokenContent(const json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content")) return t["content"].get<std::string>();
  return std::string();
}

struct Specials {
  int bos = -1, eos = -1;
  bool addBos = false;
};

// BOS/EOS and whether encode adds BOS: tokenizer_config.json first, then the post-processor template.
Specials resolveSpecials(const json& root, const json& config, const std::string& path,
                         const std::string& configPath,
                         const std::function<std::optional<int>(const std::string&)>& idOf) {
  Specials s;
  // Template "single": a SpecialToken before the first Sequence is the BOS it adds.
  for (const json& pp : flatten(root.value("post_processor", json()), "processors")) {
    if (pp.value("type", "") != "TemplateProcessing" || !pp.contains("single")) continue;
    bool seenSequence = false;
    for (const json& item : pp["single"]) {
      if (item.contains("Sequence")) {
        seenSequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].value("id", "");
        std::optional<int> id;
        if (pp.contains("special_tokens") && pp["special_tokens"].contains(name) &&
            !pp["special_tokens"][name].value("ids", json::array()).empty())
          id = pp["special_tokens"][name]["ids"][0].get<int>();
        else
          id = idOf(name);
        if (!id) fail(path, ": post_processor template uses special token \"", name, "\" that has no id");
        if (!seenSequence) {
          s.bos = *id;
          s.addBos = true;
        } else if (s.eos < 0) {
          s.eos = *id;
        }
      }
    }
  }
  if (config.is_object()) {
    auto idFor = [&](const char* key) -> int {
      if (!config.contains(key) || config[key].is_null()) return -1;
      const std::string content = tokenContent(config[key]);
      auto id = idOf(content);
      if (!id) fail(configPath, ": ", key, " \"", content, "\" is not a token of ", path);
      return *id;
    };
    if (int b = idFor("bos_token"); b >= 0) s.bos = b;
    if (int e = idFor("eos_token"); e >= 0) s.eos = e;
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
      s.addBos = config["add_bos_token"].get<bool>();
  }
  if (s.addBos && s.bos < 0) fail(path, ": BOS is to be added but no BOS token is defined");
  return s;
}

std::vector<std::pair<std::string, std::string>> readMerges(const json& model, const std::string& path) {
  std::vector<std::pair<std::string, std::string>> merges;
  if (!model.contains("merges")) return merges;
  if (!model["merges"].is_array()) fail(path, ": model.merges is not a list");
  for (size_t i = 0; i < model["merges"].size(); ++i) {
    const json& m = model["merges"][i];
    if (m.is_string()) {  // "a b"
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size())
        fail(path, ": model.merges[", i, "] is \"", s, "\", expected two pieces separated by one space");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(path, ": model.merges[", i, "] is ", m.dump(), ", expected \"a b\" or [\"a\", \"b\"]");
    }
  }
  return merges;
}

}  // namespace

std::unique_ptr<Tokenizer> loadHfTokenizerJson(const std::string& path, const std::string& configPath) {
  const json root = readJsonFile(path);
  const json config = configPath.empty() ? json() : readJsonFile(configPath);
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    fail(path, ": tokenizer.json has no \"model\" object");
  const json& model = root["model"];
  const std::string type = model.value("type", "BPE");
  if (type != "BPE" && type != "WordLevel")
    fail(path, ": unsupported model.type \"", type,
         "\" (HeadScope reads BPE and WordLevel tokenizers; Unigram and WordPiece are not supported)");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail(path, ": model.vocab is missing or not an object of piece -> id");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && !model[key].get<std::string>().empty())
      fail(path, ": model.", key, " is not supported");

  std::unordered_map<std::string, int> vocab;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer())
      fail(path, ": model.vocab[\"", piece, "\"] is ", id.dump(), ", expected an integer id");
    vocab.emplace(piece, id.get<int>());
  }
  const auto merges = readMerges(model, path);

  std::vector<AddedToken> added;
  for (const json& t : root.value("added_tokens", json::array())) {
    AddedToken a;
    a.content = t.value("content", "");
    a.id = t.value("id", -1);
    a.special = t.value("special", false);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    if (a.content.empty() || a.id < 0) fail(path, ": added_tokens entry ", t.dump(), " lacks content or id");
    added.push_back(std::move(a));
  }
  auto idOf = [&](const std::string& content) -> std::optional<int> {
    for (const AddedToken& a : added)
      if (a.content == content) return a.id;
    auto it = vocab.find(content);
    if (it != vocab.end()) return it->second;
    return std::nullopt;
  };
  const Specials specials = resolveSpecials(root, config, path, configPath, idOf);

  const std::vector<json> normalizers = flatten(root.value("normalizer", json()), "normalizers");
  const std::vector<json> preTokenizers = flatten(root.value("pre_tokenizer", json()), "pretokenizers");

  if (type == "WordLevel") {
    if (!normalizers.empty()) fail(path, ": a normalizer is not supported with a WordLevel model");
    for (const json& p : preTokenizers)
      if (p.value("type", "") != "WhitespaceSplit")
        fail(path, ": pre_tokenizer \"", p.value("type", ""),
             "\" is not supported with WordLevel (WhitespaceSplit)");
    WordLevelConfig cfg;
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto unk = idOf(model["unk_token"].get<std::string>());
      if (!unk)
        fail(path, ": model.unk_token \"", model["unk_token"].get<std::string>(),
             "\" is not in the vocabulary");
      cfg.unk = *unk;
    }
    cfg.vocab = std::move(vocab);
    cfg.added = std::move(added);
    cfg.bos = specials.bos;
    cfg.eos = specials.eos;
    cfg.addBos = specials.addBos;
    cfg.source = path;
    return std::make_unique<WordLevelTokenizer>(std::move(cfg));
  }
  bool byteLevel = false;
  for (const json& p : preTokenizers)
    byteLevel = byteLevel || p.value("type", "") == "ByteLevel";

  if (byteLevel) {
    ByteLevelBpeConfig cfg;
    for (const json& n : normalizers) {
      // NFC is accepted but not applied: inputs already in NFC (nearly all text) tokenize identically.
      const std::string t = n.value("type", "");
      if (t != "NFC") fail(path, ": normalizer \"", t, "\" is not supported with a ByteLevel pre-tokenizer");
    }
    for (const json& p : preTokenizers) {
      const std::string t = p.value("type", "");
      if (t == "ByteLevel") {
        if (p.value("use_regex", true)) cfg.splitRegexes.push_back(kGpt2SplitRegex);
        cfg.addPrefixSpace = p.value("add_prefix_space", false);
      } else if (t == "Split") {
        const std::string behavior = p.value("behavior", "Isolated");
        if (behavior != "Isolated" || p.value("invert", false))
          fail(path, ": pre_tokenizer Split with behavior \"", behavior, "\"",
               p.value("invert", false) ? " (inverted)" : "", " is not supported (only Isolated)");
        const json& pat = p.value("pattern", json());
        if (pat.contains("Regex"))
          cfg.splitRegexes.push_back(pat["Regex"].get<std::string>());
        else if (pat.contains("String"))
          cfg.splitRegexes.push_back(escapeRegex(pat["String"].get<std::string>()));
        else
          fail(path, ": pre_tokenizer Split has pattern ", pat.dump(),
               ", expected {\"Regex\": ...} or {\"String\": ...}");
      } else if (t == "Digits") {
        cfg.splitRegexes.push_back(p.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
      } else {
        fail(path, ": pre_tokenizer \"", t, "\" is not supported together with ByteLevel");
      }
    }
    cfg.vocab = std::move(vocab);
    cfg.merges = merges;
    cfg.added = std::move(added);
    cfg.ignoreMerges = model.value("ignore_merges", false);
    cfg.bos = specials.bos;
    cfg.eos = specials.eos;
    cfg.addBos = specials.addBos;
    cfg.source = path;
    return std::make_unique<ByteLevelBpeTokenizer>(std::move(cfg));
  }

  // SentencePiece-style: the "▁" conventions come from the normalizer or a Metaspace pre-tokenizer.
  SentencePieceBpeConfig cfg;
  bool sentencePiece = model.value("byte_fallback", false);
  cfg.prepend = PrependScheme::Never;
  for (const json& n : normalizers) {
    const std::string t = n.value("type", "");
    if (t == "Prepend") {
      if (n.value("prepend", "") != tokentext::kMetaSpace)
        fail(path, ": normalizer Prepend of \"", n.value("prepend", ""),
             "\" is not supported (expected \"▁\")");
      cfg.prepend = PrependScheme::Always;
      sentencePiece = true;
    } else if (t == "Replace") {
      const json& pat = n.value("pattern", json());
      if (!(pat.contains("String") && pat["String"] == " " &&
            n.value("content", "") == tokentext::kMetaSpace))
        fail(path, ": normalizer Replace ", pat.dump(), " -> \"", n.value("content", ""),
             "\" is not supported (expected \" \" -> \"▁\")");
      sentencePiece = true;
    } else {
      fail(path, ": normalizer \"", t, "\" is not supported");
    }
  }
  for (const json& p : preTokenizers) {
    const std::string t = p.value("type", "");
    if (t != "Metaspace")
      fail(path, ": pre_tokenizer \"", t, "\" is not supported for a SentencePiece-style BPE");
    if (p.value("replacement", tokentext::kMetaSpace) != tokentext::kMetaSpace)
      fail(path, ": Metaspace replacement \"", p.value("replacement", ""),
           "\" is not supported (expected \"▁\")");
    const std::string scheme =
        p.value("prepend_scheme", p.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always")
      cfg.prepend = PrependScheme::Always;
    else if (scheme == "first")
      cfg.prepend = PrependScheme::First;
    else if (scheme == "never")
      cfg.prepend = PrependScheme::Never;
    else
      fail(path, ": Metaspace prepend_scheme \"", scheme, "\" is not one of always, first, never");
    cfg.splitOnMetaSpace = p.value("split", true);
    sentencePiece = true;
  }
  if (!sentencePiece)
    fail(path,
         ": unsupported BPE tokenizer: neither a ByteLevel pre-tokenizer nor SentencePiece conventions "
         "(Metaspace, \"▁\" normalizer or byte_fallback)");
  cfg.byteFallback = model.value("byte_fallback", false);
  cfg.fuseUnk = model.value("fuse_unk", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto unk = idOf(model["unk_token"].get<std::string>());
    if (!unk)
      fail(path, ": model.unk_token \"", model["unk_token"].get<std::string>(),
           "\" is not in the vocabulary");
    cfg.unk = *unk;
  }
  cfg.vocab = std::move(vocab);
  cfg.merges = merges;
  cfg.added = std::move(added);
  cfg.bos = specials.bos;
  cfg.eos = specials.eos;
  cfg.addBos = specials.addBos;
  cfg.source = path;
  return std::make_unique<SentencePieceBpeTokenizer>(std::move(cfg));
}

}  // namespace hs::detail
