// The `list-tasks` record: mean-ablation curves on list tasks, heads ordered by token copying, concept
// copying, prefix matching and at random. See induction_run.h.
#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "analysis/methods/induction_parts.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "session/session.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

const OptionTable<InductionRunOptions>& listTasksOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    addDualRoutePromptOptions(t,
                              "prompt pairs per copying score and sequences of the induction scores that "
                              "order the heads; 0 = 1024 on real models, 16 on the toy model",
                              false, true);
    t.add("span", &O::span, "induction scores: random tokens per copy", OptionCheck::atLeast(2))
        .add("n_eval", &O::n_eval,
             "prompts per list task (the official --max_n); 0 = 1024 on real models (fewer where a list has "
             "fewer usable pairs), 64 on the toy model",
             OptionCheck::atLeast(0))
        .add("shots", &O::shots, "toy model: demonstrations of the antonym prompts", OptionCheck::atLeast(0))
        .add("ks", &O::ks,
             "k values of the mean-ablation curves (the official TOPKS; capped by the head count)",
             OptionCheck::atLeast(0))
        .add("top_k", &O::top_k, "k of the summary's accuracy_at_top_k (each ordering's accuracy there)",
             OptionCheck::atLeast(1))
        .add("random_draws", &O::random_draws,
             "random orderings of the live heads (non-zero W_O): the random series is their mean with the "
             "95 % interval of the mean",
             OptionCheck::range(1, 1000))
        .add("list_tasks", &O::list_tasks,
             "models other than the toy model: list tasks of the ablation curves (translation_fr, "
             "translation_de, translation_es, antonym, synonym, copy_words, upper, nonsense)")
        .add("list_data", &O::list_data,
             "folder of the dual-route word lists (nguyenetal_2017/, conneauetal_2017/); empty: "
             "datasets/dual_route of the shared data when present",
             OptionCheck::sharedData("datasets/dual_route"));
    addMeanSourceOptions(t, &O::mean);
    addGridsFromOption(
        t,
        "run JSON files (--json of earlier induction / dual-route runs, comma-separated) whose "
        "grids induction.prefix_matching, dual_route.token_copying and "
        "dual_route.concept_copying order the heads; the grids they lack are computed");
    t.add(
        "orderings", &O::orderings,
        "the curves' head orderings instead of the computed ones (comma-separated): a list of [layer, head] "
        "best first (the published head_orderings/<model>/{concept_copying,token_copying,fv}.json, named "
        "after the file), a run or grid JSON, an import-published --json list or a session (.hscope) "
        "whose grids order the heads (named by grid id); the random control is always added");
    return t;
  }();
  return table;
}

MethodInfo listTasksMethod() {
  MethodInfo m;
  m.name = "list-tasks";
  m.title = "Dual route: mean-ablation curves on list tasks";
  m.paper = "Feucht, Wallace, Bau: The Dual-Route Model of Induction (COLM 2025)";
  m.description =
      "Top-1, top-5 and top-10 accuracy and the answer's probability on list tasks (translation, antonyms, "
      "synonyms, word copying, nonsense copying, upper-casing; on the toy model its copying, translation "
      "and antonym lists) with the top k heads mean-ablated, for each head ordering: token copying, concept "
      "copying, prefix matching (computed as dual-route and induction compute them, or read from earlier "
      "runs), or the published and imported orderings given, and random orders of the live heads; every "
      "point with its 95 % interval.";
  m.options = listTasksOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Curve, "dual_route.ablation.*", "k → top-1 accuracy",
       "list-task accuracy with the top-k heads of each ordering mean-ablated (95 % intervals)"},
      {OutputSpec::Kind::Curve, "dual_route.ablation_top5.*", "k → top-5 accuracy",
       "the answer among the 5 largest logits"},
      {OutputSpec::Kind::Curve, "dual_route.ablation_top10.*", "k → top-10 accuracy",
       "the answer among the 10 largest logits"},
      {OutputSpec::Kind::Curve, "dual_route.ablation_prob.*", "k → p(answer)",
       "the answer's probability (bootstrap intervals over the prompts)"},
  };
  m.gui.at_start = false;  // minutes on the toy model, hours on real models
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runListTasks(in.model, in.tokenizer, listTasksOptionTable().read(options), ctx);
  };
  return m;
}

