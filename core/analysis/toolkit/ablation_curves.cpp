// Mean-ablation curves, the induction ablation table and cross-language concept patching. See
// ablation_curves.h.
#include "analysis/toolkit/ablation_curves.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <array>
#include <set>

#include "analysis/toolkit/head_toolkit.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/toy/eval_prompts.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

double nextTokenAccuracy(const Transformer& model, const NextTokenTask& task,
                         const std::vector<Intervention>& interventions, int batch,
                         const AnalysisContext& ctx) {
  if (task.prompts.empty() || task.prompts.size() != task.answers.size())
    fail("next-token accuracy of ", task.id, ": ", task.prompts.size(), " prompts and ", task.answers.size(),
         " answers (expected as many, >= 1)");
  std::vector<std::vector<int64_t>> answers;
  for (int64_t a : task.answers)
    answers.push_back({a});
  AnswerScoring scoring;
  scoring.batch = batch;
  scoring.interventions = interventions;
  int64_t correct = 0;
  for (const AnswerScore& s : scoreAnswers(model, task.prompts, answers, scoring, ctx))
    correct += s.correct;
  return double(correct) / double(task.prompts.size());
}

Curve ablationCurve(const Transformer& model, const NextTokenTask& task,
                    const std::vector<std::pair<std::string, std::vector<HeadRef>>>& orderings,
                    const AblationCurveOptions& o, const AnalysisContext& ctx) {
  const int LH = model.config().n_layers * model.config().n_heads;
  std::vector<int> ks;
  for (int k : o.ks) {
    if (k < 0) fail("ablation curve: k = ", k, ", expected >= 0");
    const int kk = std::min(k, LH);
    if (std::find(ks.begin(), ks.end(), kk) == ks.end()) ks.push_back(kk);
  }
  const int kmax = ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end());
  for (const auto& [id, order] : orderings)
    if (static_cast<int>(order.size()) < kmax)
      fail("ablation curve: ordering ", id, " lists ", order.size(), " heads, k goes to ", kmax);

  const ModelConfig& mc = model.config();
  const at::Tensor& meanZ = o.mean_z;  // [layers, heads, d_head]
  if (!meanZ.defined() || meanZ.dim() != 3 || meanZ.size(0) != mc.n_layers || meanZ.size(1) != mc.n_heads ||
      meanZ.size(2) != mc.d_head)
    fail("ablation curve ", task.id, ": mean_z must be [", mc.n_layers, ", ", mc.n_heads, ", ", mc.d_head,
         "], got ", meanZ.defined() ? meanZ.sizes() : at::IntArrayRef{});
  const double base = nextTokenAccuracy(model, task, {}, o.batch, ctx);
  Curve c;
  c.id = "dual_route.ablation." + task.id;
  c.name = "Mean ablation of the top-k heads: " + task.description;
  c.x_label = "k (heads mean-ablated)";
  c.y_label = "next-token accuracy";
  for (int k : ks)
    c.x.push_back(k);
  nlohmann::json orders = nlohmann::json::object();
  size_t done = 0;
  for (const auto& [id, order] : orderings) {
    std::vector<double> y;
    for (int k : ks) {
      const std::vector<HeadRef> heads(order.begin(), order.begin() + k);
      y.push_back(k == 0 ? base : nextTokenAccuracy(model, task, ablateHeads(heads, meanZ), o.batch, ctx));
    }
    c.series.emplace_back(id, y);
    orders[id] = std::vector<HeadRef>(order.begin(), order.begin() + kmax);
    ctx.report(double(++done) / orderings.size(), "ablation " + task.id + ": ordering " + id);
  }
  c.provenance.method = "induction";
  c.provenance.task = task.id;
  c.provenance.n_prompts = static_cast<int>(task.prompts.size());
  c.provenance.options = {{"ks", ks},           {"ablation", "mean"}, {"mean_source", o.mean_source},
                          {"positions", "all"}, {"batch", o.batch},   {"orderings", orders}};
  return c;
}

