#include "tasks/dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <utility>

#include "util/error.h"
#include "util/file_text.h"

namespace hs {
namespace {

// Text datasets larger than this are refused before they are read (the JSON ones have their own limits).
constexpr uint64_t kMaxDatasetBytes = 256ull << 20;

std::string stemOf(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

bool isBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

// Lines without their terminator ("\n" or "\r\n"); a final line without "\n" counts.
std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

// A classification dataset of one example a line, blank lines skipped: parse(line, lineNumber) gives the
// line's text and label index, failing on a malformed line. `format` is the expected line, for the error on
// a file without examples.
Dataset loadLabelledLines(
    const std::string& path, const std::string& id, std::vector<std::string> label_words,
    const std::string& format,
    const std::function<std::pair<std::string, int>(const std::string&, size_t)>& parse) {
  const std::vector<std::string> lines = splitLines(readTextFile(path, "dataset file", kMaxDatasetBytes));
  Dataset d;
  d.id = d.name = id;
  d.source = path;
  d.classification = true;
  d.label_words = std::move(label_words);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (isBlank(lines[i])) continue;
    auto [text, l] = parse(lines[i], i + 1);
    d.examples.push_back(Example{std::move(text), {d.label_words[static_cast<size_t>(l)]}, l});
  }
  if (d.examples.empty()) fail(path, ": empty file, expected ", format, " lines");
  return d;
}

// One FV item -> Example; `where` names the file (or toy export) for errors.
Example fvItem(const nlohmann::json& item, size_t index, const std::string& where) {
  if (!item.is_object()) fail(where, ": item ", index, " is ", item.type_name(), ", expected an object");
  auto in = item.find("input");
  if (in == item.end()) fail(where, ": item ", index, " has no \"input\" key");
  if (!in->is_string())
    fail(where, ": item ", index, ": \"input\" is ", in->type_name(), ", expected a string");
  auto out = item.find("output");
  if (out == item.end()) fail(where, ": item ", index, " has no \"output\" key");
  Example ex;
  ex.input = in->get<std::string>();
  if (out->is_string()) {
    ex.outputs.push_back(out->get<std::string>());
  } else if (out->is_array()) {
    for (size_t j = 0; j < out->size(); ++j) {
      if (!(*out)[j].is_string())
        fail(where, ": item ", index, ": \"output\"[", j, "] is ", (*out)[j].type_name(),
             ", expected a string");
      ex.outputs.push_back((*out)[j].get<std::string>());
    }
    if (ex.outputs.empty())
      fail(where, ": item ", index, ": \"output\" is an empty list, expected >= 1 answer");
  } else {
    fail(where, ": item ", index, ": \"output\" is ", out->type_name(),
         ", expected a string or a list of strings");
  }
  if (ex.input.empty()) fail(where, ": item ", index, ": \"input\" is empty");
  if (ex.outputs[0].empty()) fail(where, ": item ", index, ": \"output\" is empty");
  return ex;
}

std::vector<Example> fvItems(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array())
    fail(where, ": top level is ", j.type_name(), ", expected a list of {\"input\", \"output\"}");
  if (j.empty()) fail(where, ": the list is empty, expected at least one {\"input\", \"output\"} item");
  std::vector<Example> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(fvItem(j[i], i, where));
  return out;
}

// RFC 4180 rows with the line on which each row starts.
struct CsvRow {
  size_t line;
  std::vector<std::string> cells;
};

std::vector<CsvRow> parseCsv(const std::string& text, char sep, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row{1, {}};
  std::string cell;
  size_t line = 1;
  bool inQuotes = false, cellQuoted = false, rowHasContent = false;
  size_t quoteLine = 0;
  auto endCell = [&] {
    row.cells.push_back(cell);
    cell.clear();
    cellQuoted = false;
  };
  auto endRow = [&] {
    endCell();
    const bool blank = row.cells.size() == 1 && row.cells[0].empty() && !rowHasContent;
    if (!blank) rows.push_back(row);
    row = CsvRow{line + 1, {}};
    rowHasContent = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inQuotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          inQuotes = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      if (!cell.empty() || cellQuoted)
        fail(path, ": line ", line,
             ": a quote inside an unquoted cell (quote the whole cell and double the quote)");
      inQuotes = cellQuoted = rowHasContent = true;
      quoteLine = line;
    } else if (c == sep) {
      endCell();
      rowHasContent = true;
    } else if (c == '\n') {
      if (!cell.empty() && cell.back() == '\r') cell.pop_back();
      endRow();
      ++line;
    } else {
      if (cellQuoted && c != '\r')
        fail(path, ": line ", line, ": text after the closing quote of a cell, expected a separator");
      cell += c;
      if (c != '\r') rowHasContent = true;
    }
  }
  if (inQuotes) fail(path, ": line ", quoteLine, ": quoted cell is never closed");
  if (!cell.empty() && cell.back() == '\r') cell.pop_back();
  if (!cell.empty() || !row.cells.empty() || rowHasContent) endRow();
  return rows;
}

