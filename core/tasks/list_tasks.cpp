// The dual-route list tasks for real tokenizers. See list_tasks.h.
#include "tasks/list_tasks.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {
namespace {

struct WordPair {
  std::string from, to;
};

struct TaskSource {
  std::string first_header, second_header;
  bool same_first_token_allowed = false;  // copying: the answer is the word itself
};

const std::map<std::string, TaskSource>& taskSources() {
  static const std::map<std::string, TaskSource> s = {
      {"translation_fr", {"French vocab:\n", "English translation:\n", false}},
      {"translation_de", {"German vocab:\n", "English translation:\n", false}},
      {"translation_es", {"Spanish vocab:\n", "English translation:\n", false}},
      {"antonym", {"Words:\n", "Antonyms:\n", false}},
      {"synonym", {"Words:\n", "Synonyms:\n", false}},
      {"copy_words", {"English vocab:\n", "English vocab:\n", true}},
      {"upper", {"Lowercase Words:\n", "Capitalized Words:\n", false}},
      {"nonsense", {"Vocab:\n", "Vocab:\n", true}},
  };
  return s;
}

std::string mapChars(std::string s, int (*f)(int)) {
  for (char& c : s)
    c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> splitComma(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ','))
    out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// "english foreign" lines of a MUSE dictionary: foreign → English, pairs of equal words dropped.
std::vector<WordPair> readDictionary(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(path, ": cannot open the word list");
  std::vector<WordPair> out;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size())
      fail(path, ":", n, ": expected \"english foreign\", got \"", line, "\"");
    const std::string en = line.substr(0, sp), other = line.substr(sp + 1);
    if (en != other) out.push_back({other, en});
  }
  return out;
}

// word1,word2,... rows of a nguyenetal_2017 CSV (header first); rows missing a word are dropped.
std::vector<std::pair<std::string, std::string>> readCsvPairs(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(path, ": cannot open the word list");
  std::string line;
  if (!std::getline(f, line) || line.rfind("word1,word2", 0) != 0)
    fail(path, ": expected a header starting \"word1,word2\"");
  std::vector<std::pair<std::string, std::string>> out;
  for (int n = 2; std::getline(f, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = splitComma(line);
    if (cells.size() < 2) fail(path, ":", n, ": expected word1,word2,..., got \"", line, "\"");
    if (!cells[0].empty() && !cells[1].empty()) out.emplace_back(cells[0], cells[1]);
  }
  return out;
}

std::vector<WordPair> readPairs(const std::string& id, const std::string& dataDir) {
  namespace fs = std::filesystem;
  if (dataDir.empty())
    fail("list task ", id, ": no data folder (the dual-route repository's data/, e.g. ",
         "../shared/data/datasets/dual_route)");
  if (id.rfind("translation_", 0) == 0)
    return readDictionary(
        (fs::path(dataDir) / "conneauetal_2017" / ("en-" + id.substr(12) + ".txt")).string());
  const bool ant = id == "antonym" || id == "upper";
  const std::string file =
      (fs::path(dataDir) / "nguyenetal_2017" / (ant ? "all_antonyms.csv" : "all_synonyms.csv")).string();
  std::vector<WordPair> out;
  for (const auto& [w1, w2] : readCsvPairs(file)) {
    if (id == "antonym" || id == "synonym")
      out.push_back({w1, w2});
    else if (id == "copy_words")
      out.push_back({w1, w1});
    else  // upper
      out.push_back({mapChars(w1, ::tolower), mapChars(w1, ::toupper)});
  }
  return out;
}

uint64_t streamOf(const std::string& id) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : id)
    h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::vector<int64_t> textIds(const Tokenizer& tok, const std::string& s, bool bos) {
  const std::vector<int> ids = bos ? tok.encode(s) : tok.encode(s, false);
  return {ids.begin(), ids.end()};
}

void put(std::vector<int64_t>& p, const std::vector<int64_t>& t) {
  p.insert(p.end(), t.begin(), t.end());
}

}  // namespace

