#pragma once
// An ICL task made concrete: which dataset, template, shots, how many prompts, which seed — and the
// tokenized prompts every analysis runs on. One place decides how queries and demonstrations are drawn,
// so TSLA, FV, SITE, LTV, the geometry views and the GUI's evaluation all see the same prompts for the
// same TaskSpec.
//
// Drawing (deterministic in the spec): the dataset is split 70/9/21 with `seed` (splitIndices), or into its
// own train / valid / test files when it comes as a split folder (taskSplit); query i
// of a prompt set is drawn from the split's pool, demonstrations come from the train split without the
// query (sampleDemos with evalSeed-style per-prompt seeds). For classification datasets the demos of a
// prompt show every label at least once when shots >= labels (as the toy model was trained).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/dataset.h"
#include "tasks/prompt.h"
#include "tasks/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct TaskSpec {
  // "toy:<task>" (a task of the embedded toy world, toy/tasks.h: "category_label", "translate_a_b",
  // "translate_b_a", "antonym_a", "successor_a", "copy_a") or a dataset file (loadDatasetAuto).
  std::string dataset = "toy:category_label";
  std::string template_id;  // "" = the default for the dataset (toy-cls / toy-fn / fv / classification)
  int shots = 8;            // demonstrations per ICL prompt
  int n_prompts = 50;       // prompts per set
  uint64_t seed = 1;
  std::vector<std::string> label_words;  // classification: replace the dataset's label words (optional)
  std::string split = "test";            // queries from "train", "valid" or "test"
};
nlohmann::json taskSpecToJson(const TaskSpec& s);
TaskSpec taskSpecFromJson(const nlohmann::json& j);

// The dataset a spec names (toy tasks are generated from the default toy world).
Dataset loadTaskDataset(const TaskSpec& spec);
// The template a spec uses (its template_id, or the dataset's default).
PromptTemplate taskTemplate(const TaskSpec& spec, const Dataset& d);

struct IclTask {
  TaskSpec spec;
  Dataset dataset;
  PromptTemplate tmpl;
  std::vector<Prompt> icl;                   // [n_prompts] spec.shots-shot prompts
  std::vector<Prompt> zero_shot;             // [n_prompts] the same queries with no demonstrations
  std::vector<int> query_index;              // [n_prompts] dataset index of each query
  std::vector<std::vector<int>> demo_index;  // [n_prompts][shots] dataset index of each demonstration
  // Classification: the first token of each label word (as it appears after the template's output
  // prefix), indexed like dataset.label_words; empty for open-ended tasks.
  std::vector<int> label_tokens;
  bool classification() const { return dataset.classification; }
};

// The train / valid / test parts a spec's prompts draw from: the dataset's own files (given_split) when it
// comes split, else the seeded 70/9/21 split of its examples (splitIndices with `seed`).
Split taskSplit(const Dataset& dataset, uint64_t seed);

// Builds the prompt sets of a spec. Throws (naming the dataset) when the split is too small for the
// requested shots and prompts, or when two label words share a first token.
IclTask buildIclTask(const Tokenizer& tok, const TaskSpec& spec);
// The same on an already loaded dataset.
IclTask buildIclTask(const Tokenizer& tok, const TaskSpec& spec, const Dataset& dataset);

// Copies of `prompts` whose demonstration labels are replaced by a derangement-style shuffle of the
// labels of the prompt's own demos (FV's corrupted prompts); seeded; the query and answer are unchanged.
std::vector<Prompt> shuffledLabelPrompts(const Tokenizer& tok, const IclTask& task, uint64_t seed);

}  // namespace hs
