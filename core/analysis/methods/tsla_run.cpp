// The whole TSLA run (runTsla) as a sequence of stages: inputs and provenance, TR / TL scores, head sets,
// ablations on held-out prompts (table, curves over k, input perturbations), steering, attention shares,
// per-layer subspace geometry and the rankings' overlap. See tsla.h.
#include "analysis/methods/tsla.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analysis/toolkit/icl_accuracy.h"
#include "analysis/toolkit/induction_scores.h"
#include "results/intervals.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/corruption.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kInputShuffleStream = 0x7153;

// Sum over the selected heads of their prompt-mean output: meanA [layers, heads, d_model] → [d_model].
at::Tensor headSetVector(const at::Tensor& meanA, const std::vector<HeadRef>& heads) {
  at::Tensor v = at::zeros({meanA.size(2)}, meanA.options());  // [d_model]
  for (const HeadRef& h : heads)
    v += meanA[h.layer][h.head];
  return v;
}

// The numbers of one ablation row: one evaluation (Wilson intervals over its n prompts) or the mean over
// random draws (their sd and the 95 % t interval of the mean).
struct RowStats {
  double accuracy = 0, tr_ratio = 0, accuracy_lo = 0, accuracy_hi = 0, tr_ratio_lo = 0, tr_ratio_hi = 0;
  double accuracy_sd = std::nan(""), tr_ratio_sd = std::nan("");
  int n = 0, draws = 1;
};

RowStats statsOf(const IclEval& e) {
  RowStats r;
  r.accuracy = e.accuracy;
  r.tr_ratio = e.tr_ratio;
  r.n = e.n;
  std::tie(r.accuracy_lo, r.accuracy_hi) = wilsonOfRate(e.accuracy, e.n);
  std::tie(r.tr_ratio_lo, r.tr_ratio_hi) = wilsonOfRate(e.tr_ratio, e.n);
  return r;
}

// Mean, sd and 95 % t interval over random draws of a rate or share: the interval of a mean of values in
// [0, 1] stays in [0, 1] (a NaN end, one draw, stays NaN).
Spread rateSpread(const std::vector<double>& perDraw) {
  Spread s = spreadOf(perDraw);
  if (std::isfinite(s.lo)) s.lo = std::max(0.0, s.lo);
  if (std::isfinite(s.hi)) s.hi = std::min(1.0, s.hi);
  return s;
}

RowStats statsOf(const std::vector<IclEval>& draws) {
  if (draws.size() == 1) return statsOf(draws.front());
  std::vector<double> acc, ratio;
  for (const IclEval& e : draws)
    acc.push_back(e.accuracy), ratio.push_back(e.tr_ratio);
  const Spread a = rateSpread(acc), t = rateSpread(ratio);
  RowStats r;
  r.accuracy = a.mean, r.accuracy_lo = a.lo, r.accuracy_hi = a.hi, r.accuracy_sd = a.sd;
  r.tr_ratio = t.mean, r.tr_ratio_lo = t.lo, r.tr_ratio_hi = t.hi, r.tr_ratio_sd = t.sd;
  r.n = draws.front().n;
  r.draws = static_cast<int>(draws.size());
  return r;
}

nlohmann::json evalJson(const RowStats& r) {
  nlohmann::json j = {{"accuracy", doubleToJson(r.accuracy)},
                      {"tr_ratio", doubleToJson(r.tr_ratio)},
                      {"n", r.n},
                      {"accuracy_lo", doubleToJson(r.accuracy_lo)},
                      {"accuracy_hi", doubleToJson(r.accuracy_hi)},
                      {"tr_ratio_lo", doubleToJson(r.tr_ratio_lo)},
                      {"tr_ratio_hi", doubleToJson(r.tr_ratio_hi)}};
  if (r.draws > 1) {
    j["draws"] = r.draws;
    j["accuracy_sd"] = doubleToJson(r.accuracy_sd);
    j["tr_ratio_sd"] = doubleToJson(r.tr_ratio_sd);
  }
  return j;
}

nlohmann::json evalJson(const IclEval& e) {
  return evalJson(statsOf(e));
}

// The interval columns every ablation-style table ends with.
const std::vector<std::string> kIntervalColumns = {"accuracy_lo", "accuracy_hi", "tr_ratio_lo",
                                                   "tr_ratio_hi", "draws",       "accuracy_sd"};

