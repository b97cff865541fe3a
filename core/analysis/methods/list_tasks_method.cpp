// The `list-tasks` record: mean-ablation curves on list tasks, heads ordered by token copying, concept
// copying, prefix matching and at random. See induction_run.h.
#include "analysis/methods/induction_parts.h"
#include "results/rank_stats.h"

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
        .add("n_eval", &O::n_eval, "prompts per list task", OptionCheck::atLeast(1))
        .add("shots", &O::shots, "toy model: demonstrations of the antonym prompts", OptionCheck::atLeast(0))
        .add("ks", &O::ks, "k values of the mean-ablation curves (capped by the head count)",
             OptionCheck::atLeast(0))
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
      "Accuracy on list tasks (translation, antonyms, synonyms, word copying, nonsense copying, "
      "upper-casing; "
      "on the toy model its copying, translation and antonym lists) with the top k heads mean-ablated, for "
      "each head ordering: token copying, concept copying, prefix matching and a random order. The "
      "orderings' grids are computed as dual-route and induction compute them, or read from earlier runs.";
  m.options = listTasksOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Curve, "dual_route.ablation.*", "k → accuracy",
       "list-task accuracy with the top-k heads of each ordering mean-ablated"},
  };
  m.gui.at_start = false;  // minutes on the toy model, hours on real models
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runListTasks(in.model, in.tokenizer, listTasksOptionTable().read(options), ctx);
  };
  return m;
}

namespace {

using HeadOrderings = std::vector<std::pair<std::string, std::vector<HeadRef>>>;

// Every head by token copying, concept copying (when there is a concept grid), prefix matching, and in a
// seeded random order.
HeadOrderings ablationOrderings(const ModelConfig& c, const OrderingGrids& g, uint64_t seed) {
  const int LH = c.n_layers * c.n_heads;
  HeadOrderings orderings = {{"token_copying", topHeads(g.token_copying, LH)}};
  if (!g.concept_copying.id.empty())
    orderings.emplace_back("concept_copying", topHeads(g.concept_copying, LH));
  orderings.emplace_back("prefix_matching", topHeads(g.prefix_matching, LH));
  orderings.emplace_back("random", randomHeadOrder(c.n_layers, c.n_heads, seed));
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

  const OrderingGrids grids =
      orderingGrids(out, model, tok, setup, o, true, stage(ctx, 0, nStages, "orderings"));
  const HeadOrderings orderings = ablationOrderings(model.config(), grids, o.seed);
  const std::vector<NextTokenTask> tasks = ablationTasks(tok, toyModel, true, setup.vocab, o, setup.notes);

  // One mean-ablation curve per task (the mean from o.mean, source "task" averaging every task's prompts),
  // each followed by its task's prompts.
  const std::string meanSource = describeMeanSource(o.mean, &model, tok);
  TokenSeqs taskPrompts;
  for (const NextTokenTask& t : tasks)
    taskPrompts.insert(taskPrompts.end(), t.prompts.begin(), t.prompts.end());
  AblationCurveOptions ao;
  ao.ks = o.ks;
  ao.mean_z = resolveMeanZ(model, tok, o.mean, taskPrompts, stage(ctx, 1, nStages, "mean z"));
  ao.mean_source = meanSource;
  for (const NextTokenTask& task : tasks) {
    Curve cv = ablationCurve(model, task, orderings, ao, stage(ctx, 2, nStages, "ablation " + task.id));
    cv.provenance.model = ctx.model_path;
    cv.provenance.seed = o.seed;
    out.run.curves.push_back(std::move(cv));
    recordAblationTask(out, task);
  }

  nlohmann::json s = setupSummary(setup, toyModel);
  s["mean_source"] = meanSource;
  s["ordering_grids"] = grids.sources;
  nlohmann::json acc = nlohmann::json::object();
  for (const Curve& cv : out.run.curves)
    acc[cv.provenance.task] = cv.series.front().second.front();  // k = 0 of the first ordering
  s["task_accuracy"] = acc;
  out.run.summary = s;
  finishRun(out, "list-tasks", listTasksOptionTable(), o, ctx);
  return out;
}

}  // namespace hs
