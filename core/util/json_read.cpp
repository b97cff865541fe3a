#include "util/json_read.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <vector>

namespace hs {

using nlohmann::json;

namespace json_limits {

namespace {
JsonLimits make(const char* kind, uint64_t maxBytes, uint64_t maxValues, int maxDepth = 256,
                uint64_t maxString = 16ull << 20) {
  JsonLimits l;
  l.kind = kind;
  l.max_bytes = maxBytes;
  l.max_values = maxValues;
  l.max_depth = maxDepth;
  l.max_string_bytes = maxString;
  return l;
}
}  // namespace

JsonLimits general() {
  return make("JSON file", 64ull << 20, 4'000'000);
}
JsonLimits modelConfig() {
  return make("config.json", 8ull << 20, 1'000'000);
}
JsonLimits tokenizer() {
  return make("tokenizer.json", 512ull << 20, 16'000'000);
}
JsonLimits tokenizerConfig() {
  return make("tokenizer_config.json", 64ull << 20, 4'000'000);
}
JsonLimits vocab() {
  return make("vocab.json", 128ull << 20, 8'000'000);
}
JsonLimits shardIndex() {
  return make("model.safetensors.index.json", 64ull << 20, 4'000'000);
}
JsonLimits dataset() {
  return make("dataset file", 256ull << 20, 16'000'000);
}
JsonLimits session() {
  return make("session JSON", 256ull << 20, 16'000'000);
}
JsonLimits safetensorsHeader() {
  // Headers nest three levels ({name: {"shape": [...]}}); the session JSON inside is one string.
  return make("safetensors header", 256ull << 20, 4'000'000, 16, 256ull << 20);
}
JsonLimits recipe() {
  return make("recipe", 64ull << 20, 4'000'000);
}
JsonLimits batchPlan() {
  return make("batch plan", 64ull << 20, 4'000'000);
}
JsonLimits batchJobIndex() {
  return make("batch job index", 256ull << 20, 16'000'000);
}

}  // namespace json_limits

namespace {

std::string humanBytes(uint64_t n) {
  if (n >= (1ull << 20)) return cat(n >> 20, " MiB");
  if (n >= (1ull << 10)) return cat(n >> 10, " KiB");
  return cat(n, " bytes");
}

// The parser's own message without its "[json.exception...] " prefix, cut to a short line.
std::string shortParseMessage(const std::string& what) {
  std::string m = what;
  if (m.rfind("[json.exception.", 0) == 0) {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  if (m.size() > 160) m = m.substr(0, 157) + "...";
  return m;
}

// Builds the tree like nlohmann's own DOM parser and stops at the first limit exceeded.
class BoundedBuilder : public nlohmann::json_sax<json> {
 public:
  BoundedBuilder(json& root, const JsonLimits& limits) : root_(root), limits_(limits) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool string(string_t& v) override {
    if (v.size() > limits_.max_string_bytes)
      return stop(cat("a string of ", humanBytes(v.size()), " exceeds the limit of ",
                      humanBytes(limits_.max_string_bytes)));
    return value(json(std::move(v)));
  }
  bool binary(binary_t&) override { return stop("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    if (k.size() > limits_.max_string_bytes)
      return stop(cat("a key of ", humanBytes(k.size()), " exceeds the limit of ",
                      humanBytes(limits_.max_string_bytes)));
    json* obj = stack_.back();
    if (limits_.reject_duplicate_keys && obj->contains(k))
      return stop(cat("key \"", excerptText(k), "\" appears twice in one object (a later value would ",
                      "silently replace the earlier one)"));
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = "malformed JSON: " + shortParseMessage(e.what());
    return false;
  }

  const std::string& error() const { return error_; }

  static std::string excerptText(const std::string& s) {
    std::string out = s.size() > 40 ? s.substr(0, 37) + "..." : s;
    for (char& c : out)
      if (static_cast<unsigned char>(c) < 32) c = '?';
    return out;
  }

 private:
  bool stop(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  bool counted() {
    if (++values_ > limits_.max_values)
      return stop(cat("more than ", limits_.max_values, " values, the limit for a ", limits_.kind));
    return true;
  }
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->get_ref<json::array_t&>().push_back(std::move(v));
      return &parent->get_ref<json::array_t&>().back();
    }
    json& slot = (*parent)[key_];
    slot = std::move(v);
    return &slot;
  }
  bool value(json&& v) {
    if (!counted()) return false;
    place(std::move(v));
    return true;
  }
  bool open(json&& container) {
    if (!counted()) return false;
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      return stop(cat("nested deeper than ", limits_.max_depth, " levels, the limit for a ", limits_.kind));
    stack_.push_back(place(std::move(container)));
    return true;
  }

  json& root_;
  const JsonLimits& limits_;
  std::vector<json*> stack_;
  std::string key_;
  uint64_t values_ = 0;
  std::string error_;
};

// Appends a bounded rendering of v to out; returns false once `budget` characters were written.
bool renderInto(const json& v, std::string& out, size_t budget) {
  if (out.size() >= budget) return false;
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
        if (!renderInto(it.value(), out, budget)) return false;
      }
      out += '}';
      break;
    }
    case json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        if (!renderInto(v[i], out, budget)) return false;
      }
      out += ']';
      break;
    }
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      out += json(s.size() > budget ? s.substr(0, budget) : s)
                 .dump(-1, ' ', false, json::error_handler_t::replace);
      break;
    }
    default:
      out += v.dump();
  }
  return out.size() < budget;
}

}  // namespace

