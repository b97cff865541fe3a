// Published dual-route results as runs. See published.h.
#include "analysis/methods/published.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "results/rank_stats.h"
#include "results/timestamp.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/json_read.h"
#include "util/resources.h"

namespace hs {
namespace {

namespace fs = std::filesystem;

const char* kTask = "dual-route study (published)";
const char* kSource = "sfeucht/dual-route-induction @ bc9bf84, cache/ (MIT)";

struct PublishedOptions {
  std::string files, model, checkpoint;
};

const OptionTable<PublishedOptions>& publishedOptionTable() {
  using O = PublishedOptions;
  static const OptionTable<O> table =
      OptionTable<O>()
          .add("files", &O::files, "the published files the run was read from (comma-separated)")
          .add("model", &O::model, "the model the scores were computed on (the repository's folder name)")
          .add("checkpoint", &O::checkpoint, "the training checkpoint ('' = the final model)");
  return table;
}

// Where a file sits: its kind folder (causal_scores, ...), model and checkpoint.
struct Place {
  std::string model, checkpoint;
};

bool isCheckpointName(const std::string& s) {
  static const std::regex re("(^|-)step[0-9]+($|-)");
  return std::regex_search(s, re);
}

Place placeOf(const fs::path& file) {
  const fs::path dir = file.parent_path();
  const std::string parent = dir.filename().string();
  if (isCheckpointName(parent)) return {dir.parent_path().filename().string(), parent};
  return {parent, ""};
}

double stepOf(const std::string& checkpoint) {
  std::smatch m;
  static const std::regex re("step([0-9]+)");
  if (std::regex_search(checkpoint, m, re)) return std::stod(m[1].str());
  return -1;
}

// [{"layer", "head_idx", "score"}] → a complete L × H matrix.
Eigen::MatrixXd scoreGrid(const nlohmann::json& list, const std::string& what) {
  if (!list.is_array() || list.empty()) fail(what, ": expected a non-empty list of {layer, head_idx, score}");
  int L = 0, H = 0;
  for (const nlohmann::json& e : list) {
    if (!e.is_object() || !e.contains("layer") || !e.contains("head_idx") || !e.contains("score") ||
        !e["layer"].is_number_integer() || !e["head_idx"].is_number_integer() || !e["score"].is_number())
      fail(what, ": entry ", e.dump().substr(0, 80),
           " is not {\"layer\": int, \"head_idx\": int, \"score\": number}");
    const int l = e["layer"].get<int>(), h = e["head_idx"].get<int>();
    if (l < 0 || h < 0 || l > 4096 || h > 4096) fail(what, ": head (", l, ", ", h, ") is out of range");
    L = std::max(L, l + 1);
    H = std::max(H, h + 1);
  }
  Eigen::MatrixXd g = Eigen::MatrixXd::Constant(L, H, std::numeric_limits<double>::quiet_NaN());
  for (const nlohmann::json& e : list) {
    const int l = e["layer"].get<int>(), h = e["head_idx"].get<int>();
    if (!std::isnan(g(l, h))) fail(what, ": head (", l, ", ", h, ") appears twice");
    g(l, h) = e["score"].get<double>();
  }
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      if (std::isnan(g(l, h))) fail(what, ": head (", l, ", ", h, ") is missing (", L, " x ", H, " heads)");
  return g;
}

struct Pending {
  Place place;
  std::vector<std::string> files;
  std::vector<HeadGrid> grids;
  std::vector<Table> tables;
  int n_prompts = 0;
};

Provenance provenanceOf(const Place& p, const std::string& file, int n, const nlohmann::json& extra) {
  Provenance v;
  v.method = "published";
  v.model = p.checkpoint.empty() ? p.model : p.model + "@" + p.checkpoint;
  v.task = kTask;
  v.seed = 8;
  v.n_prompts = n;
  v.options = {{"file", file}, {"source", kSource}, {"model", p.model}, {"checkpoint", p.checkpoint}};
  const double step = stepOf(p.checkpoint);
  if (step >= 0) v.options["step"] = step;
  for (const auto& [k, val] : extra.items())
    v.options[k] = val;
  return v;
}

HeadGrid grid(const std::string& id, const std::string& name, const std::string& unit, Eigen::MatrixXd values,
              Provenance p) {
  HeadGrid g;
  g.id = id;
  g.name = name;
  g.unit = unit;
  g.values = std::move(values);
  g.provenance = std::move(p);
  return g;
}

// Reads one file into `into` (the pending run of its model and checkpoint).
void readFile(const fs::path& path, std::map<std::pair<std::string, std::string>, Pending>& into) {
  const std::string file = path.string();
  const std::string name = path.filename().string();
  JsonLimits limits = json_limits::dataset();
  limits.kind = "published result";
  const nlohmann::json j = readJsonFile(file, limits);
  const Place place = placeOf(path);
  Pending& run = into[{place.model, place.checkpoint}];
  run.place = place;
  run.files.push_back(file);
  std::smatch m;
  static const std::regex causal("^(concept|token)_copying_len([0-9]+)_n([0-9]+)\\.json$");
  static const std::regex attention("^n([0-9]+)_seqlen([0-9]+)(_randomtokents)?\\.json$");
  static const std::regex ordering("^([A-Za-z0-9_]+)\\.json$");
  if (std::regex_match(name, m, causal)) {
    const bool conceptRoute = m[1] == "concept";
    const int n = std::stoi(m[3].str());
    run.n_prompts = std::max(run.n_prompts, n);
    run.grids.push_back(grid(conceptRoute ? "dual_route.concept_copying" : "dual_route.token_copying",
                             conceptRoute ? "Concept copying (published: ΔP of e1 at −1, patch at −2)"
                                          : "Token copying (published: ΔP of e0 at −2)",
                             "ΔP", withContext(file, [&] { return scoreGrid(j, "the score list"); }),
                             provenanceOf(place, file, n, {{"sequence_len", std::stoi(m[2].str())}})));
    return;
  }
  if (std::regex_match(name, m, attention)) {
    const bool randomTokens = m[3].matched;
    const int n = std::stoi(m[1].str());
    if (!j.is_object() || !j.contains("next_tok_attn") || !j.contains("end_tok_attn"))
      fail(file, ": expected an object with next_tok_attn and end_tok_attn score lists");
    const nlohmann::json extra = {{"sequence_len", std::stoi(m[2].str())},
                                  {"entities", randomTokens ? "random tokens" : "CounterFact words"}};
    auto read = [&](const char* key, const std::string& id, const std::string& title) {
      run.grids.push_back(grid(id, title, "value-weighted attention",
                               withContext(file, [&] { return scoreGrid(j[key], key); }),
                               provenanceOf(place, file, n, extra)));
    };
    if (randomTokens) {
      read("next_tok_attn", "dual_route.next_token_matching",
           "Next-token matching (published: attention to e[0], random tokens)");
      read("end_tok_attn", "dual_route.last_token_matching.random_tokens",
           "Last-token matching on random tokens (published)");
    } else {
      read("end_tok_attn", "dual_route.last_token_matching",
           "Last-token matching (published: attention to e[−1], real words)");
      read("next_tok_attn", "dual_route.next_token_matching.words",
           "Next-token matching on real words (published)");
    }
    return;
  }
  if (j.is_object() && j.contains("base_desired_acc")) {  // language patching
    Table t;
    const std::string details = path.stem().string();
    t.id = "dual_route.language_patching." + details;
    t.name = "Cross-language patching (published): " + details;
    t.columns = {"measure", "value"};
    for (const auto& [k, v] : j.items())
      if (v.is_number()) t.rows.push_back({k, v});
    t.provenance = provenanceOf(place, file, j.value("ct", 0), {});
    run.tables.push_back(std::move(t));
    return;
  }
  if (std::regex_match(name, m, ordering) && j.is_array() && !j.empty() && j[0].is_array()) {
    const std::string order = m[1].str();
    std::vector<HeadRef> heads;
    int L = 0, H = 0;
    for (const nlohmann::json& e : j) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer())
        fail(file, ": entry ", e.dump(), " is not [layer, head]");
      heads.push_back({e[0].get<int>(), e[1].get<int>()});
      L = std::max(L, heads.back().layer + 1);
      H = std::max(H, heads.back().head + 1);
    }
    if (static_cast<int>(heads.size()) != L * H ||
        std::set<HeadRef>(heads.begin(), heads.end()).size() != heads.size())
      fail(file, ": an ordering must list each of the ", L, " x ", H, " heads once (", heads.size(),
           " entries)");
    Eigen::MatrixXd below(L, H);
    Table t;
    t.id = "dual_route.ordering." + order;
    t.name = "Head ordering " + order + " (published, best first)";
    t.columns = {"rank", "layer", "head"};
    for (size_t r = 0; r < heads.size(); ++r) {
      below(heads[r].layer, heads[r].head) = static_cast<double>(heads.size() - 1 - r);
      t.rows.push_back({static_cast<int>(r + 1), heads[r].layer, heads[r].head});
    }
    t.provenance = provenanceOf(place, file, 0, {});
    run.tables.push_back(t);
    run.grids.push_back(grid("dual_route.ordering." + order,
                             "Ordering " + order + " (published; heads ranked below)", "heads ranked below",
                             std::move(below), provenanceOf(place, file, 0, {})));
    return;
  }
  fail(file,
       ": not a published dual-route result (expected {concept,token}_copying_len<L>_n<N>.json, "
       "n<N>_seqlen<L>[_randomtokents].json, a head ordering [[layer, head], ...] or a language-patching "
       "result)");
}

}  // namespace

