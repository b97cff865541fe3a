// The `induction` run: induction scores, dual-route grids, ablation curves and tables. See induction_run.h.
#include "analysis/induction_run.h"

#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <sstream>
#include <utility>

#include "analysis/ablation_curves.h"
#include "analysis/dual_route.h"
#include "analysis/head_toolkit.h"
#include "analysis/induction_scores.h"
#include "analysis/list_tasks.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/toy/world.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

const OptionTable<InductionRunOptions>& inductionOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("n", &O::n,
          "prompt pairs per copying score (and sequences of the induction scores); 0 = the official 1024 on "
          "real models, 16 on the toy model",
          OptionCheck::atLeast(0))
        .add("n_matching", &O::n_matching,
             "prompts per attention (matching) score; 0 = the official 2048 on real models, n on the toy "
             "model",
             OptionCheck::atLeast(0))
        .add("seed", &O::seed, "seed of every prompt set")
        .add("top_k", &O::top_k, "heads in the ablation table and concept patching", OptionCheck::atLeast(1))
        .add("n_eval", &O::n_eval, "prompts per ablation task", OptionCheck::atLeast(1))
        .add("span", &O::span, "induction scores: random tokens per copy", OptionCheck::atLeast(2))
        .add("filler_len", &O::filler_len,
             "dual route: tokens before the separator (filler + entity; the official sequence_len)",
             OptionCheck::atLeast(4))
        .add("entity_min", &O::entity_min, "random-token entity length: shortest", OptionCheck::atLeast(2))
        .add("entity_max", &O::entity_max, "random-token entity length: longest", OptionCheck::atLeast(2))
        .add("shots", &O::shots, "toy model: demonstrations of the antonym and concept-patching prompts",
             OptionCheck::atLeast(0))
        .add("sep", &O::sep,
             "separator between the halves: 'default' = the toy model's arrow token, the newline elsewhere; "
             "'' = none; else a token")
        .add("filler", &O::filler,
             "fillers and the corrupt first half: shuffled corpus windows (default on real models) or random "
             "pool tokens (default on the toy model)",
             OptionCheck::oneOf({"default", "corpus", "random"}))
        .add("filler_corpus", &O::filler_corpus,
             "text of the corpus fillers (empty: the shipped WikiText-2 excerpt)", OptionCheck::path())
        .add("words_file", &O::words_file,
             "word list (one a line) for the concept parts on models other than the toy model (empty: the "
             "corpus's multi-token words)",
             OptionCheck::path(), "words")
        .add("ks", &O::ks, "k values of the mean-ablation curves (capped by the head count)",
             OptionCheck::atLeast(0))
        .add("list_tasks", &O::list_tasks,
             "models other than the toy model: list tasks of the ablation curves (translation_fr, "
             "translation_de, translation_es, antonym, synonym, copy_words, upper, nonsense)")
        .add("list_data", &O::list_data,
             "folder of the dual-route word lists (nguyenetal_2017/, conneauetal_2017/); empty: "
             "../shared/data/datasets/dual_route when present");
    addMeanSourceOptions(t, &O::mean);
    t.add("stages", &O::stages,
          "how much to run: scores (induction and previous-token scores, the induction ablation table), "
          "dual_route (also the copying and matching grids) or all (also the ablation curves and concept "
          "patching)",
          OptionCheck::oneOf({"scores", "dual_route", "all"}));
    return t;
  }();
  return table;
}

