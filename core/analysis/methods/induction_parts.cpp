// The stages the induction and dual-route records share. See induction_parts.h.
#include "analysis/methods/induction_parts.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "analysis/toolkit/head_toolkit.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/list_tasks.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

int evalPrompts(const InductionRunOptions& o, bool toyModel) {
  return o.n_eval > 0 ? o.n_eval : (toyModel ? 64 : 1024);
}

void checkInductionOptions(const InductionRunOptions& o, const std::string& method) {
  if (o.n < 0 || o.n_matching < 0 || o.n_eval < 0 || o.random_draws < 1)
    fail(method, " run: n = ", o.n, ", n_matching = ", o.n_matching, ", n_eval = ", o.n_eval,
         " (>= 0) and random_draws = ", o.random_draws, " (>= 1)");
  // The word list is checked before any work, whatever the model (a device or FIFO is refused by name).
  if (!o.words_file.empty()) requireRegularFile(o.words_file, "word list");
}

DualRouteSetup dualRouteSetup(const Transformer& model, const Tokenizer* tok, bool toyModel,
                              const InductionRunOptions& o, const std::string& method) {
  const ModelConfig& c = model.config();
  DualRouteSetup s;
  DualRouteOptions& d = s.options;
  d.n_prompts = o.n > 0 ? o.n : (toyModel ? 16 : 1024);
  d.n_matching = o.n_matching > 0 ? o.n_matching : (toyModel ? d.n_prompts : 2048);
  d.seed = o.seed;
  d.filler_len = o.filler_len;
  d.entity_min = o.entity_min;
  d.entity_max = o.entity_max;
  if (toyModel) {
    if (o.filler == "corpus") fail(method, " run: the toy world has no corpus text; use filler random");
    d.filler = "random";
    s.vocab = toyDualRouteVocab(toy::ToyWorld::build(), o.sep == "default" ? "\xE2\x86\x92" : o.sep);
    if (!o.words_file.empty())
      s.notes.push_back("--words " + o.words_file +
                        " not used: the toy model's concept words come from its world");
    return s;
  }
  if (!tok) {
    if (!o.words_file.empty() || o.filler == "corpus")
      fail(method, " run: --words and corpus fillers need the model's tokenizer (none loaded)");
    d.filler = "random";
    s.vocab = randomTokenSetup(model, tok, toyModel, o).vocab;
    s.notes.push_back("no tokenizer: random-token fillers, no separator, no concept parts");
    return s;
  }
  std::string corpus = o.filler_corpus.empty() ? defaultMeanCorpus() : o.filler_corpus;
  d.filler = o.filler == "default" ? (corpus.empty() ? "random" : "corpus") : o.filler;
  if (d.filler == "corpus" && corpus.empty())
    fail(method,
         " run: corpus fillers need a corpus (--filler-corpus FILE; the shipped WikiText-2 excerpt is not "
         "installed)");
  if (d.filler == "random" && o.filler == "default")
    s.notes.push_back("the WikiText-2 excerpt is not installed: random-token fillers instead of corpus text");
  s.vocab = modelDualRouteVocab(*tok, c.vocab_size, corpus, o.words_file, o.sep == "default" ? "\n" : o.sep);
  if (s.vocab.words.empty()) s.notes.push_back("concept parts skipped: no multi-token words");
  return s;
}

DualRouteSetup randomTokenSetup(const Transformer& model, const Tokenizer* tok, bool toyModel,
                                const InductionRunOptions& o) {
  const ModelConfig& c = model.config();
  DualRouteSetup s;
  s.options.n_prompts = o.n > 0 ? o.n : (toyModel ? 16 : 1024);
  s.options.seed = o.seed;
  s.options.filler = "random";
  if (toyModel) {
    s.vocab = toyDualRouteVocab(toy::ToyWorld::build(), "");
  } else if (tok) {
    s.vocab = modelDualRouteVocab(*tok, c.vocab_size, "", "", "");
  } else {
    s.vocab.source = cat("vocab [", c.vocab_size / 4, ", ", 3 * c.vocab_size / 4, ")");
    for (int64_t t = c.vocab_size / 4; t < 3 * c.vocab_size / 4; ++t)
      s.vocab.random_tokens.push_back(t);
  }
  return s;
}

InductionScores classicInductionScores(AnalysisOutput& out, const Transformer& model, const Tokenizer* tok,
                                       const DualRouteSetup& setup, const InductionRunOptions& o,
                                       const AnalysisContext& ctx) {
  InductionScoreOptions io;
  io.span = o.span;
  io.n_sequences = setup.options.n_prompts;
  io.seed = o.seed;
  io.bos = setup.vocab.bos;
  const std::pair<int64_t, int64_t> tokenRange = inductionTokenRange(model, tok);
  io.token_low = tokenRange.first;
  io.token_high = tokenRange.second;
  const InductionScores ind = inductionScores(model, io, ctx);
  for (const std::vector<int64_t>& seq : ind.sequences)
    out.run.prompts.push_back({"induction", seq, -1, {}, {}});
  return ind;
}

