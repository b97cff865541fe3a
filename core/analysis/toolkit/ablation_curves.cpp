// Mean-ablation curves, the induction ablation table and cross-language concept patching. See
// ablation_curves.h.
#include "analysis/toolkit/ablation_curves.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <tuple>

#include "analysis/toolkit/head_toolkit.h"
#include "results/intervals.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/toy/eval_prompts.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

// One point of the curves: the prompts' top-1, top-5 and top-10 hits and answer probabilities.
struct PointScores {
  std::vector<double> top1, top5, top10, prob;  // [prompts] 0/1 hits, p(answer)
};

PointScores pointScores(const Transformer& model, const NextTokenTask& task,
                        const std::vector<Intervention>& interventions, int batch,
                        const AnalysisContext& ctx) {
  std::vector<std::vector<int64_t>> answers;
  for (int64_t a : task.answers)
    answers.push_back({a});
  AnswerScoring scoring;
  scoring.batch = batch;
  scoring.interventions = interventions;
  PointScores p;
  for (const AnswerScore& s : scoreAnswers(model, task.prompts, answers, scoring, ctx)) {
    p.top1.push_back(s.correct ? 1.0 : 0.0);
    p.top5.push_back(s.first_rank < 5 ? 1.0 : 0.0);
    p.top10.push_back(s.first_rank < 10 ? 1.0 : 0.0);
    p.prob.push_back(std::exp(s.first_logprob));
  }
  return p;
}

double meanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? std::nan("") : s / static_cast<double>(v.size());
}

// The four metrics' value and 95 % interval at one point: of one draw (Wilson for the hit rates, a
// bootstrap for the probability), or the mean over the draws with the t interval of the mean.
struct PointStats {
  std::array<double, 4> y{}, lo{}, hi{};
};

PointStats pointStats(const std::vector<PointScores>& draws, uint64_t seed) {
  PointStats st;
  for (size_t m = 0; m < 4; ++m) {
    auto metric = [m](const PointScores& p) -> const std::vector<double>& {
      return m == 0 ? p.top1 : m == 1 ? p.top5 : m == 2 ? p.top10 : p.prob;
    };
    if (draws.size() == 1) {
      const std::vector<double>& v = metric(draws.front());
      const int n = static_cast<int>(v.size());
      st.y[m] = meanOf(v);
      std::tie(st.lo[m], st.hi[m]) = m < 3 ? wilsonOfRate(st.y[m], n) : bootstrapMeanInterval(v, seed);
      continue;
    }
    std::vector<double> means;
    for (const PointScores& d : draws)
      means.push_back(meanOf(metric(d)));
    const Spread s = spreadOf(means);  // rates and probabilities: the interval stays in [0, 1]
    st.y[m] = s.mean, st.lo[m] = std::max(0.0, s.lo), st.hi[m] = std::min(1.0, s.hi);
  }
  return st;
}

// The four curves' ids, names and y labels.
const std::array<std::array<const char*, 3>, 4> kAblationMetrics = {{
    {"dual_route.ablation.", "Mean ablation of the top-k heads (top-1 accuracy): ", "next-token accuracy"},
    {"dual_route.ablation_top5.", "Mean ablation of the top-k heads (top-5 accuracy): ", "top-5 accuracy"},
    {"dual_route.ablation_top10.", "Mean ablation of the top-k heads (top-10 accuracy): ", "top-10 accuracy"},
    {"dual_route.ablation_prob.", "Mean ablation of the top-k heads (answer probability): ", "p(answer)"},
}};

// The k values of the curves (capped at L·H, duplicates dropped) after checking every ordering and the mean.
std::vector<int> checkedKs(const Transformer& model, const NextTokenTask& task,
                           const std::vector<HeadOrdering>& orderings, const AblationCurveOptions& o) {
  const ModelConfig& mc = model.config();
  const int LH = mc.n_layers * mc.n_heads;
  std::vector<int> ks;
  for (int k : o.ks) {
    if (k < 0) fail("ablation curve: k = ", k, ", expected >= 0");
    const int kk = std::min(k, LH);
    if (std::find(ks.begin(), ks.end(), kk) == ks.end()) ks.push_back(kk);
  }
  const int kmax = ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end());
  for (const HeadOrdering& ord : orderings) {
    if (ord.draws.empty()) fail("ablation curve: ordering ", ord.id, " has no heads");
    for (const std::vector<HeadRef>& d : ord.draws)
      if (static_cast<int>(d.size()) < kmax)
        fail("ablation curve: ordering ", ord.id, " lists ", d.size(), " heads, k goes to ", kmax);
  }
  const at::Tensor& meanZ = o.mean_z;  // [layers, heads, d_head]
  if (!meanZ.defined() || meanZ.dim() != 3 || meanZ.size(0) != mc.n_layers || meanZ.size(1) != mc.n_heads ||
      meanZ.size(2) != mc.d_head)
    fail("ablation curve ", task.id, ": mean_z must be [", mc.n_layers, ", ", mc.n_heads, ", ", mc.d_head,
         "], got ", meanZ.defined() ? meanZ.sizes() : at::IntArrayRef{});
  return ks;
}

}  // namespace