MethodInfo inductionMethod() {
  MethodInfo m;
  m.name = "induction";
  m.title = "Induction heads and the dual route (token vs concept copying)";
  m.paper = "Feucht, Wallace, Bau: The Dual-Route Model of Induction (COLM 2025); Olsson et al. 2022";
  m.description =
      "Classic induction and previous-token scores on repeated random tokens, then the dual route: token "
      "copying heads (patching a head from a clean prompt with a repeated random-token entity raises the "
      "probability of copying its next token) versus concept copying heads (the same for multi-token words: "
      "the word's meaning, not its tokens, is copied), next- and last-token matching attention, mean-"
      "ablation curves of each head ordering on list tasks, the induction accuracy with the top prefix-"
      "matching heads ablated against random heads, and (toy model) cross-language concept patching.";
  m.options = inductionOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "induction.prev_token", "attention", "attention to the previous token"},
      {OutputSpec::Kind::Grid, "induction.prefix_matching", "attention",
       "attention to the token after the earlier copy (induction)"},
      {OutputSpec::Kind::Grid, "dual_route.token_copying", "ΔP", "causal score for copying tokens"},
      {OutputSpec::Kind::Grid, "dual_route.concept_copying", "ΔP", "causal score for copying word meanings"},
      {OutputSpec::Kind::Grid, "dual_route.next_token_matching", "value-weighted attention",
       "attention to the first token of the earlier entity"},
      {OutputSpec::Kind::Grid, "dual_route.last_token_matching", "value-weighted attention",
       "attention to the last token of the earlier word"},
      {OutputSpec::Kind::Curve, "dual_route.ablation.*", "k → accuracy",
       "list-task accuracy with the top-k heads of each ordering mean-ablated"},
      {OutputSpec::Kind::Table, "induction.ablation", "accuracy",
       "top prefix-matching heads vs random heads"},
      {OutputSpec::Kind::Table, "dual_route.concept_patching", "share", "toy model: does the meaning move?"},
  };
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runInduction(in.model, in.tokenizer, inductionOptionTable().read(options), ctx);
  };
  return m;
}

namespace {

// The run's resolved model-dependent defaults and its vocabulary.
struct DualRouteSetup {
  DualRouteVocab vocab;
  DualRouteOptions options;
  nlohmann::json notes = nlohmann::json::array();
};

DualRouteSetup dualRouteSetup(const Transformer& model, const Tokenizer* tok, bool toyModel,
                              const InductionRunOptions& o) {
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
    if (o.filler == "corpus") fail("induction run: the toy world has no corpus text; use filler random");
    d.filler = "random";
    s.vocab = toyDualRouteVocab(toy::ToyWorld::build(), o.sep == "default" ? "\xE2\x86\x92" : o.sep);
    return s;
  }
  if (!tok) {
    if (!o.words_file.empty() || o.filler == "corpus")
      fail("induction run: --words and corpus fillers need the model's tokenizer (none loaded)");
    d.filler = "random";
    s.vocab.source = cat("vocab [", c.vocab_size / 4, ", ", 3 * c.vocab_size / 4, ")");
    for (int64_t t = c.vocab_size / 4; t < 3 * c.vocab_size / 4; ++t)
      s.vocab.random_tokens.push_back(t);
    s.notes.push_back("no tokenizer: random-token fillers, no separator, no concept parts");
    return s;
  }
  std::string corpus = o.filler_corpus.empty() ? defaultMeanCorpus() : o.filler_corpus;
  d.filler = o.filler == "default" ? (corpus.empty() ? "random" : "corpus") : o.filler;
  if (d.filler == "corpus" && corpus.empty())
    fail(
        "induction run: corpus fillers need a corpus (--filler-corpus FILE; the shipped WikiText-2 excerpt "
        "is not installed)");
  if (d.filler == "random" && o.filler == "default")
    s.notes.push_back("the WikiText-2 excerpt is not installed: random-token fillers instead of corpus text");
  s.vocab = modelDualRouteVocab(*tok, c.vocab_size, corpus, o.words_file, o.sep == "default" ? "\n" : o.sep);
  if (s.vocab.words.empty()) s.notes.push_back("concept parts skipped: no multi-token words");
  return s;
}

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

void checkInductionOptions(const InductionRunOptions& o) {
  if (o.n < 0 || o.n_matching < 0 || o.n_eval < 1)
    fail("induction run: n = ", o.n, ", n_matching = ", o.n_matching, " (>= 0) and n_eval = ", o.n_eval,
         " (>= 1)");
  // The word list is checked before any work, whatever the model (a device or FIFO is refused by name).
  if (!o.words_file.empty()) requireRegularFile(o.words_file, "word list");
}