json parseJsonBounded(std::string_view text, const std::string& where, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    fail(where, ": ", humanBytes(text.size()), " is more than the ", humanBytes(limits.max_bytes), " a ",
         limits.kind, " may have");
  bool blank = true;
  for (char c : text)
    if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      blank = false;
      break;
    }
  if (blank) fail(where, ": empty file, expected JSON");
  json root;
  BoundedBuilder builder(root, limits);
  const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &builder);
  if (!ok || !builder.error().empty())
    fail(where, ": ", builder.error().empty() ? std::string("malformed JSON") : builder.error());
  return root;
}

std::string jsonExcerpt(const json& v, size_t maxChars) {
  std::string out;
  if (!renderInto(v, out, maxChars) || out.size() > maxChars) {
    if (out.size() > maxChars) out.resize(maxChars);
    out += "...";
  }
  return out;
}

std::string jsonKind(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a binary value";
  }
}

// ---------------------------------------------------------------------------------------------------
// JsonNode

std::string JsonNode::where() const {
  return path_.empty() ? file_ : file_ + ": " + path_;
}

std::string JsonNode::keyPath(const std::string& key) const {
  bool plain = !key.empty() && key.size() <= 40;
  for (char c : key)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  const std::string k = plain ? key : "[\"" + BoundedBuilder::excerptText(key) + "\"]";
  if (path_.empty()) return k;
  return plain ? path_ + "." + k : path_ + k;
}

std::string JsonNode::indexPath(size_t index) const {
  return cat(path_, "[", index, "]");
}

void JsonNode::wrongType(const std::string& expected) const {
  if (v_->is_object() || v_->is_array())
    fail("expected ", expected, ", found ", jsonKind(*v_), " of ", v_->size(), " entries");
  fail("expected ", expected, ", found ", jsonKind(*v_), " ", jsonExcerpt(*v_));
}

bool JsonNode::has(const std::string& key) const {
  if (!v_->is_object()) return false;
  auto it = v_->find(key);
  return it != v_->end() && !it->is_null();
}

std::optional<JsonNode> JsonNode::find(const std::string& key) const {
  if (!v_->is_object()) wrongType("an object");
  auto it = v_->find(key);
  if (it == v_->end() || it->is_null()) return std::nullopt;
  return JsonNode(*it, file_, keyPath(key));
}

JsonNode JsonNode::at(const std::string& key) const {
  auto n = find(key);
  if (!n) throw Error(cat(where(), ": missing required field \"", key, "\""));
  return *n;
}

JsonNode JsonNode::at(size_t index) const {
  const auto& a = array();
  if (index >= a.size()) fail("has ", a.size(), " elements, expected at least ", index + 1);
  return JsonNode(a[index], file_, indexPath(index));
}

const json::object_t& JsonNode::object() const {
  if (!v_->is_object()) wrongType("an object");
  return v_->get_ref<const json::object_t&>();
}

const json::array_t& JsonNode::array(uint64_t maxSize) const {
  if (!v_->is_array()) wrongType("an array");
  if (v_->size() > maxSize) fail("has ", v_->size(), " elements, more than the limit of ", maxSize);
  return v_->get_ref<const json::array_t&>();
}

size_t JsonNode::size() const {
  return v_->is_array() || v_->is_object() ? v_->size() : 0;
}

const std::string& JsonNode::string() const {
  if (!v_->is_string()) wrongType("a string");
  return v_->get_ref<const std::string&>();
}

bool JsonNode::boolean() const {
  if (!v_->is_boolean()) wrongType("true or false");
  return v_->get<bool>();
}

double JsonNode::number() const {
  if (!v_->is_number()) wrongType("a number");
  return v_->get<double>();
}

double JsonNode::finiteNumber() const {
  const double v = number();
  if (!std::isfinite(v)) fail("is ", v, ", expected a finite number");
  return v;
}

double JsonNode::positiveFinite() const {
  const double v = number();
  if (!(std::isfinite(v) && v > 0)) fail("is ", jsonExcerpt(*v_), ", expected a finite number > 0");
  return v;
}

int64_t JsonNode::integer(int64_t lo, int64_t hi) const {
  int64_t v = 0;
  if (v_->is_number_unsigned()) {
    const uint64_t u = v_->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) fail("is ", u, ", out of range ", lo, "..", hi);
    v = static_cast<int64_t>(u);
  } else if (v_->is_number_integer()) {
    v = v_->get<int64_t>();
  } else if (v_->is_number_float()) {
    // Some exporters write sizes as 64.0: a whole float in range is that integer.
    const double d = v_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) wrongType("an integer");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      fail("is ", jsonExcerpt(*v_), ", out of range ", lo, "..", hi);
    v = static_cast<int64_t>(d);
  } else {
    wrongType("an integer");
  }
  if (v < lo || v > hi) fail("is ", v, ", out of range ", lo, "..", hi);
  return v;
}

std::string JsonNode::optString(const std::string& key, const std::string& dflt) const {
  auto n = find(key);
  return n ? n->string() : dflt;
}

bool JsonNode::optBool(const std::string& key, bool dflt) const {
  auto n = find(key);
  return n ? n->boolean() : dflt;
}

int64_t JsonNode::optInteger(const std::string& key, int64_t dflt, int64_t lo, int64_t hi) const {
  auto n = find(key);
  return n ? n->integer(lo, hi) : dflt;
}

}  // namespace hs
