// The `induction` run: induction scores, dual-route grids, ablation curves and tables. See induction_run.h.
#include "analysis/induction_run.h"

#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <utility>

#include "analysis/ablation_curves.h"
#include "analysis/dual_route.h"
#include "analysis/induction_scores.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/toy/world.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

namespace {

// Progress of stage i of n inside the whole run; cancellation passes through.
AnalysisContext stage(const AnalysisContext& ctx, int i, int n, const std::string& what) {
  return subContext(ctx, double(i) / n, double(i + 1) / n, what);
}

nlohmann::json headsJson(const std::vector<HeadRef>& heads) {
  nlohmann::json j = nlohmann::json::array();
  for (const HeadRef& h : heads)
    j.push_back(h);
  return j;
}

}  // namespace

bool isToyVocabulary(const Transformer& model, const Tokenizer* tok) {
  if (!tok) return false;
  const toy::ToyWorld w = toy::ToyWorld::build();
  if (model.config().vocab_size != w.vocabSize()) return false;
  for (int id = 0; id < w.vocabSize(); ++id) {
    const std::optional<int> got = tok->idOf(w.tokens[static_cast<size_t>(id)]);
    if (!got || *got != id) return false;
  }
  return true;
}

AnalysisOutput inductionRun(const Transformer& model, const Tokenizer* tok, const InductionRunOptions& o,
                            const AnalysisContext& ctx) {
  if (o.n < 1 || o.n_eval < 1) fail("induction run: n = ", o.n, " and n_eval = ", o.n_eval, " must be >= 1");
  // The word list is checked before any work, whatever the model (a device or FIFO is refused by name).
  if (!o.words_file.empty()) requireRegularFile(o.words_file, "word list");
  const ModelConfig& c = model.config();
  const int LH = c.n_layers * c.n_heads;
  const bool toyModel = isToyVocabulary(model, tok);
  const toy::ToyWorld world = toy::ToyWorld::build();
  nlohmann::json notes = nlohmann::json::array();

  DualRouteVocab vocab;
  if (toyModel) {
    vocab = toyDualRouteVocab(world, o.sep == "default" ? "\xE2\x86\x92" : o.sep);
    if (!o.words_file.empty())
      notes.push_back("--words " + o.words_file +
                      " not used: the toy model's concept words come from its world");
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
  const std::pair<int, int> tokenRange =
      toyModel ? world.syllableIdRange() : std::pair<int, int>{c.vocab_size / 4, 3 * c.vocab_size / 4};
  io.token_low = tokenRange.first;
  io.token_high = tokenRange.second;
  const InductionScores ind = inductionScores(model, io, stage(ctx, 0, nStages, "induction scores"));

  // ---- dual-route grids ----
  DualRouteOptions dro;
  dro.n_prompts = o.n;
  dro.seed = o.seed;
  dro.filler_len = o.filler_len;
  dro.entity_min = o.entity_min;
  dro.entity_max = o.entity_max;
  dro.r1_len = o.r1_len;
  std::vector<HeadGrid> grids = {ind.previous_token, ind.induction};
  const HeadGrid tokenCopy = tokenCopyingScores(model, vocab, dro, stage(ctx, 1, nStages, "token copying"));
  grids.push_back(tokenCopy);
  HeadGrid conceptCopy;
  if (concept) {
    conceptCopy = conceptCopyingScores(model, vocab, dro, stage(ctx, 2, nStages, "concept copying"));
    grids.push_back(conceptCopy);
  }
  grids.push_back(matchingScores(model, vocab, dro, false, stage(ctx, 3, nStages, "next-token matching")));
  if (concept)
    grids.push_back(matchingScores(model, vocab, dro, true, stage(ctx, 3, nStages, "last-token matching")));
  for (HeadGrid& g : grids)
    g.provenance.model = o.model_path;

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
  for (size_t i = 0; i < tasks.size(); ++i) {
    Curve cv =
        ablationCurve(model, tasks[i], orderings, ao, stage(ctx, 4, nStages, "ablation " + tasks[i].id));
    cv.provenance.model = o.model_path;
    cv.provenance.seed = o.seed;
    out.run.curves.push_back(std::move(cv));
  }

  // ---- induction accuracy with the top prefix-matching heads ablated ----
  const NextTokenTask* inductionTask = nullptr;
  for (const NextTokenTask& t : tasks)
    if (t.id == "copy_random") inductionTask = &t;
  Table ablation = inductionAblationTable(model, *inductionTask, ind.induction, o.top_k, o.seed,
                                          stage(ctx, 5, nStages, "ablation"));
  ablation.provenance.model = o.model_path;
  out.run.tables.push_back(ablation);

  // ---- cross-language concept patching (toy world) ----
  if (toyModel) {
    Table cp = conceptPatchingTable(model, world, conceptCopy, tokenCopy, o.top_k, o.n, o.seed, o.shots,
                                    stage(ctx, 6, nStages, "concept patching"));
    cp.provenance.model = o.model_path;
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
    top[g.id] = headsJson(topHeads(g, o.top_k));
  s["top_heads"] = top;
  if (concept) {
    s["token_vs_concept_jaccard_at_4"] = jaccardAtK(tokenCopy, conceptCopy, 4);
    s["token_vs_concept_jaccard_at_8"] = jaccardAtK(tokenCopy, conceptCopy, 8);
    s["token_vs_concept_spearman"] = spearmanRho(tokenCopy, conceptCopy);
  }
  nlohmann::json acc = nlohmann::json::object();
  for (const Curve& cv : out.run.curves)
    acc[cv.provenance.task] = cv.series.front().second.front();  // k = 0 of the first ordering
  s["task_accuracy"] = acc;
  s["notes"] = notes;

  out.run.id = "induction-1";
  out.run.method = "induction";
  out.run.grids = std::move(grids);
  out.run.options = {{"n", o.n},
                     {"seed", o.seed},
                     {"top_k", o.top_k},
                     {"n_eval", o.n_eval},
                     {"span", o.span},
                     {"filler_len", o.filler_len},
                     {"entity_min", o.entity_min},
                     {"entity_max", o.entity_max},
                     {"r1_len", o.r1_len},
                     {"shots", o.shots},
                     {"sep", o.sep},
                     {"words_file", o.words_file},
                     {"ks", o.ks},
                     {"model", o.model_path}};
  ctx.report(1.0, "induction run done");
  return out;
}

}  // namespace hs