// A table cell: the number, or null where there is none (an sd of one draw); null reads back as null.
nlohmann::json cellOf(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::vector<nlohmann::json> intervalCells(const RowStats& r) {
  return {cellOf(r.accuracy_lo), cellOf(r.accuracy_hi), cellOf(r.tr_ratio_lo), cellOf(r.tr_ratio_hi), r.draws,
          cellOf(r.accuracy_sd)};
}

std::vector<Example> examplesAt(const Dataset& d, const std::vector<int>& idx) {
  std::vector<Example> out;
  for (int i : idx)
    out.push_back(d.examples[static_cast<size_t>(i)]);
  return out;
}

// A prompt set with the label set and gold index of each prompt.
struct LabelledPrompts {
  std::vector<Prompt> prompts;
  PromptLabels labels;
};

// Held-out prompts whose demonstration inputs are permuted across the demonstrations (each demo keeps its
// label, gets another demo's input): the format and label set stay, the input → label mapping goes.
LabelledPrompts shuffledInputPrompts(const Tokenizer& tok, const IclTask& eval, const PromptLabels& labels,
                                     uint64_t seed) {
  LabelledPrompts out;
  out.labels = labels;
  for (size_t i = 0; i < eval.icl.size(); ++i) {
    const std::vector<Example> demos = shuffleInputs(examplesAt(eval.dataset, eval.demo_index[i]),
                                                     toy::deriveSeed(seed, kInputShuffleStream, i));
    out.prompts.push_back(
        buildPrompt(tok, eval.tmpl, demos, eval.dataset.examples[static_cast<size_t>(eval.query_index[i])]));
  }
  return out;
}

// Held-out prompts whose labels are replaced by the numbers 1..k (in order of first appearance in the
// demonstrations, consistently for the query): the mapping stays learnable, the label words go. A prompt
// whose query label no demonstration shows has no number answer and is left out.
// Empty, with the reason in *skipped, when the tokenizer cannot tell the numbers apart by their first token.
LabelledPrompts numberLabelPrompts(const Tokenizer& tok, const IclTask& eval, std::string* skipped) {
  LabelledPrompts out;
  std::map<std::string, int> numberToken;  // "3" → its first token after the output prefix
  auto tokenOf = [&](const std::string& number) {
    auto it = numberToken.find(number);
    if (it != numberToken.end()) return it->second;
    Example probe = eval.dataset.examples.front();
    probe.outputs = {number};
    const int t = zeroShotPrompt(tok, eval.tmpl, probe).answer_token;
    numberToken[number] = t;
    return t;
  };
  for (size_t i = 0; i < eval.icl.size(); ++i) {
    const Example& query = eval.dataset.examples[static_cast<size_t>(eval.query_index[i])];
    const Relabeled r = numberLabels(examplesAt(eval.dataset, eval.demo_index[i]), query);
    bool mapped = false;
    std::vector<int> set;
    for (const auto& [old, number] : r.mapping) {
      set.push_back(tokenOf(number));
      mapped = mapped || old == query.outputs.at(0);
    }
    if (!mapped) continue;
    const Prompt p = buildPrompt(tok, eval.tmpl, r.demos, r.query);
    std::vector<int> sorted = set;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      *skipped = cat("the number labels 1..", set.size(), " do not start with distinct tokens");
      return {};
    }
    const auto it = std::find(set.begin(), set.end(), p.answer_token);
    if (it == set.end()) fail("tsla: a number-label prompt's answer token is not one of the number tokens");
    out.prompts.push_back(p);
    out.labels.sets.push_back(set);
    out.labels.gold.push_back(static_cast<int>(it - set.begin()));
  }
  return out;
}

// 1, 2, 4, … up to half of `nHeads` (at least 1).
std::vector<int> defaultCurveKs(int nHeads) {
  std::vector<int> ks;
  for (int k = 1; k <= std::max(1, nHeads / 2); k *= 2)
    ks.push_back(k);
  return ks;
}

// Refuses empty prompt sets, a classification task with fewer than two labels, and a held-out task with
// other labels or with queries of the analysed prompts.
void checkTslaPrompts(const Transformer& model, const IclTask& task, const IclTask& evalTask) {
  if (task.icl.empty() || evalTask.icl.empty()) fail("tsla: empty prompt set");
  if (task.classification()) taskProjector(model, task, "tsla");  // refuses fewer than two labels
  if (evalTask.label_tokens != task.label_tokens)
    fail("tsla: the held-out task has other label tokens than the analysed task");
  std::set<int> analysedQueries(task.query_index.begin(), task.query_index.end());
  for (int q : evalTask.query_index)
    if (analysedQueries.count(q))
      fail("tsla: held-out query ", q, " of ", task.spec.dataset, " is also an analysed query");
}

// Checks runTsla's inputs (in the order a user reads them); returns the steering layer.
int checkTslaInputs(const Transformer& model, const IclTask& task, const IclTask& evalTask,
                    const TslaOptions& opts) {
  const int L = model.config().n_layers;
  if (opts.ablation != "zero" && opts.ablation != "mean" && opts.ablation != "both")
    fail("tsla: ablation must be zero, mean or both, got '", opts.ablation, "'");
  if (!(opts.top_percent > 0 && opts.top_percent <= 100))
    fail("tsla: top percent must be in (0, 100], got ", opts.top_percent);
  if (opts.steer_layer < -1 || opts.steer_layer >= L)
    fail("tsla: steering layer ", opts.steer_layer, " outside 0..", L - 1, " (or -1 for n_layers / 2)");
  const int steerLayer = opts.steer_layer >= 0 ? opts.steer_layer : L / 2;
  if (!std::isfinite(opts.steer_scale))
    fail("tsla: steering scale ", opts.steer_scale, " is not a finite number");
  checkTslaPrompts(model, task, evalTask);
  return steerLayer;
}

