#pragma once
// Named tasks of the toy world and their exports in the formats the rest of HeadScope reads: Function-Vectors
// style JSON ([{"input", "output"}], strings = space-joined token strings) and an HF tokenizer.json
// (WordLevel over the token table, WhitespaceSplit), so the toy model loads like any HF checkpoint.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/toy/world.h"

namespace hs::toy {

enum class TaskKind { Word, Classification };

struct TaskInfo {
  std::string name;  // stable id, e.g. "translate_a_b"
  TaskKind kind;
  Lang input_lang;
  Lang output_lang;         // for word tasks
  std::string description;  // one line for UIs and eval JSON
};

// All tasks: "translate_a_b", "translate_b_a", "antonym_a", "successor_a", "copy_a" (word -> word) and
// "category_label" (classification: a word's category -> a label word).
const std::vector<TaskInfo>& toyTasks();
// The word -> word tasks only (the ones function episodes draw from).
std::vector<std::string> wordTaskNames();
// Throws naming the known tasks when `name` is not one of them.
const TaskInfo& taskInfo(const std::string& name);

// Word task: the concept whose word (in info.output_lang) is the answer for input concept c.
int applyWordTask(const ToyWorld& w, const std::string& name, int conceptId);
// Word task: (input tokens, output tokens) of concept c.
std::pair<std::vector<int>, std::vector<int>> wordTaskPair(const ToyWorld& w, const std::string& name,
                                                           int conceptId);

// The canonical label mapping used by the exported classification set: category k -> label_tokens[k].
// Training and evaluation episodes never use it: they draw a fresh mapping per episode (see episodes.h).
int canonicalLabel(const ToyWorld& w, int category);

// Every (input, output) token pair of a task, in concept order. For "category_label" the inputs are the words
// of both languages (A first) and the output is the canonical label of their category.
std::vector<std::pair<std::vector<int>, std::vector<int>>> taskPairs(const ToyWorld& w,
                                                                     const std::string& name);

// FV-style dataset: [{"input": "ka ru", "output": "Ob Ish"}, ...] in taskPairs order.
nlohmann::json exportFvJson(const ToyWorld& w, const std::string& name);

// Classification set for "category_label": {"task", "label_words": [canonical label per category],
// "items": [{"input": "ka ru", "label": k}, ...]} (label = category index).
nlohmann::json exportClassificationJson(const ToyWorld& w);

// HF tokenizer.json: model WordLevel (vocab = the whole token table, unk "<pad>"), pre_tokenizer
// WhitespaceSplit, added_tokens for <pad> <bos> <eos> <nl>, no normalizer/post-processor/decoder.
// Text is space-joined token strings; ToyWorld::text produces it.
std::string tokenizerJson(const ToyWorld& w);

// tokenizer_config.json beside it: bos/eos/pad/unk token strings, add_bos_token = true (every training
// episode opens with <bos>, so text prompts need it prepended), model_max_length = `max_length`.
std::string tokenizerConfigJson(const ToyWorld& w, int max_length = 256);

// The ground truth of the world, for views and external checks: {"format_version": 1, "config": {...},
// "categories": [[first syllables A], [first syllables B]] per category, "concepts": [{"a", "b", "category",
// "antonym", "successor"}]} with words as space-joined token strings and concepts as indices.
nlohmann::json exportWorldJson(const ToyWorld& w);

}  // namespace hs::toy