double nextTokenAccuracy(const Transformer& model, const NextTokenTask& task,
                         const std::vector<Intervention>& interventions, int batch,
                         const AnalysisContext& ctx) {
  if (task.prompts.empty() || task.prompts.size() != task.answers.size())
    fail("next-token accuracy of ", task.id, ": ", task.prompts.size(), " prompts and ", task.answers.size(),
         " answers (expected as many, >= 1)");
  return meanOf(pointScores(model, task, interventions, batch, ctx).top1);
}

std::vector<Curve> ablationCurves(const Transformer& model, const NextTokenTask& task,
                                  const std::vector<HeadOrdering>& orderings, const AblationCurveOptions& o,
                                  const AnalysisContext& ctx) {
  const std::vector<int> ks = checkedKs(model, task, orderings, o);
  const int kmax = ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end());
  const PointScores base = pointScores(model, task, {}, o.batch, ctx);
  std::vector<Curve> curves(4);
  for (size_t m = 0; m < 4; ++m) {
    curves[m].id = kAblationMetrics[m][0] + task.id;
    curves[m].name = kAblationMetrics[m][1] + task.description;
    curves[m].x_label = "k (heads mean-ablated)";
    curves[m].y_label = kAblationMetrics[m][2];
    for (int k : ks)
      curves[m].x.push_back(k);
  }
  nlohmann::json orders = nlohmann::json::object(), sources = nlohmann::json::object();
  size_t done = 0;
  for (const HeadOrdering& ord : orderings) {
    std::array<std::vector<double>, 4> y;
    std::array<SeriesInterval, 4> iv;
    for (int k : ks) {
      std::vector<PointScores> draws;
      for (const std::vector<HeadRef>& d : ord.draws)
        draws.push_back(
            k == 0 ? base
                   : pointScores(model, task,
                                 ablateHeads(std::vector<HeadRef>(d.begin(), d.begin() + k), o.mean_z),
                                 o.batch, ctx));
      const PointStats st = pointStats(draws, o.seed);
      for (size_t m = 0; m < 4; ++m) {
        y[m].push_back(st.y[m]);
        iv[m].lo.push_back(st.lo[m]);
        iv[m].hi.push_back(st.hi[m]);
      }
    }
    for (size_t m = 0; m < 4; ++m) {
      curves[m].series.emplace_back(ord.id, y[m]);
      iv[m].series = ord.id;
      curves[m].intervals.push_back(iv[m]);
    }
    orders[ord.id] = std::vector<HeadRef>(ord.draws.front().begin(), ord.draws.front().begin() + kmax);
    sources[ord.id] = {{"source", ord.source}, {"draws", ord.draws.size()}};
    ctx.report(double(++done) / orderings.size(), "ablation " + task.id + ": ordering " + ord.id);
  }
  for (Curve& c : curves) {
    c.provenance.method = "induction";
    c.provenance.task = task.id;
    c.provenance.n_prompts = static_cast<int>(task.prompts.size());
    c.provenance.options = {{"ks", ks},
                            {"ablation", "mean"},
                            {"mean_source", o.mean_source},
                            {"positions", "all"},
                            {"batch", o.batch},
                            {"orderings", orders},
                            {"ordering_sources", sources},
                            {"intervals",
                             "95 %: Wilson (hit rates), bootstrap over prompts (probability), t interval of "
                             "the mean over draws (random)"}};
  }
  return curves;
}