namespace {

// Appends copying pairs (clean and corrupt, full prompts ending with e0) to the run's prompt records.
void recordCopying(AnalysisOutput& out, const DualRouteVocab& v, const DualRouteOptions& o,
                   bool conceptRoute) {
  const std::string set = conceptRoute ? "concept_copying" : "token_copying";
  for (int i = 0; i < o.n_prompts; ++i) {
    const CopyingPair p = copyingPair(v, o, conceptRoute, i);
    const int query = static_cast<int>(p.clean.size()) - (conceptRoute ? 1 : 2);
    const std::vector<int64_t> answer = {conceptRoute ? p.entity[1] : p.entity[0]};
    out.run.prompts.push_back({set + ".clean", p.clean, query, answer, {}});
    out.run.prompts.push_back({set + ".corrupt", p.corrupt, query, answer, {}});
  }
}

void recordMatching(AnalysisOutput& out, const DualRouteVocab& v, const DualRouteOptions& o,
                    bool conceptRoute) {
  for (int i = 0; i < o.n_matching; ++i) {
    const MatchingPrompt m = matchingPrompt(v, o, conceptRoute, i);
    out.run.prompts.push_back({conceptRoute ? "last_token_matching" : "next_token_matching",
                               m.tokens,
                               static_cast<int>(m.tokens.size()) - 1,
                               m.entity,
                               {}});
  }
}

// The list tasks of the dual-route study (list_tasks.h) on a model other than the toy model, skipped with a
// note when their data is missing.
void appendListTasks(std::vector<NextTokenTask>& tasks, const Tokenizer& tok, const DualRouteVocab& vocab,
                     const InductionRunOptions& o, nlohmann::json& notes) {
  const std::string& dataDir = o.list_data;
  ListTaskOptions lo;
  lo.n = evalPrompts(o, false);
  lo.seed = o.seed;
  std::stringstream ids(o.list_tasks);
  for (std::string id; std::getline(ids, id, ',');) {
    if (id.empty()) continue;
    if (id == "nonsense" ? vocab.corpus.empty() : dataDir.empty()) {
      notes.push_back(id == "nonsense" ? "list task nonsense skipped: no corpus fillers"
                                       : "list task " + id +
                                             " skipped: no word-list folder (--list-data, or "
                                             "datasets/dual_route in the shared data)");
      continue;
    }
    tasks.push_back(listTask(id, tok, dataDir, vocab, lo));
  }
}

}  // namespace

HeadGrid tokenCopyingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                          const AnalysisContext& ctx) {
  HeadGrid g = tokenCopyingScores(model, setup.vocab, setup.options, ctx);
  recordCopying(out, setup.vocab, setup.options, false);
  return g;
}

HeadGrid conceptCopyingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                            const AnalysisContext& ctx) {
  HeadGrid g = conceptCopyingScores(model, setup.vocab, setup.options, ctx);
  recordCopying(out, setup.vocab, setup.options, true);
  return g;
}

HeadGrid matchingGrid(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                      bool conceptRoute, const AnalysisContext& ctx) {
  HeadGrid g = matchingScores(model, setup.vocab, setup.options, conceptRoute, ctx);
  recordMatching(out, setup.vocab, setup.options, conceptRoute);
  return g;
}

std::vector<HeadGrid> gridsFrom(const std::string& files, const ModelConfig& c,
                                const std::vector<std::string>& ids) {
  std::vector<HeadGrid> grids;
  std::stringstream list(files);
  for (std::string path; std::getline(list, path, ',');) {
    if (path.empty()) continue;
    const nlohmann::json j = readJsonFile(path);
    std::vector<HeadGrid> held;
    withContext(path, [&] {
      if (j.is_object() && j.contains("grids"))
        held = j.at("grids").get<std::vector<HeadGrid>>();
      else if (j.is_object() && j.contains("values"))
        held.push_back(j.get<HeadGrid>());
      else
        fail("grids_from: neither a run (\"grids\") nor a grid (\"values\")");
    });
    for (HeadGrid& g : held) {
      if (std::find(ids.begin(), ids.end(), g.id) == ids.end()) continue;
      if (g.layers() != c.n_layers || g.heads() != c.n_heads)
        fail("grids_from ", path, ": grid ", g.id, " is ", g.layers(), " x ", g.heads(), ", the model has ",
             c.n_layers, " x ", c.n_heads, " heads");
      g.provenance.derived["grids_from"] = path;
      grids.erase(std::remove_if(grids.begin(), grids.end(), [&](const HeadGrid& e) { return e.id == g.id; }),
                  grids.end());
      grids.push_back(std::move(g));
    }
  }
  return grids;
}

