#pragma once
// The one bounded JSON reader of every JSON input (config.json, tokenizer.json, tokenizer_config.json,
// vocab.json, datasets, sessions, safetensors headers, recipes) and typed readers of its fields.
//
// Parsing goes through a SAX builder that enforces the kind's limits while the tree is built: size,
// nesting depth (a few hundred levels: the recursive walks that follow — dump, copies, comparisons —
// stay shallow), number of values, string length and duplicate keys. A hostile file is refused with
// one line naming the file, the limit and the number found, before it can exhaust the stack or memory.
//
// JsonNode reads a field with its file and key path in every message ("<file>: model.vocab: expected
// an object, found an array"), reads integers as 64-bit and checks them against an explicit range
// (no wraparound), and quotes at most a short excerpt of a wrong value.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"

namespace hs {

struct JsonLimits {
  const char* kind = "JSON file";  // names the kind of file in messages ("tokenizer.json")
  uint64_t max_bytes = 64ull << 20;
  int max_depth = 256;
  uint64_t max_values = 4'000'000;  // nodes of the tree (every object, array, string, number, ...)
  uint64_t max_string_bytes = 16ull << 20;
  bool reject_duplicate_keys = true;  // a repeated key in one object is an error, not "last wins"
};

// The limits per kind of input. Generous for real files (Gemma-3's tokenizer.json is 33 MB with ~0.5M
// values; a session with grids of a 80 x 64 model a few MB), tight enough that a file within them
// parses into well under 1 GB.
namespace json_limits {
JsonLimits general();
JsonLimits modelConfig();      // config.json, generation_config.json
JsonLimits tokenizer();        // tokenizer.json
JsonLimits tokenizerConfig();  // tokenizer_config.json
JsonLimits vocab();            // GPT-2 vocab.json
JsonLimits shardIndex();       // model.safetensors.index.json
JsonLimits dataset();          // FV task lists and other JSON datasets
JsonLimits session();          // the session JSON inside a .hscope
JsonLimits safetensorsHeader();
JsonLimits recipe();         // training recipes and trainer state
JsonLimits batchPlan();      // a batch plan (batch/plan.h)
JsonLimits batchJobIndex();  // a batch folder's jobs.json
}  // namespace json_limits

// Parses `text` within `limits`; errors start with `where` (the file) and quote at most a short excerpt.
nlohmann::json parseJsonBounded(std::string_view text, const std::string& where, const JsonLimits& limits);

// At most `maxChars` characters of `v` as JSON (with "..." when cut); safe on any tree this reader built.
std::string jsonExcerpt(const nlohmann::json& v, size_t maxChars = 60);
// "an object", "an array", "a string", "an integer", "a number", "true or false", "null".
std::string jsonKind(const nlohmann::json& v);

// A value inside a parsed file, with the file and the key path that lead to it.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& v, std::string file, std::string path = {})
      : v_(&v), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *v_; }
  const std::string& file() const { return file_; }
  // "model.vocab", "added_tokens[3].id"; empty for the top level.
  const std::string& path() const { return path_; }
  // "<file>: <path>" (or "<file>" at the top level): the prefix of every message about this value.
  std::string where() const;

  bool isNull() const { return v_->is_null(); }
  bool isObject() const { return v_->is_object(); }
  bool isArray() const { return v_->is_array(); }
  bool isString() const { return v_->is_string(); }
  bool isInteger() const { return v_->is_number_integer(); }
  bool isBool() const { return v_->is_boolean(); }

  // Members. has(): present and not null. at(): required (missing or null is an error naming the key).
  // find(): absent or null → nullopt.
  bool has(const std::string& key) const;
  JsonNode at(const std::string& key) const;
  std::optional<JsonNode> find(const std::string& key) const;
  // Elements of an array.
  JsonNode at(size_t index) const;

  // Typed reads; each fails with "<where>: expected <what>, found <kind> <excerpt>".
  const nlohmann::json::object_t& object() const;
  const nlohmann::json::array_t& array(uint64_t maxSize = UINT64_MAX) const;
  size_t size() const;  // elements of an array or members of an object (0 for anything else)
  const std::string& string() const;
  bool boolean() const;
  double number() const;                          // any number
  double finiteNumber() const;                    // not NaN or infinite
  double positiveFinite() const;                  // finite and > 0
  int64_t integer(int64_t lo, int64_t hi) const;  // a whole number in [lo, hi], read as 64 bits
  int intIn(int lo, int hi) const { return static_cast<int>(integer(lo, hi)); }

  // Optional members with a default when absent or null.
  std::string optString(const std::string& key, const std::string& dflt) const;
  bool optBool(const std::string& key, bool dflt) const;
  int64_t optInteger(const std::string& key, int64_t dflt, int64_t lo, int64_t hi) const;

  // Iteration with child paths.
  template <typename F>
  void forEachElement(F&& f) const {
    const auto& a = array();
    for (size_t i = 0; i < a.size(); ++i)
      f(i, JsonNode(a[i], file_, indexPath(i)));
  }
  template <typename F>
  void forEachMember(F&& f) const {
    for (const auto& [k, v] : object())
      f(k, JsonNode(v, file_, keyPath(k)));
  }

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) const {
    throw Error(cat(where(), ": ", std::forward<Args>(args)...));
  }
  // "expected <what>, found <kind> <excerpt>".
  [[noreturn]] void wrongType(const std::string& expected) const;

  std::string keyPath(const std::string& key) const;
  std::string indexPath(size_t index) const;

 private:
  const nlohmann::json* v_;
  std::string file_, path_;
};

}  // namespace hs