// The provenance of every result: all options, where the held-out prompts come from, the mean source and
// the label sets.
Provenance tslaProvenance(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                          const IclTask& evalTask, const TslaOptions& opts, const AnalysisContext& ctx) {
  nlohmann::json options = tslaOptionTable().write(opts);
  options["eval_n_prompts"] = evalTask.icl.size();
  options["eval_prompts_from"] = "prompts " + std::to_string(task.icl.size()) + ".." +
                                 std::to_string(task.icl.size() + evalTask.icl.size() - 1) +
                                 " of the task spec (other queries of its split)";
  options["mean_source_description"] = describeMeanSource(opts.mean, &model, &tok);
  options["label_sets"] = task.classification() ? "the task's label words"
                                                : "per prompt: first tokens of the demonstrations' answers "
                                                  "and of the query's answer";
  return iclProvenance("tsla", ctx, task, options);
}

// Head outputs at N of the analysed prompts and the TR / TL grids they give.
struct HeadScores {
  PromptLabels labels;      // the analysed prompts' label sets
  PromptLabels evalLabels;  // the held-out prompts' label sets
  at::Tensor a;             // [n, layers, heads, d_model] head outputs at N
  HeadGrid tr, tl;
};

HeadScores trTlStage(const Transformer& model, const IclTask& task, const IclTask& evalTask,
                     const TslaOptions& opts, const Provenance& prov, const AnalysisContext& ctx) {
  HeadScores s;
  s.labels = promptLabels(task, task.icl);
  s.evalLabels = promptLabels(evalTask, evalTask.icl);
  s.a = headOutputsAtLast(model, tokenSeqs(task.icl), {}, subContext(ctx, 0.0, 0.08, "head outputs"),
                          opts.batch);  // [n, layers, heads, d_model]
  // score_definition: the paper's squared projection (TR = ‖P a‖², TL divided by it) or the norm variant.
  const TrTlDefinition definition = trTlDefinition(opts.score_definition);
  const bool paper = definition == TrTlDefinition::Paper;
  const TrTlScores scores = trTlScores(s.a, model, s.labels, opts.final_norm, definition);
  const std::string norm = paper ? "‖P a‖²" : "‖P a‖";
  s.tr = {"tsla.tr", "Task recognition " + norm + " (" + opts.score_definition + ")",
          paper ? "norm²" : "norm", scores.tr, prov};
  s.tl = {"tsla.tl",
          "Task learning ⟨a, W_U[y*] − mean W_U[y']⟩ / " + norm + " (" + opts.score_definition + ")",
          paper ? "logit / norm²" : "logit / norm", scores.tl, prov};
  s.tr.se = standardErrors(scores.tr, scores.tr_sq, scores.n);  // over the analysed prompts
  s.tl.se = standardErrors(scores.tl, scores.tl_sq, scores.n);
  return s;
}

// The head sets: top k by TR, by TL, by prefix matching; random k live heads outside the TR and TL sets,
// opts.random_draws times. Every table's random row is the mean over all the draws (`random`, the first
// draw, is kept for the summary's "random" key and the row's head count).
struct HeadSets {
  int k = 0;  // heads per set
  std::vector<HeadRef> tr, tl, induction, random;
  std::vector<std::vector<HeadRef>> random_draws;  // [draws] every random set
  InductionScores ind;                             // the induction grid the induction set is ranked by
  // The sets by name, in table order: tr, tl, induction, random.
  std::vector<std::pair<std::string, const std::vector<HeadRef>*>> named() const {
    return {{"tr", &tr}, {"tl", &tl}, {"induction", &induction}, {"random", &random}};
  }
  // The head sets a table row averages over: every random draw for "random", else the one set.
  std::vector<std::vector<HeadRef>> drawsOf(const std::string& name,
                                            const std::vector<HeadRef>& heads) const {
    return name == "random" ? random_draws : std::vector<std::vector<HeadRef>>{heads};
  }
};

HeadSets headSetStage(const Transformer& model, const Tokenizer& tok, const HeadScores& s,
                      const TslaOptions& opts, const Provenance& prov, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  HeadSets sets;
  sets.k = topPercentCount(c.n_layers * c.n_heads, opts.top_percent);
  sets.tr = topHeads(s.tr, sets.k);
  sets.tl = topHeads(s.tl, sets.k);
  InductionScoreOptions io;
  io.span = opts.induction_span;
  io.n_sequences = opts.induction_sequences;
  io.seed = opts.random_seed;
  io.bos = c.bos_token_id;
  std::tie(io.token_low, io.token_high) = inductionTokenRange(model, &tok);
  sets.ind = inductionScores(model, io, subContext(ctx, 0.08, 0.12, "induction heads"));
  sets.ind.induction.id = "tsla.induction";
  sets.ind.induction.name = "Induction (prefix matching) score";
  sets.ind.induction.unit = "attention";
  sets.ind.induction.provenance = prov;
  sets.ind.induction.provenance.options["induction_tokens"] = {io.token_low, io.token_high};
  sets.induction = topHeads(sets.ind.induction, sets.k);
  std::set<HeadRef> chosen(sets.tr.begin(), sets.tr.end());
  chosen.insert(sets.tl.begin(), sets.tl.end());
  const std::vector<HeadRef> live = liveHeads(model);
  for (int d = 0; d < std::max(1, opts.random_draws); ++d)
    sets.random_draws.push_back(randomHeads(live, sets.k, chosen, drawSeed(opts.random_seed, d)));
  sets.random = sets.random_draws.front();
  return sets;
}