OrderingGrids orderingGrids(AnalysisOutput& out, const Transformer& model, const Tokenizer* tok,
                            const DualRouteSetup& setup, const InductionRunOptions& o, bool prefixMatching,
                            const AnalysisContext& ctx) {
  std::vector<std::string> ids = {"dual_route.token_copying", "dual_route.concept_copying"};
  if (prefixMatching) ids.push_back("induction.prefix_matching");
  const std::vector<HeadGrid> given = gridsFrom(o.grids_from, model.config(), ids);
  OrderingGrids g;
  auto take = [&](const std::string& id, HeadGrid& into) {
    for (const HeadGrid& h : given)
      if (h.id == id) {
        into = h;
        g.sources[id] = h.provenance.derived.at("grids_from");
        return true;
      }
    g.sources[id] = "computed";
    return false;
  };
  // In the order a run of induction and dual-route records their prompts.
  if (prefixMatching && !take("induction.prefix_matching", g.prefix_matching))
    g.prefix_matching =
        classicInductionScores(out, model, tok, setup, o, stage(ctx, 0, 3, "induction scores")).induction;
  if (!take("dual_route.token_copying", g.token_copying))
    g.token_copying = tokenCopyingGrid(out, model, setup, stage(ctx, 1, 3, "token copying"));
  if (!take("dual_route.concept_copying", g.concept_copying)) {
    if (!setup.vocab.words.empty())
      g.concept_copying = conceptCopyingGrid(out, model, setup, stage(ctx, 2, 3, "concept copying"));
    else
      g.sources.erase("dual_route.concept_copying");
  }
  return g;
}

std::vector<NextTokenTask> ablationTasks(const Tokenizer* tok, bool toyModel, bool withListTasks,
                                         const DualRouteVocab& vocab, const InductionRunOptions& o,
                                         nlohmann::json& notes) {
  const int nEval = evalPrompts(o, toyModel);
  if (toyModel) return toyListTasks(toy::ToyWorld::build(), nEval, o.seed, o.shots);
  std::vector<NextTokenTask> tasks = {randomCopyTask(vocab, nEval, o.seed)};
  if (withListTasks && tok) appendListTasks(tasks, *tok, vocab, o, notes);
  return tasks;
}

void recordAblationTask(AnalysisOutput& out, const NextTokenTask& task) {
  std::vector<std::vector<int64_t>> answers;
  for (int64_t a : task.answers)
    answers.push_back({a});
  recordPrompts(out, "ablation." + task.id, task.prompts, answers);
}

nlohmann::json setupSummary(const DualRouteSetup& setup, bool toyModel) {
  nlohmann::json s;
  s["toy_model"] = toyModel;
  s["vocab"] = setup.vocab.source;
  s["n"] = setup.options.n_prompts;
  s["filler"] = setup.options.filler;
  s["sep"] = setup.vocab.sep;
  s["notes"] = setup.notes;
  return s;
}

nlohmann::json topHeadsOf(const std::vector<HeadGrid>& grids, int k) {
  nlohmann::json top = nlohmann::json::object();
  for (const HeadGrid& g : grids)
    top[g.id] = topHeads(g, k);
  return top;
}

void addDualRoutePromptOptions(OptionTable<InductionRunOptions>& t, const std::string& nHelp, bool matching,
                               bool fillers) {
  using O = InductionRunOptions;
  t.add("n", &O::n, nHelp, OptionCheck::atLeast(0));
  if (matching)
    t.add("n_matching", &O::n_matching,
          "prompts per attention (matching) score; 0 = the official 2048 on real models, n on the toy model",
          OptionCheck::atLeast(0));
  t.add("seed", &O::seed, "seed of every prompt set")
      .add("filler_len", &O::filler_len,
           "dual route: tokens before the separator (filler + entity; the official sequence_len)",
           OptionCheck::atLeast(4))
      .add("entity_min", &O::entity_min, "random-token entity length: shortest", OptionCheck::atLeast(2))
      .add("entity_max", &O::entity_max, "random-token entity length: longest", OptionCheck::atLeast(2))
      .add("sep", &O::sep,
           "separator between the halves: 'default' = the toy model's arrow token, the newline elsewhere; "
           "'' = none; else a token");
  if (!fillers) return;
  t.add("filler", &O::filler,
        "fillers and the corrupt first half: shuffled corpus windows (default on real models) or random "
        "pool tokens (default on the toy model)",
        OptionCheck::oneOf({"default", "corpus", "random"}))
      .add("filler_corpus", &O::filler_corpus,
           "text of the corpus fillers (empty: the shipped WikiText-2 excerpt)", OptionCheck::path())
      .add("words_file", &O::words_file,
           "word list (one a line) for the concept parts on models other than the toy model (empty: the "
           "corpus's multi-token words)",
           OptionCheck::path(), "words");
}

void addGridsFromOption(OptionTable<InductionRunOptions>& t, const std::string& help) {
  t.add("grids_from", &InductionRunOptions::grids_from, help);
}

void finishRun(AnalysisOutput& out, const std::string& method, const OptionTable<InductionRunOptions>& table,
               const InductionRunOptions& o, const AnalysisContext& ctx) {
  // The toolkit names its results' method "induction"; each is this record's.
  for (HeadGrid& g : out.run.grids) {
    g.provenance.model = ctx.model_path;
    g.provenance.method = method;
  }
  for (Curve& c : out.run.curves)
    c.provenance.method = method;
  for (Table& t : out.run.tables)
    t.provenance.method = method;
  out.run.id = ctx.runId(method);
  out.run.method = method;
  out.run.options = table.write(o);
  ctx.report(1.0, method + " run done");
}

}  // namespace hs
