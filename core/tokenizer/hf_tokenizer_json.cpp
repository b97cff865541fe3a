// Hugging Face tokenizer.json (model.type "BPE" or "WordLevel"): byte-level (ByteLevel pre-tokenizer,
// optionally after Split regexes: GPT-2, Llama-3, Qwen2/3) or SentencePiece-style (Metaspace pre-tokenizer or
// the legacy Prepend/Replace "▁" normalizer, byte fallback: Llama-2, Mistral, Gemma). Normalizers: the
// Unicode normal forms, Prepend, Replace of a literal. BOS per tokenizer_config.json add_bos_token, else the
// post_processor's TemplateProcessing.
#include <cctype>
#include <functional>

#include <nlohmann/json.hpp>

#include "tokenizer/bytelevel_bpe.h"
#include "tokenizer/loaders.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/sentencepiece_bpe.h"
#include "tokenizer/token_text.h"
#include "tokenizer/wordlevel.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/json_read.h"

namespace hs::detail {
namespace {

using nlohmann::json;

// Ids are bounded like a model's vocabulary (config_limits.h kMaxVocab): one id of 1.5e9 would otherwise
// size the id tables at tens of gigabytes.
constexpr int kMaxTokenId = (1 << 22) - 1;

// A component ("normalizer", "pre_tokenizer", ...) flattened: Sequence members in order, nulls dropped.
// The nodes refer into the parsed file (no copies); nesting is bounded by the JSON reader.
void flattenInto(const JsonNode& node, const char* listKey, std::vector<JsonNode>& out) {
  if (node.isNull()) return;
  if (!node.isObject()) node.wrongType("an object");
  if (node.optString("type", "") == "Sequence" && node.has(listKey)) {
    node.at(listKey).forEachElement([&](size_t, const JsonNode& child) { flattenInto(child, listKey, out); });
  } else {
    out.push_back(node);
  }
}
std::vector<JsonNode> flatten(const JsonNode& root, const char* key, const char* listKey) {
  std::vector<JsonNode> out;
  if (auto n = root.find(key)) flattenInto(*n, listKey, out);
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

// A token written as "text" or {"content": "text", ...} (tokenizer_config.json); null: none.
std::string tokenContent(const JsonNode& t) {
  if (t.isNull()) return std::string();
  if (t.isString()) return t.string();
  if (t.isObject()) return t.optString("content", "");
  t.wrongType("a token string or {\"content\": ...}");
}

struct Specials {
  int bos = -1, eos = -1;
  bool addBos = false;
};

// BOS/EOS and whether encode adds BOS: tokenizer_config.json first, then the post-processor template.
Specials resolveSpecials(const JsonNode& root, const std::optional<JsonNode>& config,
                         const std::function<std::optional<int>(const std::string&)>& idOf) {
  Specials s;
  // Template "single": a SpecialToken before the first Sequence is the BOS it adds.
  for (const JsonNode& pp : flatten(root, "post_processor", "processors")) {
    if (pp.optString("type", "") != "TemplateProcessing" || !pp.has("single")) continue;
    bool seenSequence = false;
    pp.at("single").forEachElement([&](size_t, const JsonNode& item) {
      if (!item.isObject()) item.wrongType("an object");
      if (item.has("Sequence")) {
        seenSequence = true;
      } else if (item.has("SpecialToken")) {
        const std::string name = item.at("SpecialToken").optString("id", "");
        std::optional<int> id;
        const auto specials = pp.find("special_tokens");
        if (specials && specials->has(name) && specials->at(name).has("ids") &&
            specials->at(name).at("ids").size() > 0)
          id = specials->at(name).at("ids").at(size_t{0}).intIn(0, kMaxTokenId);
        else
          id = idOf(name);
        if (!id) item.fail("post_processor template uses special token \"", name, "\" that has no id");
        if (!seenSequence) {
          s.bos = *id;
          s.addBos = true;
        } else if (s.eos < 0) {
          s.eos = *id;
        }
      }
    });
  }
  if (config && config->isObject()) {
    auto idFor = [&](const char* key) -> int {
      const auto t = config->find(key);
      if (!t) return -1;
      const std::string content = tokenContent(*t);
      if (content.empty()) return -1;  // "bos_token": null (Qwen2)
      auto id = idOf(content);
      if (!id) t->fail("\"", content, "\" is not a token of ", root.file());
      return *id;
    };
    if (int b = idFor("bos_token"); b >= 0) s.bos = b;
    if (int e = idFor("eos_token"); e >= 0) s.eos = e;
    if (config->has("add_bos_token") && config->at("add_bos_token").isBool())
      s.addBos = config->at("add_bos_token").boolean();
  }
  if (s.addBos && s.bos < 0) fail(root.file(), ": BOS is to be added but no BOS token is defined");
  return s;
}

// The normalizer steps HeadScope applies; anything else is refused in one line naming the file and the type.
Normalizer readNormalizer(const std::vector<JsonNode>& normalizers, const std::string& path) {
  std::vector<NormalizerStep> steps;
  for (const JsonNode& n : normalizers) {
    const std::string t = n.optString("type", "");
    if (t == "NFC") {
      steps.push_back({NormalizerStep::Kind::NFC, {}, {}});
    } else if (t == "NFD") {
      steps.push_back({NormalizerStep::Kind::NFD, {}, {}});
    } else if (t == "NFKC") {
      steps.push_back({NormalizerStep::Kind::NFKC, {}, {}});
    } else if (t == "NFKD") {
      steps.push_back({NormalizerStep::Kind::NFKD, {}, {}});
    } else if (t == "Prepend") {
      steps.push_back({NormalizerStep::Kind::Prepend, n.optString("prepend", ""), {}});
    } else if (t == "Replace") {
      const auto pat = n.find("pattern");
      if (!pat || !pat->isObject() || !pat->has("String") || !pat->at("String").isString() ||
          pat->at("String").string().empty() || !n.has("content") || !n.at("content").isString())
        fail(path, ": normalizer Replace ", pat ? jsonExcerpt(pat->raw()) : std::string("without a pattern"),
             " is not supported (HeadScope replaces a literal {\"String\": ...} by a \"content\" string)");
      steps.push_back({NormalizerStep::Kind::Replace, pat->at("String").string(), n.at("content").string()});
    } else {
      fail(path, ": normalizer \"", t,
           "\" is not supported (HeadScope applies NFC, NFD, NFKC, NFKD, Prepend and Replace of a literal)");
    }
  }
  return Normalizer(std::move(steps));
}

std::vector<std::pair<std::string, std::string>> readMerges(const JsonNode& model) {
  std::vector<std::pair<std::string, std::string>> merges;
  const auto list = model.find("merges");
  if (!list) return merges;
  list->forEachElement([&](size_t i, const JsonNode& m) {
    if (m.isString()) {  // "a b"
      const std::string& s = m.string();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size())
        m.fail("is \"", jsonExcerpt(m.raw()), "\", expected two pieces separated by one space");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.isArray() && m.size() == 2 && m.at(size_t{0}).isString() && m.at(size_t{1}).isString()) {
      merges.emplace_back(m.at(size_t{0}).string(), m.at(size_t{1}).string());  // ["a", "b"]
    } else {
      m.wrongType("\"a b\" or [\"a\", \"b\"]");
    }
  });
  return merges;
}

// model.type after the checks every type shares: a "model" object with a "vocab" object, no word affixes.
std::string checkedModelType(const JsonNode& root, const std::string& path) {
  if (!root.isObject() || !root.has("model") || !root.at("model").isObject())
    fail(path, ": tokenizer.json has no \"model\" object");
  const JsonNode model = root.at("model");
  const std::string type = model.optString("type", "BPE");
  if (type != "BPE" && type != "WordLevel")
    fail(path, ": unsupported model.type \"", type,
         "\" (HeadScope reads BPE and WordLevel tokenizers; Unigram and WordPiece are not supported)");
  if (!model.has("vocab") || !model.at("vocab").isObject())
    fail(path, ": model.vocab is missing or not an object of piece -> id");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!model.optString(key, "").empty()) fail(path, ": model.", key, " is not supported");
  return type;
}

std::vector<AddedToken> readAddedTokens(const JsonNode& root) {
  std::vector<AddedToken> added;
  if (auto list = root.find("added_tokens")) {
    list->forEachElement([&](size_t, const JsonNode& t) {
      AddedToken a;
      a.content = t.optString("content", "");
      a.id = static_cast<int>(t.optInteger("id", -1, -1, kMaxTokenId));
      a.special = t.optBool("special", false);
      a.lstrip = t.optBool("lstrip", false);
      a.rstrip = t.optBool("rstrip", false);
      a.normalized = t.optBool("normalized", !a.special);
      if (a.content.empty() || a.id < 0) t.fail("lacks content or id");
      added.push_back(std::move(a));
    });
  }
  return added;
}

// What every model type takes from tokenizer.json and tokenizer_config.json.
struct Parts {
  std::string path;
  std::unordered_map<std::string, int> vocab;
  std::vector<AddedToken> added;
  Specials specials;
  std::vector<JsonNode> normalizers, preTokenizers;
  Normalizer normalizer;