namespace {

// The runs a file holds: a session (.hscope), a run JSON, a list of runs (import-published --json) or one
// grid JSON (as a run holding it).
std::vector<AnalysisRun> runsIn(const std::string& path, const nlohmann::json& j) {
  if (path.size() > 7 && path.substr(path.size() - 7) == ".hscope") return loadSession(path).runs;
  if (j.is_array()) return j.get<std::vector<AnalysisRun>>();
  if (j.is_object() && j.contains("grids")) return {j.get<AnalysisRun>()};
  if (j.is_object() && j.contains("values")) {
    AnalysisRun r;
    r.grids.push_back(j.get<HeadGrid>());
    return {r};
  }
  fail("neither a list of [layer, head], a run, a list of runs, a grid nor a session");
}

// A list of [layer, head], best first: every head inside the model, none twice.
std::vector<HeadRef> headList(const nlohmann::json& j, const ModelConfig& c) {
  std::vector<HeadRef> heads = j.get<std::vector<HeadRef>>();
  std::set<HeadRef> seen;
  for (const HeadRef& h : heads) {
    if (h.layer >= c.n_layers || h.head >= c.n_heads)
      fail("head ", h.layer, ".", h.head, " is outside the model (", c.n_layers, " layers x ", c.n_heads,
           " heads)");
    if (!seen.insert(h).second) fail("head ", h.layer, ".", h.head, " is listed twice");
  }
  return heads;
}

// The orderings of `files` (InductionRunOptions::orderings).
std::vector<HeadOrdering> orderingsFrom(const std::string& files, const ModelConfig& c) {
  std::vector<HeadOrdering> out;
  std::stringstream list(files);
  for (std::string path; std::getline(list, path, ',');) {
    if (path.empty()) continue;
    withContext("orderings " + path, [&] {
      const bool session = path.size() > 7 && path.substr(path.size() - 7) == ".hscope";
      const nlohmann::json j = session ? nlohmann::json() : readJsonFile(path);
      if (j.is_array() && !j.empty() && j.front().is_array()) {
        out.push_back({std::filesystem::path(path).stem().string(), {headList(j, c)}, path});
        return;
      }
      for (const AnalysisRun& r : runsIn(path, j))
        for (const HeadGrid& g : r.grids)
          if (g.layers() == c.n_layers && g.heads() == c.n_heads)
            out.push_back(
                {r.id.empty() ? g.id : r.id + ":" + g.id, {topHeads(g, c.n_layers * c.n_heads)}, path});
    });
  }
  if (!files.empty() && out.empty())
    fail("orderings ", files, ": no ordering or grid of ", c.n_layers, " x ", c.n_heads, " heads");
  return out;
}

// The curves' orderings: the given ones, or every head by token copying, concept copying (when there is
// a concept grid) and prefix matching; then `draws` seeded random orders of the live heads.
std::vector<HeadOrdering> ablationOrderings(const Transformer& model, const OrderingGrids& g,
                                            const InductionRunOptions& o) {
  const ModelConfig& c = model.config();
  const int LH = c.n_layers * c.n_heads;
  std::vector<HeadOrdering> orderings;
  if (!o.orderings.empty()) {
    orderings = orderingsFrom(o.orderings, c);
  } else {
    auto source = [&](const std::string& id) { return g.sources.value(id, std::string("computed")); };
    orderings.push_back({"token_copying", {topHeads(g.token_copying, LH)}, source(g.token_copying.id)});
    if (!g.concept_copying.id.empty())
      orderings.push_back(
          {"concept_copying", {topHeads(g.concept_copying, LH)}, source(g.concept_copying.id)});
    orderings.push_back({"prefix_matching", {topHeads(g.prefix_matching, LH)}, source(g.prefix_matching.id)});
  }
  HeadOrdering random{
      "random", {}, "live heads (non-zero W_O) in seeded random orders, then the silent ones"};
  for (int d = 0; d < o.random_draws; ++d)
    random.draws.push_back(randomLiveHeadOrder(model, drawSeed(o.seed, d)));
  orderings.push_back(random);
  return orderings;
}

}  // namespace

