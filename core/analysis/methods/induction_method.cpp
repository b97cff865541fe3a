// The `induction` record: classic induction and previous-token scores on repeated random tokens, and the
// induction accuracy with the top prefix-matching heads ablated against random heads. See induction_run.h.
#include "analysis/methods/induction_parts.h"
#include "util/error.h"

namespace hs {

const OptionTable<InductionRunOptions>& inductionOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("n", &O::n, "sequences of the induction scores; 0 = 1024 on real models, 16 on the toy model",
          OptionCheck::atLeast(0))
        .add("seed", &O::seed, "seed of the sequences, the ablation task and the random heads")
        .add("top_k", &O::top_k, "heads in the ablation table (top-k prefix matching vs k random)",
             OptionCheck::atLeast(1))
        .add("n_eval", &O::n_eval,
             "prompts of the induction accuracy (copy_random task); 0 = 1024 on real models, 64 on the toy "
             "model",
             OptionCheck::atLeast(0))
        .add("random_draws", &O::random_draws,
             "random head sets (live heads outside the top 2k) in the ablation table: their mean, sd and "
             "the 95 % interval of the mean",
             OptionCheck::range(1, 1000))
        .add("span", &O::span, "induction scores: random tokens per copy", OptionCheck::atLeast(2));
    return t;
  }();
  return table;
}

MethodInfo inductionMethod() {
  MethodInfo m;
  m.name = "induction";
  m.title = "Induction heads (previous-token and prefix-matching scores)";
  m.paper = "Olsson et al.: In-context Learning and Induction Heads (2022)";
  m.description =
      "Classic induction and previous-token scores on repeated random tokens (attention to the token after "
      "the earlier copy, and to the previous token), then the induction accuracy on random-token copying "
      "with the top prefix-matching heads zero-ablated against as many random heads from outside the top "
      "2k. The dual route has records of its own: dual-route, list-tasks, concept-patching.";
  m.options = inductionOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "induction.prev_token", "attention", "attention to the previous token"},
      {OutputSpec::Kind::Grid, "induction.prefix_matching", "attention",
       "attention to the token after the earlier copy (induction)"},
      {OutputSpec::Kind::Table, "induction.ablation", "accuracy",
       "top prefix-matching heads vs random heads"},
  };
  // The first screen: its defaults are quick (the dual route is in its own, slower records).
  m.gui.shortcut = "Ctrl+R";
  m.gui.at_start = true;
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runInduction(in.model, in.tokenizer, inductionOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runInduction(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  checkInductionOptions(o, "induction");
  const bool toyModel = isToyVocabulary(model.config().vocab_size, tok);
  DualRouteSetup setup = randomTokenSetup(model, tok, toyModel, o);
  const int nStages = 2;
  AnalysisOutput out;

  const InductionScores ind =
      classicInductionScores(out, model, tok, setup, o, stage(ctx, 0, nStages, "induction scores"));

  // Induction accuracy on the "copy_random" task with the top prefix-matching heads ablated.
  const std::vector<NextTokenTask> tasks = ablationTasks(tok, toyModel, false, setup.vocab, o, setup.notes);
  const NextTokenTask* inductionTask = nullptr;
  for (const NextTokenTask& t : tasks)
    if (t.id == "copy_random") inductionTask = &t;
  Table ablation = inductionAblationTable(model, *inductionTask, ind.induction, o.top_k, o.seed,
                                          o.random_draws, stage(ctx, 1, nStages, "ablation"));
  ablation.provenance.model = ctx.model_path;
  out.run.tables.push_back(ablation);
  recordAblationTask(out, *inductionTask);

  out.run.grids = {ind.previous_token, ind.induction};
  nlohmann::json s = setupSummary(setup, toyModel);
  s.erase("filler");  // no fillers or separator: the sequences are random tokens only
  s.erase("sep");
  s["copy_accuracy"] = ind.copy_accuracy;
  s["induction_acc"] = ablation.rows[0][2];
  s["induction_acc_top_prefix_ablated"] = ablation.rows[1][2];
  s["induction_acc_random_ablated"] = ablation.rows[2][2];
  s["top_heads"] = topHeadsOf(out.run.grids, o.top_k);
  out.run.summary = s;
  finishRun(out, "induction", inductionOptionTable(), o, ctx);
  return out;
}

}  // namespace hs
