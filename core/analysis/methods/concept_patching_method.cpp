// The `concept-patching` record: cross-language concept patching on the toy world, the top concept-copying
// heads against the top token-copying heads and random heads. See induction_run.h.
#include "analysis/methods/induction_parts.h"
#include "util/error.h"

namespace hs {

const OptionTable<InductionRunOptions>& conceptPatchingOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    addDualRoutePromptOptions(
        t, "patched prompt pairs, and prompt pairs per copying score; 0 = 16 on the toy model", false, false);
    t.add("top_k", &O::top_k, "heads of each patched set", OptionCheck::atLeast(1))
        .add("shots", &O::shots, "demonstrations of the translation prompts", OptionCheck::atLeast(0))
        .add("random_draws", &O::random_draws,
             "random head sets (live heads) patched; their outcomes are pooled", OptionCheck::range(1, 1000));
    addGridsFromOption(t,
                       "run JSON files (--json of earlier dual-route runs, comma-separated) whose grids "
                       "dual_route.token_copying and dual_route.concept_copying choose the heads; the grids "
                       "they lack are computed");
    return t;
  }();
  return table;
}

MethodInfo conceptPatchingMethod() {
  MethodInfo m;
  m.name = "concept-patching";
  m.title = "Dual route: cross-language concept patching (toy model)";
  m.paper = "Feucht, Wallace, Bau: The Dual-Route Model of Induction (COLM 2025)";
  m.description =
      "Toy model only. The top-k concept-copying heads' output at the end of a source translation prompt is "
      "written into a destination prompt translating another word in the other direction at every "
      "generation step: does the source's meaning move (the destination generates the source word in its "
      "own output language)? Compared with the top-k token-copying heads and k random heads. The copying "
      "grids are computed as dual-route computes them, or read from an earlier run.";
  m.options = conceptPatchingOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Table, "dual_route.concept_patching", "share", "toy model: does the meaning move?"},
  };
  m.gui.at_start = false;
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runConceptPatching(in.model, in.tokenizer, conceptPatchingOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runConceptPatching(const Transformer& model, const Tokenizer* tok,
                                  const InductionRunOptions& o, const AnalysisContext& ctx) {
  checkInductionOptions(o, "concept-patching");
  if (!isToyVocabulary(model.config().vocab_size, tok))
    fail("concept-patching runs on the toy model only: it patches between the toy world's two languages");
  DualRouteSetup setup = dualRouteSetup(model, tok, true, o, "concept-patching");
  const int nStages = 2;
  AnalysisOutput out;

  const OrderingGrids grids =
      orderingGrids(out, model, tok, setup, o, false, stage(ctx, 0, nStages, "copying scores"));
  Table cp =
      conceptPatchingTable(model, toy::ToyWorld::build(), grids.concept_copying, grids.token_copying, o.top_k,
                           setup.options.n_prompts, o.seed, o.shots,
                           stage(ctx, 1, nStages, "concept patching"), &out.run.prompts, o.random_draws);
  cp.provenance.model = ctx.model_path;
  out.run.tables.push_back(cp);

  nlohmann::json s = setupSummary(setup, true);
  s["ordering_grids"] = grids.sources;
  s["top_heads"] = topHeadsOf({grids.concept_copying, grids.token_copying}, o.top_k);
  nlohmann::json shares = nlohmann::json::object();  // {head set: {outcome: share}}: what seeds compare
  for (const auto& row : cp.rows)
    for (size_t c = 3; c < 7; ++c)
      shares[row[0].get<std::string>()][cp.columns[c]] = row[c].get<double>();
  s["shares"] = shares;
  out.run.summary = s;
  finishRun(out, "concept-patching", conceptPatchingOptionTable(), o, ctx);
  return out;
}

}  // namespace hs
