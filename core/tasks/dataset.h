#pragma once
// ICL datasets: (input, outputs) pairs for function-style tasks and (input, label) pairs for classification.
// Every reader is strict: a malformed file is an error naming the file, the line (text formats) or the item
// index (JSON), and what was expected. Nothing is silently skipped except blank lines of line-based formats.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/split.h"

namespace hs {

struct Example {
  std::string input;
  std::vector<std::string> outputs;  // >= 1 accepted answers; [0] is the canonical one shown in demos
  int label = -1;                    // classification: class index into Dataset::label_words; else -1
};

struct Dataset {
  std::string id;      // stable id (file stem, "sst2", "trec", a toy task name)
  std::string name;    // for display
  std::string source;  // file path or "toy:<task>"
  std::vector<Example> examples;
  bool classification = false;
  std::vector<std::string> label_words;  // classification: class index -> label word (= outputs[0])
  // The prompt template the file's format implies ("fv" for FV JSON, also when its answers form a closed
  // label set); "" = chosen by kind (classification or fv).
  std::string template_id;
  // The dataset's own train / valid / test parts (example indices), when it comes split into files (a split
  // folder, loadSplitFolder); empty: prompts use the seeded 70/9/21 split (splitIndices).
  std::optional<Split> given_split;
};

// Function Vectors JSON: a list of {"input": str, "output": str | [str, ...]}; other keys are ignored.
Dataset loadFvJson(const std::string& path);
// A folder holding train.json, valid.json and test.json, each such a list (the layout of the SITE code's
// dataset/<task>/, SNU-DRL/Soft_Injection): one dataset of all their items, in that order, whose given_split
// names each file's items. Its id is the folder's name. Throws naming a missing or malformed file.
Dataset loadSplitFolder(const std::string& folder);
// The same format from memory (the toy world's exportFvJson); `id` names it in errors ("toy:<id>").
Dataset datasetFromToyExport(const nlohmann::json& fv, const std::string& id);
// The toy world's classification export {"label_words": [...], "items": [{"input", "label"}]}.
Dataset datasetFromToyClassification(const nlohmann::json& cls, const std::string& id);

enum class CsvHeader { Auto, Present, Absent };
struct CsvOptions {
  CsvHeader header = CsvHeader::Auto;  // Auto: a header when the first row's cells are column names
  int input_column = 0;
  int output_column = 1;
};
// CSV/TSV pairs, RFC 4180 quoting ("a, b" and "say ""hi""" fields, newlines inside quotes). Rows need at
// least max(input_column, output_column) + 1 cells; empty input or output cells are errors.
Dataset loadPairsCsv(const std::string& path, char sep = ',', const CsvOptions& opt = {});

// SST-2 as in stsa.binary.*: "label sentence" lines, label 0 negative, 1 positive.
Dataset loadSst2(const std::string& path, std::vector<std::string> label_words = {"negative", "positive"});

// TREC: "COARSE:fine question" lines; coarse classes in trecCoarseClasses() order.
const std::vector<std::string>& trecCoarseClasses();  // ABBR DESC ENTY HUM LOC NUM
const std::vector<std::string>& trecDefaultLabelWords();
Dataset loadTrec(const std::string& path, std::vector<std::string> label_words = trecDefaultLabelWords());

// A folder: loadSplitFolder. A file by extension (.json: FV list or toy classification export; .csv; .tsv)
// and otherwise by the first non-blank line (TREC "ABBR:x ...", SST-2 "0 ...", a tab -> TSV pairs, a comma
// -> CSV pairs).
Dataset loadDatasetAuto(const std::string& path);

// The dataset with other label words (classification only; outputs[0] of every example follows).
Dataset withLabelWords(const Dataset& d, const std::vector<std::string>& label_words);

}  // namespace hs