// Notes on the parts a run on this model leaves out or ignores.
void noteUnusedParts(nlohmann::json& notes, bool toyModel, const InductionRunOptions& o) {
  if (!toyModel) notes.push_back("concept patching skipped: it runs on the toy world only");
  if (toyModel && !o.words_file.empty())
    notes.push_back("--words " + o.words_file +
                    " not used: the toy model's concept words come from its world");
}

// Classic induction and previous-token scores on repeated random tokens (toy world: its syllables, which
// induction prompts copy; otherwise the middle half of the vocabulary); the scored sequences are recorded.
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

// The dual-route grids, each recorded with its prompts; the concept grids only with concept words.
struct DualRouteGrids {
  HeadGrid token_copying;
  HeadGrid concept_copying;     // empty without concept words
  std::vector<HeadGrid> grids;  // token copying, concept copying, next-token and last-token matching
};

DualRouteGrids dualRouteGrids(AnalysisOutput& out, const Transformer& model, const DualRouteSetup& setup,
                              const AnalysisContext& ctx, int nStages) {
  const DualRouteVocab& vocab = setup.vocab;
  const DualRouteOptions& dro = setup.options;
  const bool conceptRoute = !vocab.words.empty();
  DualRouteGrids g;
  g.token_copying = tokenCopyingScores(model, vocab, dro, stage(ctx, 1, nStages, "token copying"));
  g.grids.push_back(g.token_copying);
  recordCopying(out, vocab, dro, false);
  if (conceptRoute) {
    g.concept_copying = conceptCopyingScores(model, vocab, dro, stage(ctx, 2, nStages, "concept copying"));
    g.grids.push_back(g.concept_copying);
    recordCopying(out, vocab, dro, true);
  }
  g.grids.push_back(matchingScores(model, vocab, dro, false, stage(ctx, 3, nStages, "next-token matching")));
  recordMatching(out, vocab, dro, false);
  if (conceptRoute) {
    g.grids.push_back(matchingScores(model, vocab, dro, true, stage(ctx, 3, nStages, "last-token matching")));
    recordMatching(out, vocab, dro, true);
  }
  return g;
}

// The list tasks of the dual-route study (list_tasks.h) on a model other than the toy model, skipped with a
// note when their data is missing.
void appendListTasks(std::vector<NextTokenTask>& tasks, const Tokenizer& tok, const DualRouteVocab& vocab,
                     const InductionRunOptions& o, nlohmann::json& notes) {
  const std::string dataDir = o.list_data.empty() ? defaultListData() : o.list_data;
  ListTaskOptions lo;
  lo.n = o.n_eval;
  lo.seed = o.seed;
  std::stringstream ids(o.list_tasks);
  for (std::string id; std::getline(ids, id, ',');) {
    if (id.empty()) continue;
    if (id == "nonsense" ? vocab.corpus.empty() : dataDir.empty()) {
      notes.push_back(id == "nonsense" ? "list task nonsense skipped: no corpus fillers"
                                       : "list task " + id +
                                             " skipped: no word-list folder (--list-data; "
                                             "../shared/data/datasets/dual_route is not here)");
      continue;
    }
    tasks.push_back(listTask(id, tok, dataDir, vocab, lo));
  }
}

// The tasks of the ablations: the toy world's list tasks, or random-token copying (plus, for the curves,
// the list tasks) on other models. One of them is "copy_random", the induction task.
std::vector<NextTokenTask> ablationTasks(const toy::ToyWorld& world, const Tokenizer* tok, bool toyModel,
                                         bool withListTasks, const DualRouteVocab& vocab,
                                         const InductionRunOptions& o, nlohmann::json& notes) {
  if (toyModel) return toyListTasks(world, o.n_eval, o.seed, o.shots);
  std::vector<NextTokenTask> tasks = {randomCopyTask(vocab, o.n_eval, o.seed)};
  if (withListTasks && tok) appendListTasks(tasks, *tok, vocab, o, notes);
  return tasks;
}