Table inductionAblationTable(const Transformer& model, const NextTokenTask& induction,
                             const HeadGrid& prefixMatching, int k, uint64_t seed, int draws,
                             const AnalysisContext& ctx) {
  const int L = model.config().n_layers, H = model.config().n_heads;
  if (k < 1 || 2 * k >= L * H)
    fail("induction ablation: k = ", k, ", expected 1 <= k and 2k < ", L * H, " heads");
  const std::vector<HeadRef> top = topHeads(prefixMatching, k);
  const std::vector<HeadRef> top2k = topHeads(prefixMatching, 2 * k);
  const std::set<HeadRef> excluded(top2k.begin(), top2k.end());
  const std::vector<HeadRef> live = liveHeads(model);
  std::vector<double> accRandom;
  std::string randomText;
  for (int d = 0; d < std::max(1, draws); ++d) {
    const std::vector<HeadRef> random = randomHeads(live, k, excluded, drawSeed(seed, d));
    randomText += (d ? " | " : "") + headsText(random);
    accRandom.push_back(nextTokenAccuracy(model, induction, ablateHeads(random), 32, ctx));
  }
  const int n = static_cast<int>(induction.prompts.size());
  const double base = nextTokenAccuracy(model, induction, {}, 32, ctx);
  const double accTop = nextTokenAccuracy(model, induction, ablateHeads(top), 32, ctx);
  Spread r = spreadOf(accRandom);
  if (r.n > 1) r.lo = std::max(0.0, r.lo), r.hi = std::min(1.0, r.hi);  // a mean of rates stays in [0, 1]
  Table t;
  t.id = "induction.ablation";
  t.name = "Induction accuracy with heads zero-ablated";
  t.columns = {"condition", "heads", "induction_acc", "delta_points", "acc_lo", "acc_hi", "draws", "acc_sd"};
  auto wilsonRow = [&](const std::string& cond, const std::string& heads, double acc) {
    const auto [lo, hi] = wilsonOfRate(acc, n);
    return std::vector<nlohmann::json>{cond, heads, acc, 100.0 * (acc - base), lo, hi, 1, nullptr};
  };
  t.rows.push_back(wilsonRow("baseline", "", base));
  t.rows.push_back(wilsonRow(cat("top", k, "_prefix_matching"), headsText(top), accTop));
  t.rows.push_back(r.n > 1
                       ? std::vector<nlohmann::json>{cat("random", k, "_outside_top", 2 * k), randomText,
                                                     r.mean, 100.0 * (r.mean - base), r.lo, r.hi, r.n, r.sd}
                       : wilsonRow(cat("random", k, "_outside_top", 2 * k), randomText, r.mean));
  t.provenance.method = "induction";
  t.provenance.task = induction.id;
  t.provenance.seed = seed;
  t.provenance.n_prompts = n;
  t.provenance.options = {{"k", k},
                          {"ablation", "zero"},
                          {"positions", "all"},
                          {"ranking", prefixMatching.id},
                          {"random_excludes_top", 2 * k},
                          {"random_pool", "live heads (non-zero W_O)"},
                          {"random_draws", std::max(1, draws)},
                          {"task", induction.description}};
  return t;
}