AnalysisOutput runListTasks(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  checkInductionOptions(o, "list-tasks");
  const bool toyModel = isToyVocabulary(model.config().vocab_size, tok);
  DualRouteSetup setup = dualRouteSetup(model, tok, toyModel, o, "list-tasks");
  const int nStages = 3;
  AnalysisOutput out;
  out.run.id = ctx.runId("list-tasks");  // before its tensor is named

  // Given orderings replace the computed grids: none is computed then.
  OrderingGrids grids;
  if (o.orderings.empty())
    grids = orderingGrids(out, model, tok, setup, o, true, stage(ctx, 0, nStages, "orderings"));
  const std::vector<HeadOrdering> orderings = ablationOrderings(model, grids, o);
  const std::vector<NextTokenTask> tasks = ablationTasks(tok, toyModel, true, setup.vocab, o, setup.notes);

  // The curves of each task (the mean from o.mean, source "task" averaging every task's prompts), each
  // followed by its task's prompts.
  const std::string meanSource = describeMeanSource(o.mean, &model, tok);
  TokenSeqs taskPrompts;
  for (const NextTokenTask& t : tasks)
    taskPrompts.insert(taskPrompts.end(), t.prompts.begin(), t.prompts.end());
  AblationCurveOptions ao;
  ao.ks = o.ks;
  ao.mean_z = resolveMeanZ(model, tok, o.mean, taskPrompts, stage(ctx, 1, nStages, "mean z"));
  ao.mean_source = meanSource;
  ao.seed = o.seed;
  out.addTensor("mean_z", ao.mean_z);  // what the curves ablate with: recomputable from the session alone
  nlohmann::json acc = nlohmann::json::object(), atK = nlohmann::json::object();
  for (const NextTokenTask& task : tasks) {
    for (Curve& cv :
         ablationCurves(model, task, orderings, ao, stage(ctx, 2, nStages, "ablation " + task.id))) {
      cv.provenance.model = ctx.model_path;
      cv.provenance.seed = o.seed;
      if (cv.id == "dual_route.ablation." + task.id) {
        acc[task.id] = cv.series.front().second.front();  // k = 0: the unablated accuracy
        const auto k = std::find(cv.x.begin(), cv.x.end(), double(o.top_k));
        if (k != cv.x.end())  // each ordering's accuracy at k = top_k: what seeds compare
          for (const auto& [id, y] : cv.series)
            atK[task.id][id] = y[static_cast<size_t>(k - cv.x.begin())];
      }
      out.run.curves.push_back(std::move(cv));
    }
    recordAblationTask(out, task);
  }

  nlohmann::json s = setupSummary(setup, toyModel);
  s["mean_source"] = meanSource;
  s["ordering_grids"] = grids.sources;
  nlohmann::json sources = nlohmann::json::object();
  for (const HeadOrdering& ord : orderings)
    sources[ord.id] = ord.source;
  s["orderings"] = sources;
  s["n_eval"] = evalPrompts(o, toyModel);
  s["task_accuracy"] = acc;
  s["accuracy_at_top_k"] = atK;
  s["top_k"] = o.top_k;
  out.run.summary = s;
  finishRun(out, "list-tasks", listTasksOptionTable(), o, ctx);
  return out;
}

}  // namespace hs