std::vector<AnalysisRun> importPublished(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& taken) {
  if (paths.empty()) fail("import published: no files given");
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path());
      if (found.empty()) fail(p, ": no .json file in this folder");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.emplace_back(p);
    } else {
      fail(p, ": no such file or folder");
    }
  }
  std::map<std::pair<std::string, std::string>, Pending> pending;
  for (const fs::path& f : files)
    readFile(f, pending);

  // Final models first, then checkpoints by step.
  std::vector<const Pending*> order;
  for (const auto& [key, p] : pending)
    order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Pending* a, const Pending* b) {
    if (a->place.model != b->place.model) return a->place.model < b->place.model;
    return stepOf(a->place.checkpoint) < stepOf(b->place.checkpoint);
  });
  std::vector<std::string> ids = taken;
  std::vector<AnalysisRun> out;
  const std::string created = utcTimestamp();
  for (const Pending* p : order) {
    AnalysisRun r;
    r.id = uniqueRunId("published", ids);
    ids.push_back(r.id);
    r.method = "published";
    r.grids = p->grids;
    r.tables = p->tables;
    std::string files;
    for (const std::string& f : p->files)
      files += (files.empty() ? "" : ",") + f;
    PublishedOptions o{files, p->place.model, p->place.checkpoint};
    r.options = publishedOptionTable().write(o);
    r.provenance = provenanceOf(p->place, "", p->n_prompts, {});
    r.provenance.options.erase("file");
    r.provenance.options["files"] = files;
    r.provenance.created = created;
    for (HeadGrid& g : r.grids)
      g.provenance.created = created;
    for (Table& t : r.tables)
      t.provenance.created = created;
    nlohmann::json top = nlohmann::json::object();
    for (const HeadGrid& g : r.grids)
      top[g.id] = topHeads(g, 4);
    r.summary = {{"model", p->place.model}, {"checkpoint", p->place.checkpoint}, {"top_heads", top}};
    if (stepOf(p->place.checkpoint) >= 0) r.summary["step"] = stepOf(p->place.checkpoint);
    out.push_back(std::move(r));
  }
  return out;
}