bool looksLikeHeader(const std::vector<std::string>& cells) {
  static const std::vector<std::string> names = {
      "input",  "output",     "source", "target",      "x",     "y",    "question", "answer",
      "prompt", "completion", "word",   "translation", "label", "text", "src",      "tgt"};
  if (cells.size() < 2) return false;
  for (size_t i = 0; i < 2; ++i) {
    std::string c = cells[i];
    std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (std::find(names.begin(), names.end(), c) == names.end()) return false;
  }
  return true;
}

// An FV task whose answers come from a small closed set (sentiment: positive / negative; person-sport: five
// sports) is a classification set too, so TSLA and the geometry views can use it: label words = the distinct
// answers in order of first appearance. At most kMaxClosedLabels answers, each seen kMinPerLabel times on
// average, every example with exactly one answer.
constexpr size_t kMaxClosedLabels = 8;
constexpr size_t kMinPerLabel = 10;

void markClosedLabelSet(Dataset& d) {
  std::vector<std::string> labels;
  for (const Example& e : d.examples) {
    if (e.outputs.size() != 1) return;
    if (std::find(labels.begin(), labels.end(), e.outputs[0]) != labels.end()) continue;
    labels.push_back(e.outputs[0]);
    if (labels.size() > kMaxClosedLabels) return;
  }
  if (labels.size() < 2 || d.examples.size() < kMinPerLabel * labels.size()) return;
  d.classification = true;
  d.label_words = labels;
  for (Example& e : d.examples)
    e.label = static_cast<int>(std::find(labels.begin(), labels.end(), e.outputs[0]) - labels.begin());
}

// An FV task parsed from the file at `path`.
Dataset fvDataset(const nlohmann::json& j, const std::string& path) {
  Dataset d;
  d.id = d.name = stemOf(path);
  d.source = path;
  d.examples = fvItems(j, path);
  d.template_id = "fv";
  markClosedLabelSet(d);
  return d;
}
}  // namespace

Dataset loadFvJson(const std::string& path) {
  return fvDataset(readJsonFile(path, json_limits::dataset()), path);
}

Dataset loadSplitFolder(const std::string& folder) {
  const std::filesystem::path dir = std::filesystem::path(folder).lexically_normal();
  nlohmann::json all = nlohmann::json::array();
  Split split;
  const std::pair<const char*, std::vector<int>*> parts[] = {
      {"train", &split.train}, {"valid", &split.valid}, {"test", &split.test}};
  for (const auto& [part, idx] : parts) {
    const std::string file = (dir / (std::string(part) + ".json")).string();
    if (!std::filesystem::is_regular_file(file))
      fail(folder, ": a split folder needs train.json, valid.json and test.json; ", file, " is missing");
    const nlohmann::json j = readJsonFile(file, json_limits::dataset());
    fvItems(j, file);  // refuses a malformed file, naming it and the item
    for (const nlohmann::json& item : j) {
      idx->push_back(static_cast<int>(all.size()));
      all.push_back(item);
    }
  }
  const std::string name =
      dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  Dataset d = fvDataset(all, (dir / name).string());  // id = the folder's name
  d.source = dir.string();
  d.given_split = split;
  return d;
}