using HeadOrderings = std::vector<std::pair<std::string, std::vector<HeadRef>>>;

// The head orderings of the mean-ablation curves: every head by token copying, concept copying (with
// concept words), prefix matching, and in a seeded random order.
HeadOrderings ablationOrderings(const ModelConfig& c, const HeadGrid& tokenCopy, const HeadGrid& conceptCopy,
                                const HeadGrid& prefixMatching, bool conceptRoute, uint64_t seed) {
  const int LH = c.n_layers * c.n_heads;
  HeadOrderings orderings = {{"token_copying", topHeads(tokenCopy, LH)}};
  if (conceptRoute) orderings.emplace_back("concept_copying", topHeads(conceptCopy, LH));
  orderings.emplace_back("prefix_matching", topHeads(prefixMatching, LH));
  orderings.emplace_back("random", randomHeadOrder(c.n_layers, c.n_heads, seed));
  return orderings;
}

// Records a task's prompts as "ablation.<id>" with its one-token answers.
void recordAblationTask(AnalysisOutput& out, const NextTokenTask& task) {
  std::vector<std::vector<int64_t>> answers;
  for (int64_t a : task.answers)
    answers.push_back({a});
  recordPrompts(out, "ablation." + task.id, task.prompts, answers);
}

// One mean-ablation curve per task (the mean from o.mean, source "task" averaging every task's prompts),
// each followed by its task's prompts.
void meanAblationCurves(AnalysisOutput& out, const Transformer& model, const Tokenizer* tok,
                        const std::vector<NextTokenTask>& tasks, const HeadOrderings& orderings,
                        const InductionRunOptions& o, const std::string& meanSource,
                        const AnalysisContext& ctx, int nStages) {
  TokenSeqs taskPrompts;
  for (const NextTokenTask& t : tasks)
    taskPrompts.insert(taskPrompts.end(), t.prompts.begin(), t.prompts.end());
  AblationCurveOptions ao;
  ao.ks = o.ks;
  ao.mean_z = resolveMeanZ(model, tok, o.mean, taskPrompts, stage(ctx, 4, nStages, "mean z"));
  ao.mean_source = meanSource;
  for (const NextTokenTask& task : tasks) {
    Curve cv = ablationCurve(model, task, orderings, ao, stage(ctx, 4, nStages, "ablation " + task.id));
    cv.provenance.model = ctx.model_path;
    cv.provenance.seed = o.seed;
    out.run.curves.push_back(std::move(cv));
    recordAblationTask(out, task);
  }
}

// Table "induction.ablation": induction accuracy on the "copy_random" task with the top prefix-matching
// heads ablated; the task's prompts recorded when `recordTask` (the curves record them otherwise).
Table inductionAccuracyAblation(AnalysisOutput& out, const Transformer& model,
                                const std::vector<NextTokenTask>& tasks, const HeadGrid& prefixMatching,
                                const InductionRunOptions& o, bool recordTask, const AnalysisContext& ctx) {
  const NextTokenTask* inductionTask = nullptr;
  for (const NextTokenTask& t : tasks)
    if (t.id == "copy_random") inductionTask = &t;
  Table ablation = inductionAblationTable(model, *inductionTask, prefixMatching, o.top_k, o.seed, ctx);
  ablation.provenance.model = ctx.model_path;
  out.run.tables.push_back(ablation);
  if (recordTask) recordAblationTask(out, *inductionTask);
  return ablation;
}