namespace {

using NamedHeadSets = std::vector<std::pair<std::string, std::vector<HeadRef>>>;

// The head sets of concept patching: none, the top-k concept-copying and token-copying heads, and `draws`
// sets of k random live heads (one entry each, all named "random<k>").
NamedHeadSets conceptPatchingHeadSets(const Transformer& model, const HeadGrid& conceptCopying,
                                      const HeadGrid& tokenCopying, int k, uint64_t seed, int draws) {
  NamedHeadSets sets = {{"no_patch", {}},
                        {cat("top", k, "_concept_copying"), topHeads(conceptCopying, k)},
                        {cat("top", k, "_token_copying"), topHeads(tokenCopying, k)}};
  for (int d = 0; d < std::max(1, draws); ++d) {
    const std::vector<HeadRef> order = randomHeadOrder(liveHeads(model), drawSeed(seed, d));
    sets.push_back({cat("random", k),
                    std::vector<HeadRef>(order.begin(), order.begin() + std::min<size_t>(k, order.size()))});
  }
  return sets;
}

// Pair i of concept patching: the destination translates B → A (concept cd), the source A → B (concept cs,
// whose A word starts with another token than cd's).
struct PatchingPair {
  toy::EvalPrompt src;
  toy::EvalPrompt dst;
  int cs = -1;
  int cd = -1;
};

PatchingPair conceptPatchingPair(const toy::ToyWorld& w, uint64_t seed, int i, int shots) {
  PatchingPair p;
  p.dst = toy::functionPrompt(w, toy::evalSeed(seed, static_cast<uint64_t>(i)), "translate_b_a", shots);
  p.cd = w.conceptOf(toy::Lang::A, p.dst.answer);
  for (uint64_t j = 0; j < 1000 && p.cs < 0; ++j) {
    p.src =
        toy::functionPrompt(w, toy::evalSeed(toy::deriveSeed(seed, 0x737263ULL, static_cast<uint64_t>(i)), j),
                            "translate_a_b", shots);
    const int c2 = w.conceptOf(toy::Lang::B, p.src.answer);
    if (c2 != p.cd && w.word(toy::Lang::A, c2)[0] != w.word(toy::Lang::A, p.cd)[0]) p.cs = c2;
  }
  if (p.cd < 0 || p.cs < 0) fail("concept patching: no usable prompt pair ", i);
  return p;
}

// The pair's source (query at −1) and destination (answer = the kept A word) prompt records.
void recordPatchingPair(std::vector<PromptRecord>& prompts, const PatchingPair& p) {
  prompts.push_back({"concept_patching.source",
                     toIds(p.src.tokens),
                     static_cast<int>(p.src.tokens.size()) - 1,
                     toIds(p.src.answer),
                     {}});
  prompts.push_back({"concept_patching.destination",
                     toIds(p.dst.tokens),
                     static_cast<int>(p.dst.tokens.size()) - 1,
                     toIds(p.dst.answer),
                     {}});
}

// hook_z of every layer at the last position of a prompt: per layer [heads, d_head].
std::vector<at::Tensor> zAtLast(const Transformer& model, const std::vector<int64_t>& p) {
  const ModelConfig& c = model.config();
  RunRequest req;
  req.tokens = at::tensor(p, at::kLong).view({1, -1}).to(model.device());  // [1, pos]
  req.last_logits_only = true;
  for (int l = 0; l < c.n_layers; ++l)
    req.capture.insert(attnZ(l));
  const RunResult r = model.run(req);
  std::vector<at::Tensor> z;
  for (int l = 0; l < c.n_layers; ++l)
    z.push_back(r.cache.at(attnZ(l))[0][static_cast<int64_t>(p.size()) - 1]);  // [heads, d_head]
  return z;
}

// The source's z (per layer [heads, d_head]) of `heads` written over hook_z at −1.
std::vector<Intervention> sourceZPatch(const std::vector<HeadRef>& heads,
                                       const std::vector<at::Tensor>& zSrc) {
  std::vector<Intervention> ivs;
  for (const HeadRef& h : heads) {
    Intervention iv;
    iv.site = attnZ(h.layer);
    iv.heads = {h.head};
    iv.positions = {-1};
    iv.op = InterventionOp::Replace;
    iv.tensor = zSrc[static_cast<size_t>(h.layer)][h.head];  // [d_head]
    ivs.push_back(iv);
  }
  return ivs;
}

// The outcomes of a patched generation, in the table's column order.
enum PatchOutcome { kMeaningMoved = 0, kKept = 1, kLanguageMoved = 2, kOther = 3 };

// Greedy generation of the destination's answer word (as many tokens as the longer of the two A words)
// with `ivs` at −1 of every forward, and what it spelled.
PatchOutcome patchedGenerationOutcome(const Transformer& model, const toy::ToyWorld& w, const PatchingPair& p,
                                      const std::vector<Intervention>& ivs) {
  const std::vector<int64_t> dstIds = toIds(p.dst.tokens);
  const std::vector<int>& meaningWord = w.word(toy::Lang::A, p.cs);
  const std::vector<int>& keptWord = w.word(toy::Lang::A, p.cd);
  const int steps = static_cast<int>(std::max(meaningWord.size(), keptWord.size()));
  const std::vector<int64_t> newIds = generateWithInterventions(model, dstIds, steps, ivs);
  const std::vector<int> generated(newIds.begin(), newIds.end());
  auto spells = [&](const std::vector<int>& word) {
    return generated.size() >= word.size() && std::equal(word.begin(), word.end(), generated.begin());
  };
  if (spells(meaningWord)) return kMeaningMoved;
  if (spells(keptWord)) return kKept;
  if (!generated.empty() && w.languageOfToken(generated[0]) == toy::index(toy::Lang::B))
    return kLanguageMoved;
  return kOther;
}

// Table "dual_route.concept_patching": each head set's share of every outcome over the n pairs with its
// Wilson interval; sets of the same name (the random draws) pooled.
Table conceptPatchingShares(const NamedHeadSets& sets, const std::vector<std::array<int, 4>>& counts, int n,
                            int k, uint64_t seed, int shots) {
  Table t;
  t.id = "dual_route.concept_patching";
  t.name = "Cross-language concept patching (whole answer word)";
  t.columns = {"heads", "patched", "n", "meaning_moved", "kept", "language_moved", "other"};
  for (const char* o : {"meaning_moved", "kept", "language_moved", "other"})
    t.columns.insert(t.columns.end(), {std::string(o) + "_lo", std::string(o) + "_hi"});
  for (size_t s = 0; s < sets.size();) {
    std::array<int, 4> sum = {0, 0, 0, 0};
    std::string heads;
    int trials = 0;
    const size_t first = s;
    for (; s < sets.size() && sets[s].first == sets[first].first; ++s) {
      for (size_t o = 0; o < 4; ++o)
        sum[o] += counts[s][o];
      heads += (s > first ? " | " : "") + headsText(sets[s].second);
      trials += n;
    }
    std::vector<nlohmann::json> row = {sets[first].first, heads, trials};
    for (size_t o = 0; o < 4; ++o)
      row.push_back(double(sum[o]) / trials);
    for (size_t o = 0; o < 4; ++o) {
      const auto [lo, hi] = wilsonInterval(sum[o], trials);
      row.insert(row.end(), {lo, hi});
    }
    t.rows.push_back(row);
  }
  t.provenance.method = "induction";
  t.provenance.task = "toy translate_a_b (source) -> translate_b_a (destination)";
  t.provenance.seed = seed;
  t.provenance.n_prompts = n;
  t.provenance.options = {
      {"k", k},
      {"shots", shots},
      {"random", "k live heads (non-zero W_O) per draw; the draws' outcomes pooled"},
      {"intervals", "95 % Wilson over the row's n trials"},
      {"position", "the source's last token (-1, the arrow) written at -1 of every forward"},
      {"patch", "replace hook_z from the source run"},
      {"generation",
       "greedy through the KV cache, the patch in the prefill and in every step, as many tokens as the "
       "longer "
       "of the two A words"},
      {"outcomes",
       "meaning_moved: the source concept's A word generated exactly; kept: the destination's; "
       "language_moved: the first generated token is a language-B token; other: anything else"}};
  return t;
}

}  // namespace