// Evaluates prompt sets with head sets ablated: zero and/or with the means of opts.mean.
struct Ablator {
  const Transformer& model;
  int batch = 16;
  std::vector<std::string> modes;  // "zero", "mean" (those opts.ablation asks for)
  at::Tensor meanZ;                // [layers, heads, d_head] the means of mean ablation

  std::vector<Intervention> ablate(const std::string& mode, const std::vector<HeadRef>& heads) const {
    return mode == "mean" ? meanHeads(heads, meanZ) : zeroHeads(heads);
  }
  IclEval evaluate(const std::vector<Prompt>& prompts, const PromptLabels& pl, std::vector<Intervention> ivs,
                   const AnalysisContext& sub) const {
    IclEvalOptions eo;
    eo.batch = batch;
    eo.label_sets = pl.sets;
    eo.interventions = std::move(ivs);
    return evaluateIcl(model, prompts, eo, sub);
  }
};

Ablator makeAblator(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                    const TslaOptions& opts, const AnalysisContext& ctx) {
  Ablator ab{model, opts.batch, {}, {}};
  if (opts.ablation != "mean") ab.modes.push_back("zero");
  if (opts.ablation != "zero") ab.modes.push_back("mean");
  if (opts.ablation != "zero")
    ab.meanZ =
        resolveMeanZ(model, &tok, opts.mean, tokenSeqs(task.icl), subContext(ctx, 0.12, 0.16, "mean z"));
  return ab;
}

// One row of an ablation-style table: [condition,] heads, mode, n_heads, accuracy, tr_ratio, the deltas to
// the baseline, then the interval columns (kIntervalColumns).
std::vector<nlohmann::json> ablationRow(const std::vector<nlohmann::json>& lead, const std::string& name,
                                        const std::string& mode, int nHeads, const RowStats& r,
                                        const RowStats& base) {
  std::vector<nlohmann::json> row = lead;
  for (nlohmann::json v :
       {nlohmann::json(name), nlohmann::json(mode), nlohmann::json(nHeads), doubleToJson(r.accuracy),
        doubleToJson(r.tr_ratio), doubleToJson(r.accuracy - base.accuracy),
        doubleToJson(r.tr_ratio - base.tr_ratio)})
    row.push_back(v);
  for (const nlohmann::json& v : intervalCells(r))
    row.push_back(v);
  return row;
}

// Baseline and every set × mode on one prompt set, as rows of `table` (first cell `condition` when given),
// each also under summary[mode][set]; the random set's row is the mean over its draws. Returns the baseline.
// Progress runs from `from` to `to` of ctx.
IclEval ablationRows(Table& table, const std::string& condition, const std::vector<Prompt>& prompts,
                     const PromptLabels& pl, nlohmann::json& summary, double from, double to,
                     const Ablator& ab, const HeadSets& sets, const AnalysisContext& ctx) {
  const auto named = sets.named();
  const double steps =
      1.0 + static_cast<double>(ab.modes.size() * (named.size() - 1 + sets.random_draws.size()));
  int done = 0;
  auto sub = [&](const std::string& what) {
    const AnalysisContext s =
        subContext(ctx, from + (to - from) * done / steps, from + (to - from) * (done + 1) / steps, what);
    ++done;
    return s;
  };
  std::vector<nlohmann::json> lead;
  if (!condition.empty()) lead.push_back(condition);
  const IclEval base = ab.evaluate(prompts, pl, {}, sub(condition + " baseline"));
  const RowStats baseStats = statsOf(base);
  table.rows.push_back(ablationRow(lead, "baseline", "none", 0, baseStats, baseStats));
  summary["baseline"] = evalJson(baseStats);
  for (const std::string& mode : ab.modes)
    for (const auto& [name, heads] : named) {
      if (heads->empty()) continue;  // a model too small for a disjoint random set
      const std::vector<std::vector<HeadRef>> draws = sets.drawsOf(name, *heads);
      std::vector<IclEval> evals;
      for (const std::vector<HeadRef>& d : draws)
        evals.push_back(
            ab.evaluate(prompts, pl, ab.ablate(mode, d), sub("ablate " + name + " (" + mode + ")")));
      const RowStats r = statsOf(evals);
      table.rows.push_back(ablationRow(lead, name, mode, static_cast<int>(heads->size()), r, baseStats));
      summary[mode][name] = evalJson(r);
    }
  return base;
}