Dataset datasetFromToyExport(const nlohmann::json& fv, const std::string& id) {
  Dataset d;
  d.id = d.name = id;
  d.source = "toy:" + id;
  d.examples = fvItems(fv, d.source);
  return d;
}

Dataset datasetFromToyClassification(const nlohmann::json& cls, const std::string& id) {
  const std::string where = "toy:" + id;
  if (!cls.is_object()) fail(where, ": classification export is ", cls.type_name(), ", expected an object");
  auto lw = cls.find("label_words");
  auto items = cls.find("items");
  if (lw == cls.end() || !lw->is_array() || lw->empty())
    fail(where, ": \"label_words\" missing or not a non-empty list of strings");
  if (items == cls.end() || !items->is_array() || items->empty())
    fail(where, ": \"items\" missing or not a non-empty list of {\"input\", \"label\"}");
  Dataset d;
  d.id = d.name = id;
  d.source = where;
  d.classification = true;
  for (size_t i = 0; i < lw->size(); ++i) {
    if (!(*lw)[i].is_string()) fail(where, ": label_words[", i, "] is not a string");
    d.label_words.push_back((*lw)[i].get<std::string>());
  }
  for (size_t i = 0; i < items->size(); ++i) {
    const auto& it = (*items)[i];
    if (!it.is_object() || !it.contains("input") || !it["input"].is_string())
      fail(where, ": item ", i, " has no string \"input\"");
    if (!it.contains("label") || !it["label"].is_number_integer())
      fail(where, ": item ", i, " has no integer \"label\"");
    const int label = it["label"].get<int>();
    if (label < 0 || label >= static_cast<int>(d.label_words.size()))
      fail(where, ": item ", i, ": label ", label, " is outside [0, ", d.label_words.size(), ")");
    d.examples.push_back(Example{it["input"].get<std::string>(), {d.label_words[label]}, label});
  }
  return d;
}

Dataset loadPairsCsv(const std::string& path, char sep, const CsvOptions& opt) {
  if (opt.input_column < 0 || opt.output_column < 0 || opt.input_column == opt.output_column)
    fail(path, ": input column ", opt.input_column, " and output column ", opt.output_column,
         " must be distinct and non-negative");
  const std::vector<CsvRow> rows = parseCsv(readTextFile(path, "dataset file", kMaxDatasetBytes), sep, path);
  if (rows.empty()) fail(path, ": empty file, expected rows of input", sep == '\t' ? "<TAB>" : ",", "output");
  size_t first = 0;
  if (opt.header == CsvHeader::Present || (opt.header == CsvHeader::Auto && looksLikeHeader(rows[0].cells)))
    first = 1;
  const size_t need = static_cast<size_t>(std::max(opt.input_column, opt.output_column)) + 1;
  Dataset d;
  d.id = d.name = stemOf(path);
  d.source = path;
  for (size_t r = first; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    if (row.cells.size() < need)
      fail(path, ": line ", row.line, ": ", row.cells.size(), " cell(s), expected at least ", need);
    Example ex;
    ex.input = row.cells[static_cast<size_t>(opt.input_column)];
    ex.outputs = {row.cells[static_cast<size_t>(opt.output_column)]};
    if (ex.input.empty())
      fail(path, ": line ", row.line, ": empty input cell (column ", opt.input_column, ")");
    if (ex.outputs[0].empty())
      fail(path, ": line ", row.line, ": empty output cell (column ", opt.output_column, ")");
    d.examples.push_back(std::move(ex));
  }
  if (d.examples.empty()) fail(path, ": only a header row, expected at least one example");
  return d;
}