// The run's summary: its setup, induction accuracies, top heads of every grid, token vs concept copying
// agreement, each task's unablated accuracy and the notes.
nlohmann::json inductionSummary(const AnalysisOutput& out, const DualRouteSetup& setup, bool toyModel,
                                const std::string& meanSource, const InductionScores& ind,
                                const Table& ablation, const std::vector<HeadGrid>& grids,
                                const DualRouteGrids& dr, bool compareRoutes, int topK) {
  nlohmann::json s;
  s["toy_model"] = toyModel;
  s["vocab"] = setup.vocab.source;
  s["n"] = setup.options.n_prompts;
  s["n_matching"] = setup.options.n_matching;
  s["filler"] = setup.options.filler;
  s["sep"] = setup.vocab.sep;
  s["mean_source"] = meanSource;
  s["copy_accuracy"] = ind.copy_accuracy;
  s["induction_acc"] = ablation.rows[0][2];
  s["induction_acc_top_prefix_ablated"] = ablation.rows[1][2];
  s["induction_acc_random_ablated"] = ablation.rows[2][2];
  nlohmann::json top = nlohmann::json::object();
  for (const HeadGrid& g : grids)
    top[g.id] = topHeads(g, topK);
  s["top_heads"] = top;
  if (compareRoutes) {
    s["token_vs_concept_jaccard_at_4"] = jaccardAtK(dr.token_copying, dr.concept_copying, 4);
    s["token_vs_concept_jaccard_at_8"] = jaccardAtK(dr.token_copying, dr.concept_copying, 8);
    s["token_vs_concept_spearman"] = spearmanRho(dr.token_copying, dr.concept_copying);
  }
  nlohmann::json acc = nlohmann::json::object();
  for (const Curve& cv : out.run.curves)
    acc[cv.provenance.task] = cv.series.front().second.front();  // k = 0 of the first ordering
  s["task_accuracy"] = acc;
  s["notes"] = setup.notes;
  return s;
}

}  // namespace

AnalysisOutput runInduction(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  checkInductionOptions(o);
  const bool toyModel = isToyVocabulary(model, tok);
  const toy::ToyWorld world = toy::ToyWorld::build();
  DualRouteSetup setup = dualRouteSetup(model, tok, toyModel, o);
  noteUnusedParts(setup.notes, toyModel, o);
  const bool conceptRoute = !setup.vocab.words.empty();
  const bool dualRoute = o.stages != "scores", all = o.stages == "all";
  const int nStages = 7;
  AnalysisOutput out;

  const InductionScores ind =
      classicInductionScores(out, model, tok, setup, o, stage(ctx, 0, nStages, "induction scores"));
  DualRouteGrids dr;
  if (dualRoute) dr = dualRouteGrids(out, model, setup, ctx, nStages);
  std::vector<HeadGrid> grids = {ind.previous_token, ind.induction};
  grids.insert(grids.end(), dr.grids.begin(), dr.grids.end());
  for (HeadGrid& g : grids)
    g.provenance.model = ctx.model_path;

  const std::vector<NextTokenTask> tasks =
      ablationTasks(world, tok, toyModel, all, setup.vocab, o, setup.notes);
  const HeadOrderings orderings = ablationOrderings(model.config(), dr.token_copying, dr.concept_copying,
                                                    ind.induction, conceptRoute, o.seed);
  const std::string meanSource = describeMeanSource(o.mean, &model, tok);
  if (all && dualRoute) meanAblationCurves(out, model, tok, tasks, orderings, o, meanSource, ctx, nStages);

  const Table ablation = inductionAccuracyAblation(out, model, tasks, ind.induction, o, !(all && dualRoute),
                                                   stage(ctx, 5, nStages, "ablation"));

  if (toyModel && all && dualRoute) {
    Table cp = conceptPatchingTable(model, world, dr.concept_copying, dr.token_copying, o.top_k,
                                    setup.options.n_prompts, o.seed, o.shots,
                                    stage(ctx, 6, nStages, "concept patching"), &out.run.prompts);
    cp.provenance.model = ctx.model_path;
    out.run.tables.push_back(cp);
  }

  out.run.summary = inductionSummary(out, setup, toyModel, meanSource, ind, ablation, grids, dr,
                                     conceptRoute && dualRoute, o.top_k);
  out.run.id = ctx.runId("induction");
  out.run.method = "induction";
  out.run.grids = std::move(grids);
  out.run.options = inductionOptionTable().write(o);
  ctx.report(1.0, "induction run done");
  return out;
}

}  // namespace hs
