// The `induction` run: induction scores, dual-route grids, ablation curves and tables. See induction_run.h.
#include "analysis/induction_run.h"

#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <utility>

#include "analysis/ablation_curves.h"
#include "analysis/dual_route.h"
#include "analysis/head_toolkit.h"
#include "analysis/induction_scores.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/toy/world.h"
#include "util/error.h"

namespace hs {

const OptionTable<InductionRunOptions>& inductionOptionTable() {
  using O = InductionRunOptions;
  static const OptionTable<O> table =
      OptionTable<O>()
          .add("n", &O::n, "prompt pairs per dual-route score (and sequences of the induction scores)",
               OptionCheck::atLeast(1))
          .add("seed", &O::seed, "seed of every prompt set")
          .add("top_k", &O::top_k, "heads in the ablation table and concept patching",
               OptionCheck::atLeast(1))
          .add("n_eval", &O::n_eval, "prompts per ablation task", OptionCheck::atLeast(1))
          .add("span", &O::span, "induction scores: random tokens per copy", OptionCheck::atLeast(2))
          .add("filler_len", &O::filler_len, "dual route: tokens before the separator (filler + entity)",
               OptionCheck::atLeast(4), "filler")
          .add("entity_min", &O::entity_min, "random-token entity length: shortest", OptionCheck::atLeast(1))
          .add("entity_max", &O::entity_max, "random-token entity length: longest", OptionCheck::atLeast(1))
          .add("r1_len", &O::r1_len, "matching prompts: tokens repeated after the separator",
               OptionCheck::atLeast(1))
          .add("shots", &O::shots, "toy model: demonstrations of the antonym and concept-patching prompts",
               OptionCheck::atLeast(0))
          .add("sep", &O::sep,
               "separator between the halves: 'default' = the toy model's arrow token, none elsewhere; "
               "'' = none; else a token")
          .add("words_file", &O::words_file,
               "word list (one a line) for the concept parts on models other than the toy model",
               OptionCheck::path(), "words")
          .add("ks", &O::ks, "k values of the mean-ablation curves", OptionCheck::atLeast(0))
          .add(
              "stages", &O::stages,
              "how much to run: scores (induction and previous-token scores, the induction ablation table), "
              "dual_route (also the copying and matching grids) or all (also the ablation curves and concept "
              "patching)",
              OptionCheck::oneOf({"scores", "dual_route", "all"}));
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

AnalysisOutput runInduction(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  if (o.n < 1 || o.n_eval < 1) fail("induction run: n = ", o.n, " and n_eval = ", o.n_eval, " must be >= 1");
  const ModelConfig& c = model.config();
  const int LH = c.n_layers * c.n_heads;
  const bool toyModel = isToyVocabulary(model, tok);
  const toy::ToyWorld world = toy::ToyWorld::build();
  nlohmann::json notes = nlohmann::json::array();

  DualRouteVocab vocab;
  if (toyModel) {
    vocab = toyDualRouteVocab(world, o.sep == "default" ? "\xE2\x86\x92" : o.sep);
  } else {
    if (!tok && !o.words_file.empty())
      fail("induction run: --words needs the model's tokenizer (none loaded)");
    if (tok) {
      vocab = modelDualRouteVocab(*tok, c.vocab_size, o.words_file, o.sep == "default" ? "" : o.sep);
    } else {
      vocab.source = cat("vocab [", c.vocab_size / 4, ", ", 3 * c.vocab_size / 4, ")");
      for (int64_t t = c.vocab_size / 4; t < 3 * c.vocab_size / 4; ++t)
        vocab.random_tokens.push_back(t);
    }
    if (vocab.words.empty()) notes.push_back("concept parts skipped: not the toy model and no --words file");
    notes.push_back("toy list tasks and concept patching skipped: not the toy model");
  }
  const bool concept = !vocab.words.empty();
  const int nStages = 7;

  // ---- classic induction scores on repeated random tokens ----
  InductionScoreOptions io;
  io.span = o.span;
  io.n_sequences = o.n;
  io.seed = o.seed;
  io.bos = vocab.bos;
  // Toy world: its syllables (what induction prompts copy); otherwise the middle half of the vocabulary.
  const std::pair<int64_t, int64_t> tokenRange = inductionTokenRange(model, tok);
  io.token_low = tokenRange.first;
  io.token_high = tokenRange.second;
  const InductionScores ind = inductionScores(model, io, stage(ctx, 0, nStages, "induction scores"));
  const bool dualRoute = o.stages != "scores", all = o.stages == "all";

  // ---- dual-route grids ----
  DualRouteOptions dro;
  dro.n_prompts = o.n;
  dro.seed = o.seed;
  dro.filler_len = o.filler_len;
  dro.entity_min = o.entity_min;
  dro.entity_max = o.entity_max;
  dro.r1_len = o.r1_len;
  std::vector<HeadGrid> grids = {ind.previous_token, ind.induction};
  HeadGrid tokenCopy, conceptCopy;
  if (dualRoute) {
    tokenCopy = tokenCopyingScores(model, vocab, dro, stage(ctx, 1, nStages, "token copying"));
    grids.push_back(tokenCopy);
    if (concept) {
      conceptCopy = conceptCopyingScores(model, vocab, dro, stage(ctx, 2, nStages, "concept copying"));
      grids.push_back(conceptCopy);
    }
    grids.push_back(matchingScores(model, vocab, dro, false, stage(ctx, 3, nStages, "next-token matching")));
    if (concept)
      grids.push_back(matchingScores(model, vocab, dro, true, stage(ctx, 3, nStages, "last-token matching")));
  }
  for (HeadGrid& g : grids)
    g.provenance.model = ctx.model_path;

  // ---- mean-ablation curves ----
  std::vector<NextTokenTask> tasks =
      toyModel ? toyListTasks(world, o.n_eval, o.seed, o.shots)
               : std::vector<NextTokenTask>{randomCopyTask(vocab, o.n_eval, o.seed)};
  std::vector<std::pair<std::string, std::vector<HeadRef>>> orderings = {
      {"token_copying", topHeads(tokenCopy, LH)}};
  if (concept) orderings.emplace_back("concept_copying", topHeads(conceptCopy, LH));
  orderings.emplace_back("prefix_matching", topHeads(ind.induction, LH));
  orderings.emplace_back("random", randomHeadOrder(c.n_layers, c.n_heads, o.seed));
  AblationCurveOptions ao;
  ao.ks = o.ks;
  AnalysisOutput out;
  for (size_t i = 0; all && i < tasks.size(); ++i) {
    Curve cv =
        ablationCurve(model, tasks[i], orderings, ao, stage(ctx, 4, nStages, "ablation " + tasks[i].id));
    cv.provenance.model = ctx.model_path;
    cv.provenance.seed = o.seed;
    out.run.curves.push_back(std::move(cv));
  }

  // ---- induction accuracy with the top prefix-matching heads ablated ----
  const NextTokenTask* inductionTask = nullptr;
  for (const NextTokenTask& t : tasks)
    if (t.id == "copy_random") inductionTask = &t;
  Table ablation = inductionAblationTable(model, *inductionTask, ind.induction, o.top_k, o.seed,
                                          stage(ctx, 5, nStages, "ablation"));
  ablation.provenance.model = ctx.model_path;
  out.run.tables.push_back(ablation);

  // ---- cross-language concept patching (toy world) ----
  if (toyModel && all) {
    Table cp = conceptPatchingTable(model, world, conceptCopy, tokenCopy, o.top_k, o.n, o.seed, o.shots,
                                    stage(ctx, 6, nStages, "concept patching"));
    cp.provenance.model = ctx.model_path;
    out.run.tables.push_back(cp);
  }

  // ---- summary ----
  nlohmann::json& s = out.run.summary;
  s["toy_model"] = toyModel;
  s["vocab"] = vocab.source;
  s["copy_accuracy"] = ind.copy_accuracy;
  s["induction_acc"] = ablation.rows[0][2];
  s["induction_acc_top_prefix_ablated"] = ablation.rows[1][2];
  s["induction_acc_random_ablated"] = ablation.rows[2][2];
  nlohmann::json top = nlohmann::json::object();
  for (const HeadGrid& g : grids)
    top[g.id] = topHeads(g, o.top_k);
  s["top_heads"] = top;
  if (concept && dualRoute) {
    s["token_vs_concept_jaccard_at_4"] = jaccardAtK(tokenCopy, conceptCopy, 4);
    s["token_vs_concept_jaccard_at_8"] = jaccardAtK(tokenCopy, conceptCopy, 8);
    s["token_vs_concept_spearman"] = spearmanRho(tokenCopy, conceptCopy);
  }
  nlohmann::json acc = nlohmann::json::object();
  for (const Curve& cv : out.run.curves)
    acc[cv.provenance.task] = cv.series.front().second.front();  // k = 0 of the first ordering
  s["task_accuracy"] = acc;
  s["notes"] = notes;

  out.run.id = ctx.runId("induction");
  out.run.method = "induction";
  out.run.grids = std::move(grids);
  out.run.options = inductionOptionTable().write(o);
  ctx.report(1.0, "induction run done");
  return out;
}

}  // namespace hs