Dataset loadSst2(const std::string& path, std::vector<std::string> label_words) {
  if (label_words.size() != 2) fail(path, ": SST-2 needs 2 label words, got ", label_words.size());
  const auto parseLine = [&](const std::string& line, size_t lineNo) {
    const size_t sp = line.find(' ');
    const std::string label = line.substr(0, sp);
    if (label != "0" && label != "1")
      fail(path, ": line ", lineNo, ": label \"", label, "\", expected 0 (negative) or 1 (positive)");
    std::string sentence = sp == std::string::npos ? std::string() : line.substr(sp + 1);
    if (isBlank(sentence)) fail(path, ": line ", lineNo, ": no sentence after the label");
    return std::make_pair(std::move(sentence), label[0] - '0');
  };
  return loadLabelledLines(path, "sst2", std::move(label_words), "\"label sentence\"", parseLine);
}

const std::vector<std::string>& trecCoarseClasses() {
  static const std::vector<std::string> c = {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"};
  return c;
}

const std::vector<std::string>& trecDefaultLabelWords() {
  static const std::vector<std::string> w = {"abbreviation", "description", "entity",
                                             "human",        "location",    "number"};
  return w;
}

Dataset loadTrec(const std::string& path, std::vector<std::string> label_words) {
  const auto& classes = trecCoarseClasses();
  if (label_words.size() != classes.size())
    fail(path, ": TREC needs ", classes.size(), " label words, got ", label_words.size());
  const auto parseLine = [&](const std::string& line, size_t lineNo) {
    const size_t colon = line.find(':');
    const size_t sp = line.find(' ');
    if (colon == std::string::npos || sp == std::string::npos || colon > sp)
      fail(path, ": line ", lineNo, ": expected \"COARSE:fine question\"");
    const std::string coarse = line.substr(0, colon);
    auto it = std::find(classes.begin(), classes.end(), coarse);
    if (it == classes.end())
      fail(path, ": line ", lineNo, ": coarse class \"", coarse,
           "\", expected one of ABBR DESC ENTY HUM LOC NUM");
    if (colon + 1 == sp) fail(path, ": line ", lineNo, ": empty fine class after \"", coarse, ":\"");
    std::string question = line.substr(sp + 1);
    if (isBlank(question)) fail(path, ": line ", lineNo, ": no question after the class");
    return std::make_pair(std::move(question), static_cast<int>(it - classes.begin()));
  };
  return loadLabelledLines(path, "trec", std::move(label_words), "\"COARSE:fine question\"", parseLine);
}

Dataset loadDatasetAuto(const std::string& path) {
  if (std::filesystem::is_directory(path)) return loadSplitFolder(path);
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".json") {
    const nlohmann::json j = readJsonFile(path, json_limits::dataset());
    if (j.is_object() && j.contains("items"))
      return withContext(path, [&] { return datasetFromToyClassification(j, stemOf(path)); });
    return fvDataset(j, path);
  }
  if (ext == ".csv") return loadPairsCsv(path, ',');
  if (ext == ".tsv") return loadPairsCsv(path, '\t');
  const std::vector<std::string> lines = splitLines(readTextFile(path, "dataset file", kMaxDatasetBytes));
  auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return !isBlank(l); });
  if (first == lines.end()) fail(path, ": empty file, cannot tell the dataset format");
  const std::string& l = *first;
  for (const std::string& c : trecCoarseClasses())
    if (l.rfind(c + ":", 0) == 0) return loadTrec(path);
  if (l.size() > 2 && (l[0] == '0' || l[0] == '1') && l[1] == ' ') return loadSst2(path);
  if (l.find('\t') != std::string::npos) return loadPairsCsv(path, '\t');
  if (l.find(',') != std::string::npos) return loadPairsCsv(path, ',');
  fail(path,
       ": cannot tell the dataset format (expected .json, .csv, .tsv, SST-2 \"0 sentence\" or TREC "
       "\"ABBR:x question\" lines)");
}

Dataset withLabelWords(const Dataset& d, const std::vector<std::string>& label_words) {
  if (!d.classification) fail(d.source, ": label words given for a dataset that is not a classification set");
  if (label_words.size() != d.label_words.size())
    fail(d.source, ": ", label_words.size(), " label words given, the dataset has ", d.label_words.size(),
         " classes");
  Dataset out = d;
  out.label_words = label_words;
  for (Example& ex : out.examples)
    ex.outputs = {label_words[static_cast<size_t>(ex.label)]};
  return out;
}

}  // namespace hs