MethodInfo publishedMethod() {
  MethodInfo m;
  m.name = "published";
  m.title = "Published results (the dual-route study's per-head scores)";
  m.paper = "Feucht, Wallace, Bau: The Dual-Route Model of Induction (COLM 2025)";
  m.description =
      "Per-head scores the dual-route study published for real models (Llama-2-7b, Llama-3-8B, OLMo-2-7B, "
      "Pythia-6.9b and the OLMo-2 and Pythia training checkpoints): concept and token copying causal "
      "scores, next- and last-token matching attention, head orderings. Imported with headscope-cli "
      "import-published, not computed: open the session and compare them with a run of your own on the same "
      "model (Heads tab, compare with), or follow a head across the training checkpoints.";
  m.imported = true;
  m.options = publishedOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "dual_route.concept_copying", "ΔP", "causal score for copying word meanings"},
      {OutputSpec::Kind::Grid, "dual_route.token_copying", "ΔP", "causal score for copying tokens"},
      {OutputSpec::Kind::Grid, "dual_route.next_token_matching*", "value-weighted attention",
       "attention to the first token of the earlier entity"},
      {OutputSpec::Kind::Grid, "dual_route.last_token_matching*", "value-weighted attention",
       "attention to the last token of the earlier word"},
      {OutputSpec::Kind::Grid, "dual_route.ordering.*", "heads ranked below", "a published head ordering"},
      {OutputSpec::Kind::Table, "dual_route.ordering.*", "rank", "the ordering, best first"},
      {OutputSpec::Kind::Table, "dual_route.language_patching.*", "accuracy", "cross-language patching"},
  };
  return m;
}

std::string publishedResourceDir() {
  return findResource("published");
}

}  // namespace hs