  // An added token's id first, then the vocabulary's.
  std::optional<int> idOf(const std::string& content) const {
    for (const AddedToken& a : added)
      if (a.content == content) return a.id;
    auto it = vocab.find(content);
    if (it != vocab.end()) return it->second;
    return std::nullopt;
  }
};

// Moves the pieces, added tokens and special ids into a tokenizer's config (after every idOf lookup).
template <class Config>
void moveCommonInto(Config& cfg, Parts& parts) {
  cfg.vocab = std::move(parts.vocab);
  cfg.added = std::move(parts.added);
  cfg.bos = parts.specials.bos;
  cfg.eos = parts.specials.eos;
  cfg.addBos = parts.specials.addBos;
  cfg.source = parts.path;
}

// The id of model.unk_token when it is a string; one outside the vocabulary is an error.
std::optional<int> unkTokenId(const JsonNode& model, const Parts& parts) {
  if (!model.has("unk_token") || !model.at("unk_token").isString()) return std::nullopt;
  const std::string unkToken = model.at("unk_token").string();
  auto unk = parts.idOf(unkToken);
  if (!unk) fail(parts.path, ": model.unk_token \"", unkToken, "\" is not in the vocabulary");
  return unk;
}

std::unique_ptr<Tokenizer> makeWordLevel(const JsonNode& model, Parts& parts) {
  for (const JsonNode& p : parts.preTokenizers)
    if (p.optString("type", "") != "WhitespaceSplit")
      fail(parts.path, ": pre_tokenizer \"", p.optString("type", ""),
           "\" is not supported with WordLevel (WhitespaceSplit)");
  WordLevelConfig cfg;
  if (auto unk = unkTokenId(model, parts)) cfg.unk = *unk;
  cfg.normalizer = std::move(parts.normalizer);
  moveCommonInto(cfg, parts);
  return std::make_unique<WordLevelTokenizer>(std::move(cfg));
}

// The split regexes and prefix space of ByteLevel and the Split / Digits pre-tokenizers around it.
void readByteLevelPreTokenizers(const std::vector<JsonNode>& preTokenizers, const std::string& path,
                                ByteLevelBpeConfig& cfg) {
  for (const JsonNode& p : preTokenizers) {
    const std::string t = p.optString("type", "");
    if (t == "ByteLevel") {
      if (p.optBool("use_regex", true)) cfg.splitRegexes.push_back(kGpt2SplitRegex);
      cfg.addPrefixSpace = p.optBool("add_prefix_space", false);
    } else if (t == "Split") {
      const std::string behavior = p.optString("behavior", "Isolated");
      const bool invert = p.optBool("invert", false);
      if (behavior != "Isolated" || invert)
        fail(path, ": pre_tokenizer Split with behavior \"", behavior, "\"", invert ? " (inverted)" : "",
             " is not supported (only Isolated)");
      const JsonNode pat = p.at("pattern");
      if (pat.has("Regex"))
        cfg.splitRegexes.push_back(pat.at("Regex").string());
      else if (pat.has("String"))
        cfg.splitRegexes.push_back(escapeRegex(pat.at("String").string()));
      else
        pat.wrongType("{\"Regex\": ...} or {\"String\": ...}");
    } else if (t == "Digits") {
      cfg.splitRegexes.push_back(p.optBool("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else {
      fail(path, ": pre_tokenizer \"", t, "\" is not supported together with ByteLevel");
    }
  }
}

std::unique_ptr<Tokenizer> makeByteLevel(const JsonNode& model, Parts& parts,
                                         std::vector<std::pair<std::string, std::string>> merges) {
  ByteLevelBpeConfig cfg;
  cfg.normalizer = std::move(parts.normalizer);
  readByteLevelPreTokenizers(parts.preTokenizers, parts.path, cfg);
  cfg.merges = std::move(merges);
  cfg.ignoreMerges = model.optBool("ignore_merges", false);
  moveCommonInto(cfg, parts);
  return std::make_unique<ByteLevelBpeTokenizer>(std::move(cfg));
}

// One Metaspace pre-tokenizer: the "▁" replacement, when it is prepended, and whether it splits.
void readMetaspace(const JsonNode& p, const std::string& path, SentencePieceBpeConfig& cfg) {
  const std::string t = p.optString("type", "");
  if (t != "Metaspace")
    fail(path, ": pre_tokenizer \"", t, "\" is not supported for a SentencePiece-style BPE");
  const std::string replacement = p.optString("replacement", tokentext::kMetaSpace);
  if (replacement != tokentext::kMetaSpace)
    fail(path, ": Metaspace replacement \"", replacement, "\" is not supported (expected \"▁\")");
  const std::string scheme =
      p.optString("prepend_scheme", p.optBool("add_prefix_space", true) ? "always" : "never");
  if (scheme == "always")
    cfg.prepend = PrependScheme::Always;
  else if (scheme == "first")
    cfg.prepend = PrependScheme::First;
  else if (scheme == "never")
    cfg.prepend = PrependScheme::Never;
  else
    fail(path, ": Metaspace prepend_scheme \"", scheme, "\" is not one of always, first, never");
  cfg.splitOnMetaSpace = p.optBool("split", true);
  cfg.metaspace = true;
}

// SentencePiece-style: the "▁" conventions come from the normalizer or a Metaspace pre-tokenizer.
std::unique_ptr<Tokenizer> makeSentencePiece(const JsonNode& model, Parts& parts,
                                             std::vector<std::pair<std::string, std::string>> merges) {
  SentencePieceBpeConfig cfg;
  bool sentencePiece = model.optBool("byte_fallback", false);
  cfg.prepend = PrependScheme::Never;
  for (const JsonNode& n : parts.normalizers) {
    const std::string t = n.optString("type", "");
    if ((t == "Prepend" && n.optString("prepend", "") == tokentext::kMetaSpace) ||
        (t == "Replace" && n.optString("content", "") == tokentext::kMetaSpace))
      sentencePiece = true;
  }
  cfg.normalizer = std::move(parts.normalizer);
  for (const JsonNode& p : parts.preTokenizers) {
    readMetaspace(p, parts.path, cfg);
    sentencePiece = true;
  }
  if (!sentencePiece)
    fail(parts.path,
         ": unsupported BPE tokenizer: neither a ByteLevel pre-tokenizer nor SentencePiece conventions "
         "(Metaspace, \"▁\" normalizer or byte_fallback)");
  cfg.byteFallback = model.optBool("byte_fallback", false);
  cfg.fuseUnk = model.optBool("fuse_unk", false);
  if (auto unk = unkTokenId(model, parts)) cfg.unk = *unk;
  cfg.merges = std::move(merges);
  moveCommonInto(cfg, parts);
  return std::make_unique<SentencePieceBpeTokenizer>(std::move(cfg));
}

}  // namespace

std::unique_ptr<Tokenizer> loadHfTokenizerJson(const std::string& path, const std::string& configPath) {
  const json rootJson = readJsonFile(path, json_limits::tokenizer());
  const json configJson =
      configPath.empty() ? json() : readJsonFile(configPath, json_limits::tokenizerConfig());
  const JsonNode root(rootJson, path);
  std::optional<JsonNode> config;
  if (!configPath.empty()) config = JsonNode(configJson, configPath);
  const std::string type = checkedModelType(root, path);
  const JsonNode model = root.at("model");

  Parts parts;
  parts.path = path;
  model.at("vocab").forEachMember([&](const std::string& piece, const JsonNode& id) {
    parts.vocab.emplace(piece, id.intIn(0, kMaxTokenId));
  });
  auto merges = readMerges(model);
  parts.added = readAddedTokens(root);
  parts.specials =
      resolveSpecials(root, config, [&](const std::string& content) { return parts.idOf(content); });
  parts.normalizers = flatten(root, "normalizer", "normalizers");
  parts.preTokenizers = flatten(root, "pre_tokenizer", "pretokenizers");
  parts.normalizer = readNormalizer(parts.normalizers, path);

  if (type == "WordLevel") return makeWordLevel(model, parts);
  for (const JsonNode& p : parts.preTokenizers)
    if (p.optString("type", "") == "ByteLevel") return makeByteLevel(model, parts, std::move(merges));
  return makeSentencePiece(model, parts, std::move(merges));
}

}  // namespace hs::detail
