#pragma once
// How demonstrations and the query are laid out as text. One demonstration is
//   input_prefix + x + input_suffix + output_prefix + y + example_separator
// and a prompt is prefix + demo_1 + ... + demo_k + input_prefix + q + input_suffix + output_prefix, so the
// model's next token after the prompt is the answer.
//
// Space convention (docs/architecture.md, "Tasks and prompts": labels are the first token of " " + label): a
// trailing space of the template piece right before an input or a label belongs to that input/label segment,
// as whole-text tokenizers attach it ("A: y" -> "A", ":", " y"). So "A: " + "y" is tokenized as "A:" + " y"
// and the answer token is the first token of " y".
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hs {

struct PromptTemplate {
  std::string id;
  std::string prefix;             // once, before everything
  std::string input_prefix;       // before each input
  std::string input_suffix;       // right after each input
  std::string output_prefix;      // after input_suffix, right before the output
  std::string example_separator;  // after each demonstration's output

  bool operator==(const PromptTemplate& o) const {
    return id == o.id && prefix == o.prefix && input_prefix == o.input_prefix &&
           input_suffix == o.input_suffix && output_prefix == o.output_prefix &&
           example_separator == o.example_separator;
  }
  bool operator!=(const PromptTemplate& o) const { return !(*this == o); }
};

// Built-in templates:
//   "fv"             "Q: x\nA: y\n\n"                 (Function Vectors, SITE)
//   "hendel"         "x->y\n"                         (Hendel et al., task vectors)
//   "classification" "Review: x\nSentiment: y\n\n"    (SST-2 style; label words come from the dataset)
//   "question"       "Question: x\nType: y\n\n"       (TREC style)
//   "toy-fn"         "x → y <nl> "                    (the toy world's function episodes; space separated)
//   "toy-cls"        "x : y <nl> "                    (the toy world's classification episodes)
// Toy prompts need <bos> in front: the toy tokenizer adds it (add_bos_token = true).
const std::vector<std::string>& builtinTemplateIds();
// Throws naming the known ids when `id` is not one of them.
PromptTemplate builtinTemplate(const std::string& id);

// {"format_version": 1, "id", "prefix", "input_prefix", "input_suffix", "output_prefix",
//  "example_separator"}. Reading is strict: every key present and a string, no unknown keys.
nlohmann::json templateToJson(const PromptTemplate& t);
PromptTemplate templateFromJson(const nlohmann::json& j);

}  // namespace hs