Table conceptPatchingTable(const Transformer& model, const toy::ToyWorld& w, const HeadGrid& conceptCopying,
                           const HeadGrid& tokenCopying, int k, int n, uint64_t seed, int shots,
                           const AnalysisContext& ctx, std::vector<PromptRecord>* prompts, int draws) {
  const ModelConfig& c = model.config();
  if (k < 1 || k > c.n_layers * c.n_heads) fail("concept patching: k = ", k, " outside [1, heads]");
  if (n < 1) fail("concept patching: n = ", n, ", expected >= 1");
  at::NoGradGuard noGrad;
  const NamedHeadSets sets = conceptPatchingHeadSets(model, conceptCopying, tokenCopying, k, seed, draws);
  // counts[set][outcome]: meaning_moved, kept, language_moved, other
  std::vector<std::array<int, 4>> counts(sets.size(), {0, 0, 0, 0});
  for (int i = 0; i < n; ++i) {
    ctx.checkCancelled();
    const PatchingPair pair = conceptPatchingPair(w, seed, i, shots);
    const std::vector<at::Tensor> zSrc = zAtLast(model, toIds(pair.src.tokens));  // per layer [heads, d_head]
    if (prompts) recordPatchingPair(*prompts, pair);
    for (size_t s = 0; s < sets.size(); ++s)
      ++counts[s][patchedGenerationOutcome(model, w, pair, sourceZPatch(sets[s].second, zSrc))];
    ctx.report(double(i + 1) / n, cat("concept patching: pair ", i + 1, "/", n));
  }
  return conceptPatchingShares(sets, counts, n, k, seed, shots);
}

}  // namespace hs
