#include "tasks/prompt_template.h"

#include "util/error.h"

namespace hs {
namespace {

const char* const kKeys[] = {"id",           "prefix",        "input_prefix",
                             "input_suffix", "output_prefix", "example_separator"};

std::string* field(PromptTemplate& t, const std::string& key) {
  if (key == "id") return &t.id;
  if (key == "prefix") return &t.prefix;
  if (key == "input_prefix") return &t.input_prefix;
  if (key == "input_suffix") return &t.input_suffix;
  if (key == "output_prefix") return &t.output_prefix;
  if (key == "example_separator") return &t.example_separator;
  return nullptr;
}

}  // namespace

const std::vector<std::string>& builtinTemplateIds() {
  static const std::vector<std::string> ids = {"fv",       "hendel", "classification",
                                               "question", "toy-fn", "toy-cls"};
  return ids;
}

PromptTemplate builtinTemplate(const std::string& id) {
  if (id == "fv") return {"fv", "", "Q: ", "\n", "A: ", "\n\n"};
  if (id == "hendel") return {"hendel", "", "", "", "->", "\n"};
  if (id == "classification") return {"classification", "", "Review: ", "\n", "Sentiment: ", "\n\n"};
  if (id == "question") return {"question", "", "Question: ", "\n", "Type: ", "\n\n"};
  // Toy tokens are whitespace separated (WordLevel + WhitespaceSplit); "<nl>" is an added token.
  if (id == "toy-fn") return {"toy-fn", "", "", " ", "→ ", " <nl> "};
  if (id == "toy-cls") return {"toy-cls", "", "", " ", ": ", " <nl> "};
  std::string known;
  for (const auto& k : builtinTemplateIds())
    known += (known.empty() ? "" : ", ") + k;
  fail("unknown prompt template \"", id, "\", expected one of ", known);
}

nlohmann::json templateToJson(const PromptTemplate& t) {
  nlohmann::json j;
  j["format_version"] = 1;
  PromptTemplate copy = t;
  for (const char* k : kKeys)
    j[k] = *field(copy, k);
  return j;
}

PromptTemplate templateFromJson(const nlohmann::json& j) {
  if (!j.is_object()) fail("prompt template: JSON is ", j.type_name(), ", expected an object");
  auto v = j.find("format_version");
  if (v == j.end() || !v->is_number_integer() || v->get<int>() != 1)
    fail("prompt template: \"format_version\" missing or not 1");
  PromptTemplate t;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "format_version") continue;
    std::string* f = field(t, it.key());
    if (!f) fail("prompt template: unknown key \"", it.key(), "\"");
    if (!it->is_string())
      fail("prompt template: \"", it.key(), "\" is ", it->type_name(), ", expected a string");
    *f = it->get<std::string>();
  }
  for (const char* k : kKeys)
    if (!j.contains(k)) fail("prompt template: missing key \"", k, "\"");
  if (t.id.empty()) fail("prompt template: empty \"id\"");
  return t;
}

}  // namespace hs
