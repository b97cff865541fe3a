// The `dual-route` record: token vs concept copying scores and the next- / last-token matching grids on the
// official prompts. See induction_run.h.
#include "analysis/methods/induction_parts.h"
#include "results/rank_stats.h"

namespace hs {

const OptionTable<InductionRunOptions>& dualRouteOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    addDualRoutePromptOptions(
        t, "prompt pairs per copying score; 0 = the official 1024 on real models, 16 on the toy model", true,
        true);
    t.add("top_k", &O::top_k, "top heads of each grid listed in the summary", OptionCheck::atLeast(1));
    return t;
  }();
  return table;
}

MethodInfo dualRouteMethod() {
  MethodInfo m;
  m.name = "dual-route";
  m.title = "The dual route: token vs concept copying heads";
  m.paper = "Feucht, Wallace, Bau: The Dual-Route Model of Induction (COLM 2025)";
  m.description =
      "Token copying heads (patching a head from a clean prompt with a repeated random-token entity raises "
      "the probability of copying its next token) versus concept copying heads (the same for multi-token "
      "words: the word's meaning, not its tokens, is copied), and the next- and last-token matching "
      "attention scores, on the official prompts (newline separator and corpus fillers on real models, the "
      "toy world's tokens on the toy model).";
  m.options = dualRouteOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "dual_route.token_copying", "ΔP", "causal score for copying tokens"},
      {OutputSpec::Kind::Grid, "dual_route.concept_copying", "ΔP", "causal score for copying word meanings"},
      {OutputSpec::Kind::Grid, "dual_route.next_token_matching", "value-weighted attention",
       "attention to the first token of the earlier entity"},
      {OutputSpec::Kind::Grid, "dual_route.last_token_matching", "value-weighted attention",
       "attention to the last token of the earlier word"},
  };
  m.gui.at_start = false;  // minutes on real models
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runDualRoute(in.model, in.tokenizer, dualRouteOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runDualRoute(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  checkInductionOptions(o, "dual-route");
  const bool toyModel = isToyVocabulary(model.config().vocab_size, tok);
  const DualRouteSetup setup = dualRouteSetup(model, tok, toyModel, o, "dual-route");
  const bool conceptRoute = !setup.vocab.words.empty();
  const int nStages = 4;
  AnalysisOutput out;

  const HeadGrid tokenCopying = tokenCopyingGrid(out, model, setup, stage(ctx, 0, nStages, "token copying"));
  out.run.grids.push_back(tokenCopying);
  HeadGrid conceptCopying;
  if (conceptRoute) {
    conceptCopying = conceptCopyingGrid(out, model, setup, stage(ctx, 1, nStages, "concept copying"));
    out.run.grids.push_back(conceptCopying);
  }
  out.run.grids.push_back(
      matchingGrid(out, model, setup, false, stage(ctx, 2, nStages, "next-token matching")));
  if (conceptRoute)
    out.run.grids.push_back(
        matchingGrid(out, model, setup, true, stage(ctx, 3, nStages, "last-token matching")));

  nlohmann::json s = setupSummary(setup, toyModel);
  s["n_matching"] = setup.options.n_matching;
  s["top_heads"] = topHeadsOf(out.run.grids, o.top_k);
  if (conceptRoute) {
    s["token_vs_concept_jaccard_at_4"] = jaccardAtK(tokenCopying, conceptCopying, 4);
    s["token_vs_concept_jaccard_at_8"] = jaccardAtK(tokenCopying, conceptCopying, 8);
    s["token_vs_concept_spearman"] = spearmanRho(tokenCopying, conceptCopying);
  }
  out.run.summary = s;
  finishRun(out, "dual-route", dualRouteOptionTable(), o, ctx);
  return out;
}

}  // namespace hs