const std::vector<std::string>& listTaskIds() {
  static const std::vector<std::string> ids = {"translation_fr", "translation_de", "translation_es",
                                               "antonym",        "synonym",        "copy_words",
                                               "upper",          "nonsense"};
  return ids;
}

NextTokenTask listTask(const std::string& id, const Tokenizer& tok, const std::string& dataDir,
                       const DualRouteVocab& v, const ListTaskOptions& o) {
  const auto src = taskSources().find(id);
  if (src == taskSources().end()) {
    std::string known;
    for (const std::string& k : listTaskIds())
      known += (known.empty() ? "" : ", ") + k;
    fail("list task \"", id, "\": expected one of ", known);
  }
  if (o.items < 2 || o.n < 1) fail("list task ", id, ": items = ", o.items, " and n = ", o.n, " too small");
  toy::Rng rng(toy::deriveSeed(o.seed, streamOf(id)));
  const int64_t nl = newlineId(tok);

  // (from, to) as token ids.
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  std::string origin;
  if (id == "nonsense") {
    std::vector<int64_t> pool;
    for (int64_t t : v.corpus)
      if (t != nl) pool.push_back(t);
    if (pool.size() < 2) fail("list task nonsense: needs a corpus (", v.source, ")");
    for (int i = 0; i < o.n + o.items; ++i) {
      std::vector<int64_t> w = {pool[static_cast<size_t>(rng.uniform(pool.size()))],
                                pool[static_cast<size_t>(rng.uniform(pool.size()))]};
      pairs.emplace_back(w, w);
    }
    origin = "2 random tokens of the corpus (" + v.source + ")";
  } else {
    std::vector<WordPair> words = readPairs(id, dataDir);
    rng.shuffle(words);
    for (const WordPair& p : words) {
      std::vector<int64_t> a = continuationIds(tok, " " + p.from), b = continuationIds(tok, " " + p.to);
      if (a.empty() || b.empty()) continue;
      if (!src->second.same_first_token_allowed && a[0] == b[0]) continue;
      pairs.emplace_back(std::move(a), std::move(b));
      if (static_cast<int>(pairs.size()) == std::max(o.n, o.items)) break;
    }
    origin = dataDir;
  }
  if (static_cast<int>(pairs.size()) < o.items)
    fail("list task ", id, ": ", pairs.size(), " usable pairs, a list needs ", o.items);

  NextTokenTask t;
  t.id = id;
  t.description =
      cat(id, ": lists of ", o.items, " words, ",
          src->second.first_header.substr(0, src->second.first_header.size() - 1), " / ",
          src->second.second_header.substr(0, src->second.second_header.size() - 1), " (", origin, ")");
  const int n = std::min<int>(o.n, static_cast<int>(pairs.size()));
  for (int i = 0; i < n; ++i) {
    std::vector<int> others;  // items − 1 other pairs, never the query's
    for (int j : rng.choose(static_cast<int>(pairs.size()) - 1, o.items - 1))
      others.push_back(j < i ? j : j + 1);
    std::vector<int64_t> first = textIds(tok, src->second.first_header, true);
    std::vector<int64_t> second = textIds(tok, src->second.second_header, false);
    for (size_t k = 0; k < others.size(); ++k) {
      const auto& [from, to] = pairs[static_cast<size_t>(others[k])];
      const std::vector<int64_t> num = textIds(tok, std::to_string(k + 1) + ".", false);
      put(first, num);
      put(first, from);
      first.push_back(nl);
      put(second, num);
      put(second, to);
      second.push_back(nl);
    }
    const std::vector<int64_t> num = textIds(tok, std::to_string(o.items) + ".", false);
    put(first, num);
    put(first, pairs[static_cast<size_t>(i)].first);
    put(second, num);
    std::vector<int64_t> prompt = first;
    prompt.push_back(nl);
    put(prompt, second);
    t.prompts.push_back(std::move(prompt));
    t.answers.push_back(pairs[static_cast<size_t>(i)].second.front());
  }
  return t;
}

}  // namespace hs