// Curves "tsla.ablation_curve.accuracy" / ".tr_ratio": the top k heads of each ordering ablated on the
// held-out prompts; k = 0 is the baseline. The random ordering is opts.random_draws seeded permutations of
// the live heads (randomLiveHeadOrder; each nested like the others): its series is their mean, its
// interval the t interval of the mean; the other series have Wilson intervals.
std::vector<Curve> ablationCurveStage(const Transformer& model, const IclTask& evalTask, const HeadScores& s,
                                      const HeadSets& sets, const Ablator& ab, const IclEval& base,
                                      const TslaOptions& opts, const Provenance& prov,
                                      const AnalysisContext& ctx) {
  const int LH = model.config().n_layers * model.config().n_heads;
  std::vector<int> ks = opts.curve_ks.empty() ? defaultCurveKs(LH) : opts.curve_ks;
  for (int& kk : ks)
    kk = std::min(kk, LH);
  std::vector<std::vector<HeadRef>> randomOrders;
  for (int d = 0; d < std::max(1, opts.random_draws); ++d)
    randomOrders.push_back(randomLiveHeadOrder(model, drawSeed(opts.random_seed, d)));
  const std::vector<std::pair<std::string, std::vector<std::vector<HeadRef>>>> orders = {
      {"tr", {topHeads(s.tr, LH)}},
      {"tl", {topHeads(s.tl, LH)}},
      {"induction", {topHeads(sets.ind.induction, LH)}},
      {"random", randomOrders}};
  Curve acc{"tsla.ablation_curve.accuracy",
            "Held-out accuracy with the top k heads ablated",
            "k heads",
            "accuracy",
            {},
            {},
            prov};
  Curve ratio{"tsla.ablation_curve.tr_ratio",
              "Held-out TR ratio with the top k heads ablated",
              "k heads",
              "TR ratio",
              {},
              {},
              prov};
  acc.x.push_back(0);
  for (int kk : ks)
    acc.x.push_back(kk);
  ratio.x = acc.x;
  const RowStats b = statsOf(base);
  const double steps = static_cast<double>(ab.modes.size() * (3 + randomOrders.size()) * ks.size());
  int done = 0;
  for (const std::string& mode : ab.modes)
    for (const auto& [name, draws] : orders) {
      const std::string series = ab.modes.size() > 1 ? name + " (" + mode + ")" : name;
      std::vector<double> ya = {b.accuracy}, yr = {b.tr_ratio};
      SeriesInterval ia{series, {b.accuracy_lo}, {b.accuracy_hi}},
          ir{series, {b.tr_ratio_lo}, {b.tr_ratio_hi}};
      for (int kk : ks) {
        std::vector<IclEval> evals;
        for (const std::vector<HeadRef>& order : draws) {
          const std::vector<HeadRef> heads(order.begin(), order.begin() + kk);
          evals.push_back(
              ab.evaluate(evalTask.icl, s.evalLabels, ab.ablate(mode, heads),
                          subContext(ctx, 0.3 + 0.25 * done / steps, 0.3 + 0.25 * (done + 1) / steps,
                                     "curve " + name + " k=" + std::to_string(kk))));
          ++done;
        }
        const RowStats r = statsOf(evals);
        ya.push_back(r.accuracy), yr.push_back(r.tr_ratio);
        ia.lo.push_back(r.accuracy_lo), ia.hi.push_back(r.accuracy_hi);
        ir.lo.push_back(r.tr_ratio_lo), ir.hi.push_back(r.tr_ratio_hi);
      }
      acc.series.push_back({series, ya});
      ratio.series.push_back({series, yr});
      acc.intervals.push_back(ia);
      ratio.intervals.push_back(ir);
    }
  return {acc, ratio};
}

// Table "tsla.perturbation" (classification): the same ablations on held-out prompts with shuffled
// demonstration inputs and with number labels.
struct PerturbationStage {
  Table table;
  nlohmann::json summary = nlohmann::json::object();
  LabelledPrompts shuffled, numbers;
};