Table inductionAblationTable(const Transformer& model, const NextTokenTask& induction,
                             const HeadGrid& prefixMatching, int k, uint64_t seed,
                             const AnalysisContext& ctx) {
  const int L = model.config().n_layers, H = model.config().n_heads;
  if (k < 1 || 2 * k >= L * H)
    fail("induction ablation: k = ", k, ", expected 1 <= k and 2k < ", L * H, " heads");
  const std::vector<HeadRef> top = topHeads(prefixMatching, k);
  const std::vector<HeadRef> top2k = topHeads(prefixMatching, 2 * k);
  const std::set<HeadRef> excluded(top2k.begin(), top2k.end());
  std::vector<HeadRef> random;
  for (const HeadRef& h : randomHeadOrder(L, H, seed))
    if (!excluded.count(h) && static_cast<int>(random.size()) < k) random.push_back(h);

  const double base = nextTokenAccuracy(model, induction, {}, 32, ctx);
  const double accTop = nextTokenAccuracy(model, induction, ablateHeads(top), 32, ctx);
  const double accRandom = nextTokenAccuracy(model, induction, ablateHeads(random), 32, ctx);
  Table t;
  t.id = "induction.ablation";
  t.name = "Induction accuracy with heads zero-ablated";
  t.columns = {"condition", "heads", "induction_acc", "delta_points"};
  t.rows.push_back({"baseline", "", base, 0.0});
  t.rows.push_back({cat("top", k, "_prefix_matching"), headsText(top), accTop, 100.0 * (accTop - base)});
  t.rows.push_back(
      {cat("random", k, "_outside_top", 2 * k), headsText(random), accRandom, 100.0 * (accRandom - base)});
  t.provenance.method = "induction";
  t.provenance.task = induction.id;
  t.provenance.seed = seed;
  t.provenance.n_prompts = static_cast<int>(induction.prompts.size());
  t.provenance.options = {{"k", k},
                          {"ablation", "zero"},
                          {"positions", "all"},
                          {"ranking", prefixMatching.id},
                          {"random_excludes_top", 2 * k},
                          {"task", induction.description}};
  return t;
}

namespace {

using NamedHeadSets = std::vector<std::pair<std::string, std::vector<HeadRef>>>;

// The head sets of concept patching: none, the top-k concept-copying and token-copying heads, k random heads.
NamedHeadSets conceptPatchingHeadSets(const ModelConfig& c, const HeadGrid& conceptCopying,
                                      const HeadGrid& tokenCopying, int k, uint64_t seed) {
  const std::vector<HeadRef> order = randomHeadOrder(c.n_layers, c.n_heads, seed);
  return {{"no_patch", {}},
          {cat("top", k, "_concept_copying"), topHeads(conceptCopying, k)},
          {cat("top", k, "_token_copying"), topHeads(tokenCopying, k)},
          {cat("random", k), std::vector<HeadRef>(order.begin(), order.begin() + k)}};
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

// Table "dual_route.concept_patching": each head set's share of every outcome over the n pairs.
Table conceptPatchingShares(const NamedHeadSets& sets, const std::vector<std::array<int, 4>>& counts, int n,
                            int k, uint64_t seed, int shots) {
  Table t;
  t.id = "dual_route.concept_patching";
  t.name = "Cross-language concept patching (whole answer word)";
  t.columns = {"heads", "patched", "n", "meaning_moved", "kept", "language_moved", "other"};
  for (size_t s = 0; s < sets.size(); ++s) {
    std::vector<nlohmann::json> row = {sets[s].first, headsText(sets[s].second), n};
    for (int o = 0; o < 4; ++o)
      row.push_back(double(counts[s][static_cast<size_t>(o)]) / n);
    t.rows.push_back(row);
  }
  t.provenance.method = "induction";
  t.provenance.task = "toy translate_a_b (source) -> translate_b_a (destination)";
  t.provenance.seed = seed;
  t.provenance.n_prompts = n;
  t.provenance.options = {
      {"k", k},
      {"shots", shots},
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
                           const AnalysisContext& ctx, std::vector<PromptRecord>* prompts) {
  const ModelConfig& c = model.config();
  if (k < 1 || k > c.n_layers * c.n_heads) fail("concept patching: k = ", k, " outside [1, heads]");
  if (n < 1) fail("concept patching: n = ", n, ", expected >= 1");
  at::NoGradGuard noGrad;
  const NamedHeadSets sets = conceptPatchingHeadSets(c, conceptCopying, tokenCopying, k, seed);
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