PerturbationStage perturbationStage(const Tokenizer& tok, const IclTask& task, const IclTask& evalTask,
                                    const HeadScores& s, const HeadSets& sets, const Ablator& ab,
                                    const TslaOptions& opts, const Provenance& prov,
                                    const AnalysisContext& ctx) {
  PerturbationStage st;
  st.table = {"tsla.perturbation", "Ablations under input perturbations (held-out prompts)", {}, {}, prov};
  st.table.columns = {"condition", "heads",    "mode",           "n_heads",
                      "accuracy",  "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  st.table.columns.insert(st.table.columns.end(), kIntervalColumns.begin(), kIntervalColumns.end());
  if (!opts.perturbation || !task.classification()) return st;
  st.shuffled = shuffledInputPrompts(tok, evalTask, s.evalLabels, opts.random_seed);
  std::string numbersSkipped;
  st.numbers = numberLabelPrompts(tok, evalTask, &numbersSkipped);
  if (!numbersSkipped.empty()) st.summary["number_labels"] = {{"skipped", numbersSkipped}};
  ablationRows(st.table, "shuffled_inputs", st.shuffled.prompts, st.shuffled.labels,
               st.summary["shuffled_inputs"], 0.55, 0.65, ab, sets, ctx);
  if (!st.numbers.prompts.empty())
    ablationRows(st.table, "number_labels", st.numbers.prompts, st.numbers.labels,
                 st.summary["number_labels"], 0.65, 0.75, ab, sets, ctx);
  return st;
}

// Table "tsla.steering": held-out zero-shot prompts steered with each set's summed mean output (tensors
// "steering_<set>"), added at N of the residual entering layer steerLayer. The random row is the mean over
// the random draws, each steered with its own set's vector (tensor "steering_random_draws" [draws,
// d_model]; "steering_random" is the first draw's): accuracy and TR ratio with their sd and the 95 % t
// interval over the draws, the norm the mean of the draws' norms. The other rows: one vector, Wilson
// intervals over the prompts. Columns as the ablation table's (kIntervalColumns).
struct SteeringStage {
  Table table;
  nlohmann::json summary;
};

SteeringStage steeringStage(const Transformer& model, const IclTask& evalTask, const HeadScores& s,
                            const HeadSets& sets, const Ablator& ab, const at::Tensor& meanA, int steerLayer,
                            const TslaOptions& opts, const Provenance& prov, AnalysisOutput& out,
                            const AnalysisContext& ctx) {
  SteeringStage st;
  Table& steering = st.table;
  steering = {"tsla.steering",
              cat("Held-out zero-shot accuracy and TR ratio with steering vectors (random: mean over ",
                  sets.random_draws.size(), " draws)"),
              {},
              {},
              prov};
  steering.columns = {"vector", "layer", "norm", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  steering.columns.insert(steering.columns.end(), kIntervalColumns.begin(), kIntervalColumns.end());
  const IclEval zs =
      ab.evaluate(evalTask.zero_shot, s.evalLabels, {}, subContext(ctx, 0.75, 0.77, "zero-shot"));
  const RowStats none = statsOf(zs);
  steering.rows.push_back(
      {"none", steerLayer, 0.0, doubleToJson(zs.accuracy), doubleToJson(zs.tr_ratio), 0.0, 0.0});
  for (const nlohmann::json& v : intervalCells(none))
    steering.rows.back().push_back(v);
  st.summary = {{"none", evalJson(none)}};
  std::vector<std::pair<std::string, const std::vector<HeadRef>*>> steered;
  for (const auto& [name, heads] : sets.named())
    if (name != "induction" && !heads->empty()) steered.emplace_back(name, heads);
  double steps = 0;
  for (const auto& [name, heads] : steered)
    steps += static_cast<double>(sets.drawsOf(name, *heads).size());
  int done = 0;
  for (const auto& [name, heads] : steered) {
    std::vector<IclEval> evals;
    std::vector<at::Tensor> vectors;  // [d_model] per draw
    double norm = 0;
    for (const std::vector<HeadRef>& d : sets.drawsOf(name, *heads)) {
      const at::Tensor v = headSetVector(meanA, d);  // [d_model]
      vectors.push_back(v);
      norm += v.norm().item<double>();
      evals.push_back(ab.evaluate(
          evalTask.zero_shot, s.evalLabels,
          {addToResidual(residPre(steerLayer), v.to(model.device(), model.dtype()), {-1}, opts.steer_scale)},
          subContext(ctx, 0.77 + 0.06 * done / steps, 0.77 + 0.06 * (done + 1) / steps, "steer " + name)));
      ++done;
    }
    out.addTensor("steering_" + name, vectors.front());
    if (name == "random") out.addTensor("steering_random_draws", at::stack(vectors));  // [draws, d_model]
    const RowStats r = statsOf(evals);
    steering.rows.push_back({name, steerLayer, norm / static_cast<double>(vectors.size()),
                             doubleToJson(r.accuracy), doubleToJson(r.tr_ratio),
                             doubleToJson(r.accuracy - zs.accuracy), doubleToJson(r.tr_ratio - zs.tr_ratio)});
    for (const nlohmann::json& v : intervalCells(r))
      steering.rows.back().push_back(v);
    st.summary[name] = evalJson(r);
  }
  return st;
}

// Where the heads attend from N (analysed prompts): grids "tsla.attention_labels" / "_query" and table
// "tsla.attention" (the shares averaged over each head set). A set's share per prompt is the mean over its
// heads; the tr, tl and induction rows are its mean over the prompts with the percentile bootstrap interval
// over the prompts (opts.random_seed); the random row is the mean over the random draws of each draw's
// share, with its sd and the 95 % t interval over the draws (as the ablation table's random row).
struct AttentionStage {
  HeadGrid labels, query;
  Table table;
};

// The attention table's shares, in column order.
const std::vector<std::string> kShareColumns = {"demo_labels", "query", "demo_inputs", "other"};

// A head set's shares per prompt (kShareColumns order): [4][prompts], each the mean over the set's heads.
std::vector<std::vector<double>> setSharesPerPrompt(const AttentionShares& shares,
                                                    const std::vector<HeadRef>& heads) {
  const int64_t n = shares.labels_per_prompt.size(0);
  at::Tensor sl = at::zeros({n}, at::kDouble), sq = at::zeros_like(sl), si = at::zeros_like(sl);  // [prompts]
  for (const HeadRef& h : heads) {
    sl += shares.labels_per_prompt.select(1, h.layer).select(1, h.head);
    sq += shares.query_per_prompt.select(1, h.layer).select(1, h.head);
    si += shares.inputs_per_prompt.select(1, h.layer).select(1, h.head);
  }
  const double m = static_cast<double>(heads.size());
  std::vector<std::vector<double>> out;
  for (const at::Tensor& v : {sl / m, sq / m, si / m, 1.0 - (sl + sq + si) / m}) {
    const at::Tensor c = v.contiguous();  // [prompts]
    out.emplace_back(c.data_ptr<double>(), c.data_ptr<double>() + n);
  }
  return out;
}

AttentionStage attentionStage(const Transformer& model, const IclTask& task, const HeadSets& sets,
                              const TslaOptions& opts, const Provenance& prov, const AnalysisContext& ctx) {
  const AttentionShares shares =
      attentionShares(model, task.icl, subContext(ctx, 0.83, 0.87, "attention"), std::min(opts.batch, 4));
  AttentionStage st;
  st.labels = {"tsla.attention_labels", "Attention at N on the demonstrations' labels", "attention",
               shares.labels, prov};
  st.query = {"tsla.attention_query", "Attention at N on the query's input", "attention", shares.query, prov};
  st.labels.se = shares.labels_se;
  st.query.se = shares.query_se;
  st.table = {"tsla.attention",
              cat("Where each head set attends from the last position (random: mean over ",
                  sets.random_draws.size(), " draws)"),
              {},
              {},
              prov};
  st.table.columns = {"heads", "n_heads"};
  st.table.columns.insert(st.table.columns.end(), kShareColumns.begin(), kShareColumns.end());
  for (const std::string& c : kShareColumns)
    st.table.columns.insert(st.table.columns.end(), {c + "_lo", c + "_hi"});
  st.table.columns.push_back("draws");
  for (const std::string& c : kShareColumns)
    st.table.columns.push_back(c + "_sd");
  for (const auto& [name, heads] : sets.named()) {
    if (heads->empty()) continue;
    const std::vector<std::vector<HeadRef>> draws = sets.drawsOf(name, *heads);
    std::vector<Spread> cols(kShareColumns.size());  // per share: mean, sd and interval
    if (draws.size() == 1) {
      const std::vector<std::vector<double>> perPrompt = setSharesPerPrompt(shares, draws.front());
      for (size_t c = 0; c < cols.size(); ++c) {
        cols[c] = spreadOf(perPrompt[c]);
        std::tie(cols[c].lo, cols[c].hi) = bootstrapMeanInterval(perPrompt[c], opts.random_seed);
        cols[c].sd = std::nan("");  // one set: no spread over draws
      }
    } else {
      std::vector<std::vector<double>> perDraw(kShareColumns.size());  // [share][draws]
      for (const std::vector<HeadRef>& d : draws) {
        const std::vector<std::vector<double>> perPrompt = setSharesPerPrompt(shares, d);
        for (size_t c = 0; c < cols.size(); ++c)
          perDraw[c].push_back(spreadOf(perPrompt[c]).mean);
      }
      for (size_t c = 0; c < cols.size(); ++c)
        cols[c] = rateSpread(perDraw[c]);
    }
    std::vector<nlohmann::json> row = {name, static_cast<int>(heads->size())};
    for (const Spread& c : cols)
      row.push_back(doubleToJson(c.mean));
    for (const Spread& c : cols)
      row.insert(row.end(), {cellOf(c.lo), cellOf(c.hi)});
    row.push_back(static_cast<int>(draws.size()));
    for (const Spread& c : cols)
      row.push_back(cellOf(c.sd));
    st.table.rows.push_back(std::move(row));
  }
  return st;
}

// Curves "tsla.alignment" and "tsla.logit_diff": per-layer geometry of the last-position residual, with and
// without the TR / TL heads (zero-ablated).
std::vector<Curve> subspaceCurveStage(const Transformer& model, const IclTask& task, const HeadScores& s,
                                      const HeadSets& sets, const TslaOptions& opts, const Provenance& prov,
                                      const AnalysisContext& ctx) {
  Curve align{"tsla.alignment", "Label-subspace alignment ‖P h‖/‖h‖", "layer", "alignment", {}, {}, prov};
  Curve diff{
      "tsla.logit_diff", "Logit difference ⟨h, W_U[y*] − mean W_U[y']⟩", "layer", "logit diff", {}, {}, prov};
  for (int l = 0; l < model.config().n_layers; ++l)
    align.x.push_back(l), diff.x.push_back(l);
  const std::vector<std::pair<std::string, const std::vector<HeadRef>*>> variants = {
      {"baseline", nullptr}, {"without_tr", &sets.tr}, {"without_tl", &sets.tl}};
  int done = 0;
  for (const auto& [name, heads] : variants) {
    const at::Tensor h = captureAtLast(
        model, tokenSeqs(task.icl), residPost, heads ? zeroHeads(*heads) : std::vector<Intervention>{},
        subContext(ctx, 0.87 + 0.04 * done, 0.91 + 0.04 * done, "residuals " + name),
        opts.batch);  // [n, L, d]
    ++done;
    const SubspaceCurves sc = subspaceCurves(h, model, s.labels, opts.final_norm);
    align.series.push_back({name, sc.alignment});
    diff.series.push_back({name, sc.logit_diff});
    align.intervals.push_back(bootstrapSeriesInterval(name, sc.alignment_per_prompt, opts.random_seed));
    diff.intervals.push_back(bootstrapSeriesInterval(name, sc.logit_diff_per_prompt, opts.random_seed));
  }
  return {align, diff};
}

// Table "tsla.overlap": agreement of the TR, TL and induction rankings.
Table overlapTable(const HeadScores& s, const HeadSets& sets, const Provenance& prov) {
  Table overlap{"tsla.overlap", "Agreement of TR, TL and induction head rankings", {}, {}, prov};
  overlap.columns = {"a", "b", "k", "jaccard", "kendall_tau", "spearman_rho"};
  const std::vector<std::pair<const HeadGrid*, const HeadGrid*>> pairs = {
      {&s.tr, &s.tl}, {&s.tr, &sets.ind.induction}, {&s.tl, &sets.ind.induction}};
  for (const auto& [x, y] : pairs)
    overlap.rows.push_back({x->id, y->id, sets.k, doubleToJson(jaccardAtK(*x, *y, sets.k)),
                            doubleToJson(kendallTauB(*x, *y)), doubleToJson(spearmanRho(*x, *y))});
  return overlap;
}

// The exact prompts, with the label set each was scored against.
void recordTslaPrompts(AnalysisOutput& out, const IclTask& task, const IclTask& evalTask, const HeadScores& s,
                       const PerturbationStage& pert) {
  recordPrompts(out, "icl", task.icl, s.labels.sets);
  recordPrompts(out, "eval", evalTask.icl, s.evalLabels.sets);
  recordPrompts(out, "zero_shot", evalTask.zero_shot, s.evalLabels.sets);
  if (!pert.shuffled.prompts.empty())
    recordPrompts(out, "shuffled_inputs", pert.shuffled.prompts, pert.shuffled.labels.sets);
  if (!pert.numbers.prompts.empty())
    recordPrompts(out, "number_labels", pert.numbers.prompts, pert.numbers.labels.sets);
}

}  // namespace

AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const TslaOptions& opts, const AnalysisContext& ctx) {
  const int n = opts.eval_prompts > 0 ? opts.eval_prompts : static_cast<int>(task.icl.size());
  const IclTask evalTask = heldOutTask(tok, task, n);
  return runTsla(model, tok, task, evalTask, opts, ctx);
}

AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const IclTask& evalTask, const TslaOptions& opts, const AnalysisContext& ctx) {
  const int steerLayer = checkTslaInputs(model, task, evalTask, opts);
  at::NoGradGuard noGrad;
  const Provenance prov = tslaProvenance(model, tok, task, evalTask, opts, ctx);
  AnalysisOutput out;
  out.run.id = ctx.runId("tsla");
  out.run.method = "tsla";
  out.run.options = prov.options;

  // Scores and head sets; the ablations, curves and perturbations on the held-out prompts.
  const HeadScores scores = trTlStage(model, task, evalTask, opts, prov, ctx);
  const HeadSets sets = headSetStage(model, tok, scores, opts, prov, ctx);
  const Ablator ab = makeAblator(model, tok, task, opts, ctx);
  Table ablation{"tsla.ablation", "Held-out accuracy and TR ratio with head sets ablated", {}, {}, prov};
  ablation.columns = {"heads", "mode", "n_heads", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  ablation.columns.insert(ablation.columns.end(), kIntervalColumns.begin(), kIntervalColumns.end());
  nlohmann::json ablSummary = nlohmann::json::object();
  const IclEval base =
      ablationRows(ablation, "", evalTask.icl, scores.evalLabels, ablSummary, 0.16, 0.3, ab, sets, ctx);
  std::vector<Curve> curves;
  if (opts.curves) curves = ablationCurveStage(model, evalTask, scores, sets, ab, base, opts, prov, ctx);
  const PerturbationStage pert = perturbationStage(tok, task, evalTask, scores, sets, ab, opts, prov, ctx);

  // Steering, attention, per-layer geometry and the rankings' overlap.
  const at::Tensor meanA = scores.a.mean(0);  // [layers, heads, d_model]
  const SteeringStage steer =
      steeringStage(model, evalTask, scores, sets, ab, meanA, steerLayer, opts, prov, out, ctx);
  const AttentionStage att = attentionStage(model, task, sets, opts, prov, ctx);
  for (Curve& c : subspaceCurveStage(model, task, scores, sets, opts, prov, ctx))
    curves.push_back(std::move(c));
  const Table overlap = overlapTable(scores, sets, prov);

  recordTslaPrompts(out, task, evalTask, scores, pert);
  out.addTensor("head_outputs_mean", meanA);
  out.run.grids = {scores.tr, scores.tl, sets.ind.induction, att.labels, att.query};
  out.run.curves = curves;
  out.run.tables = {ablation, steer.table, overlap, att.table};
  if (!pert.table.rows.empty()) out.run.tables.push_back(pert.table);
  out.run.summary = {
      {"n_prompts", task.icl.size()},
      {"n_eval_prompts", evalTask.icl.size()},
      {"n_heads_selected", sets.k},
      {"baseline", evalJson(base)},
      {"ablation", ablSummary},
      {"steering", steer.summary},
      {"steer_layer", steerLayer},
      {"top_tr", sets.tr},
      {"top_tl", sets.tl},
      {"top_induction", sets.induction},
      {"random", sets.random},
      {"random_draws", sets.random_draws},
      {"random_rows", cat("mean over ", sets.random_draws.size(),
                          " random draws (random_draws) in the ablation, curve, perturbation, steering and "
                          "attention results: their sd and the 95 % t interval over the draws; `random` is "
                          "the first draw")},
      {"random_pool", "live heads (non-zero W_O) outside the TR and TL sets"},
      {"induction_copy_accuracy", sets.ind.copy_accuracy}};
  if (!pert.summary.empty()) out.run.summary["perturbation"] = pert.summary;
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
