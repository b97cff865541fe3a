// Dual-route prompts, causal copying scores and value-weighted matching scores. See dual_route.h.
#include "analysis/methods/dual_route.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "analysis/toolkit/patch_sweep.h"
#include "tasks/toy/rng.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

namespace {

// Stream tags: the four prompt families of one seed never share draws.
enum : uint64_t { kTokenCopy = 0x7463, kConceptCopy = 0x6363, kTokenMatch = 0x746d, kConceptMatch = 0x636d };

toy::Rng promptRng(const DualRouteOptions& o, uint64_t stream, int index) {
  return toy::Rng(toy::deriveSeed(o.seed, stream, static_cast<uint64_t>(index)));
}

bool corpusFillers(const DualRouteOptions& o) {
  if (o.filler != "corpus" && o.filler != "random")
    fail("dual route: filler \"", o.filler, "\", expected corpus or random");
  return o.filler == "corpus";
}

// A corpus window of n tokens at a uniform random offset, shuffled (the official pile_chunk with
// shuf_pile=True: a document's first n tokens, shuffled).
std::vector<int64_t> corpusChunk(const DualRouteVocab& v, int n, toy::Rng& rng) {
  if (n <= 0) return {};
  if (static_cast<int64_t>(v.corpus.size()) < n)
    fail("dual route: a filler of ", n, " tokens needs a longer corpus than the ", v.corpus.size(),
         " tokens of ", v.source);
  const size_t start = static_cast<size_t>(rng.uniform(v.corpus.size() - static_cast<size_t>(n) + 1));
  std::vector<int64_t> out(v.corpus.begin() + static_cast<std::ptrdiff_t>(start),
                           v.corpus.begin() + static_cast<std::ptrdiff_t>(start) + n);
  rng.shuffle(out);
  return out;
}

// n distinct tokens of the random-token pool, none of them in `exclude`.
std::vector<int64_t> poolTokens(const DualRouteVocab& v, const std::vector<int64_t>& exclude, int n,
                                toy::Rng& rng) {
  if (n <= 0) return {};
  const std::set<int64_t> ex(exclude.begin(), exclude.end());
  std::vector<int64_t> pool;
  for (int64_t t : v.random_tokens)
    if (!ex.count(t)) pool.push_back(t);
  if (static_cast<int>(pool.size()) < n)
    fail("dual route: ", n, " distinct filler tokens needed, the pool of ", v.source, " holds ", pool.size(),
         " outside the entity");
  std::vector<int64_t> out;
  for (int i : rng.choose(static_cast<int>(pool.size()), n))
    out.push_back(pool[static_cast<size_t>(i)]);
  return out;
}

// A filler of n tokens: a shuffled corpus window, or pool tokens outside the entity.
std::vector<int64_t> drawFiller(const DualRouteVocab& v, const DualRouteOptions& o,
                                const std::vector<int64_t>& entity, int n, toy::Rng& rng) {
  return corpusFillers(o) ? corpusChunk(v, n, rng) : poolTokens(v, entity, n, rng);
}

// The entity of prompt `index`: random tokens of a length cycling through [entity_min, entity_max], or a
// real word from the length bucket index mod (number of lengths present).
std::vector<int64_t> drawEntity(const DualRouteVocab& v, const DualRouteOptions& o, bool conceptRoute,
                                int index, toy::Rng& rng) {
  if (conceptRoute) {
    if (v.words.empty()) fail("dual route: concept prompts need real words (none in ", v.source, ")");
    std::map<size_t, std::vector<const std::vector<int64_t>*>> byLength;
    for (const auto& w : v.words)
      byLength[w.size()].push_back(&w);
    auto bucket = byLength.begin();
    std::advance(bucket, index % static_cast<int>(byLength.size()));
    return *rng.pick(bucket->second);
  }
  const int len = o.entity_min + index % (o.entity_max - o.entity_min + 1);
  if (corpusFillers(o)) return corpusChunk(v, len, rng);
  return poolTokens(v, {}, len, rng);
}

void checkOptions(const DualRouteVocab& v, const DualRouteOptions& o) {
  if (o.n_prompts < 1 || o.n_matching < 1)
    fail("dual route: n_prompts = ", o.n_prompts, " and n_matching = ", o.n_matching, ", expected >= 1");
  if (o.entity_min < 2 || o.entity_max < o.entity_min)
    fail("dual route: entity length range [", o.entity_min, ", ", o.entity_max,
         "] must have 2 <= min <= max");
  if (corpusFillers(o) ? v.corpus.empty() : v.random_tokens.empty())
    fail("dual route: no ", o.filler, " tokens in ", v.source);
}

// Appends tokens to a prompt.
void put(std::vector<int64_t>& p, const std::vector<int64_t>& t) {
  p.insert(p.end(), t.begin(), t.end());
}

Provenance provenanceOf(const DualRouteVocab& v, const DualRouteOptions& o, const std::string& task) {
  Provenance p;
  p.method = "induction";
  p.task = task;
  p.seed = o.seed;
  p.n_prompts = o.n_prompts;
  p.options = o.toJson();
  p.options["vocab"] = v.source;
  p.options["bos"] = v.bos;
  p.options["sep"] = v.sep;
  return p;
}

}  // namespace

nlohmann::json DualRouteOptions::toJson() const {
  return {{"n_prompts", n_prompts},   {"n_matching", n_matching}, {"seed", seed},
          {"filler_len", filler_len}, {"entity_min", entity_min}, {"entity_max", entity_max},
          {"filler", filler}};
}

CopyingPair copyingPair(const DualRouteVocab& v, const DualRouteOptions& o, bool conceptRoute, int index) {
  toy::Rng rng = promptRng(o, conceptRoute ? kConceptCopy : kTokenCopy, index);
  CopyingPair p;
  p.entity = drawEntity(v, o, conceptRoute, index, rng);
  const int E = static_cast<int>(p.entity.size());
  if (o.filler_len <= E)
    fail("dual route: filler_len = ", o.filler_len, " leaves no filler beside an entity of ", E, " tokens");
  const std::vector<int64_t> rand = drawFiller(v, o, p.entity, o.filler_len - E, rng);
  // The corrupt first half: an independent filler of the clean half's full length (official
  // causal_scores.py: rand2 = pile_chunk(sequence_len)).
  const std::vector<int64_t> corruptHalf = drawFiller(v, o, p.entity, o.filler_len, rng);

  std::vector<int64_t> tail;  // S rand e0
  if (v.sep >= 0) tail.push_back(v.sep);
  put(tail, rand);
  tail.push_back(p.entity[0]);
  if (v.bos >= 0) {
    p.clean.push_back(v.bos);
    p.corrupt.push_back(v.bos);
  }
  put(p.clean, rand);
  put(p.clean, p.entity);
  put(p.clean, tail);
  put(p.corrupt, corruptHalf);
  put(p.corrupt, tail);
  return p;
}

MatchingPrompt matchingPrompt(const DualRouteVocab& v, const DualRouteOptions& o, bool conceptRoute,
                              int index) {
  toy::Rng rng = promptRng(o, conceptRoute ? kConceptMatch : kTokenMatch, index);
  MatchingPrompt m;
  m.entity = drawEntity(v, o, conceptRoute, index, rng);
  const int E = static_cast<int>(m.entity.size());
  const int F = o.filler_len;
  if (F / 2 < 1 || F / 2 > F - E)
    fail("dual route: filler_len = ", F, " leaves no room for the entity (", E,
         " tokens) at an offset of at least half of it");
  // The entity's offset in the first half (official attention_scores.py: random.choice(range(seq_len // 2,
  // seq_len - len(ent) + 1))).
  const int p = rng.uniformInt(F / 2, F - E);
  std::vector<int64_t> r1, r2;
  if (corpusFillers(o)) {
    r1 = corpusChunk(v, p, rng);
    r2 = corpusChunk(v, F - p - E, rng);
  } else {  // one draw, so r1, r2 and e share no token and "the earlier occurrence" is unique
    const std::vector<int64_t> drawn = poolTokens(v, m.entity, F - E, rng);
    r1.assign(drawn.begin(), drawn.begin() + p);
    r2.assign(drawn.begin() + p, drawn.end());
  }
  if (v.bos >= 0) m.tokens.push_back(v.bos);
  put(m.tokens, r1);
  m.entity_first = static_cast<int64_t>(m.tokens.size());
  put(m.tokens, m.entity);
  m.entity_last = static_cast<int64_t>(m.tokens.size()) - 1;
  put(m.tokens, r2);
  if (v.sep >= 0) m.tokens.push_back(v.sep);
  put(m.tokens, r1);
  return m;
}

namespace {

HeadGrid copyingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                       bool conceptRoute, const AnalysisContext& ctx) {
  checkOptions(v, o);
  std::vector<PatchSweepSpec> specs;
  for (int i = 0; i < o.n_prompts; ++i) {
    const CopyingPair p = copyingPair(v, o, conceptRoute, i);
    PatchSweepSpec s;
    s.mode = PatchMode::FromClean;
    s.metric = PatchMetric::TargetProb;
    s.clean = p.clean;
    s.corrupt = p.corrupt;
    if (conceptRoute) {
      s.positions = {-2};  // the last filler token; the read is at −1 (e0 → e1)
      s.target = p.entity[1];
    } else {
      s.clean.pop_back();  // drop e0: the old −2 is now the last position, where e0 is predicted
      s.corrupt.pop_back();
      s.positions = {-1};
      s.target = p.entity[0];
    }
    specs.push_back(std::move(s));
  }
  HeadGrid g = patchingSweepAverage(model, specs, ctx);
  const Provenance sweep = g.provenance;
  g.provenance = provenanceOf(
      v, o,
      conceptRoute ? "dual-route concept copying (real words)" : "dual-route token copying (random tokens)");
  g.provenance.model = sweep.model;
  g.provenance.options["patch_mode"] = "from_clean";
  g.provenance.options["metric"] = "target_prob";
  g.provenance.options["patch_position"] = -2;  // of the full prompt
  g.provenance.options["read_position"] = conceptRoute ? -1 : -2;
  g.provenance.options["target"] = conceptRoute ? "e1" : "e0";
  g.provenance.options["corrupt_first_half"] =
      o.filler == "corpus" ? "an independent shuffled corpus window of filler_len tokens"
                           : "filler_len independent random pool tokens, none of e";
  g.provenance.options["sweep"] = sweep.options;
  g.id = conceptRoute ? "dual_route.concept_copying" : "dual_route.token_copying";
  g.name = conceptRoute ? "Concept copying (ΔP of e1 at −1, patch at −2)" : "Token copying (ΔP of e0 at −2)";
  g.unit = "ΔP";
  return g;
}

}  // namespace

HeadGrid tokenCopyingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                            const AnalysisContext& ctx) {
  return copyingScores(model, v, o, false, ctx);
}

HeadGrid conceptCopyingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                              const AnalysisContext& ctx) {
  return copyingScores(model, v, o, true, ctx);
}

at::Tensor valueWeightedAttention(const at::Tensor& pattern, const at::Tensor& values) {
  if (pattern.dim() != 4 || values.dim() != 4 || pattern.size(0) != values.size(0) ||
      pattern.size(1) != values.size(2) || pattern.size(3) != values.size(1))
    fail(
        "valueWeightedAttention: expected pattern [batch, head, q, k] and values [batch, k, head, d_head], "
        "got ",
        pattern.sizes(), " and ", values.sizes());
  const at::Tensor norms =
      values.to(at::kDouble).pow(2).sum(-1).sqrt().permute({0, 2, 1}).unsqueeze(2);  // [b, head, 1, k]
  const at::Tensor w = pattern.to(at::kDouble) * norms;                              // [b, head, q, k]
  const at::Tensor denom = w.sum(-1, true);                                          // [b, head, q, 1]
  return at::where(denom > 0, w / denom.clamp_min(1e-300), at::zeros_like(w));       // [b, head, q, k]
}

HeadGrid matchingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                        bool conceptRoute, const AnalysisContext& ctx) {
  checkOptions(v, o);
  at::NoGradGuard noGrad;
  const ModelConfig& c = model.config();
  HeadGrid g;
  g.values = Eigen::MatrixXd::Zero(c.n_layers, c.n_heads);
  Eigen::MatrixXd squares = Eigen::MatrixXd::Zero(c.n_layers, c.n_heads);  // Σ score² over the prompts
  for (int i = 0; i < o.n_matching; ++i) {
    ctx.checkCancelled();
    const MatchingPrompt m = matchingPrompt(v, o, conceptRoute, i);
    RunRequest req;
    req.tokens = at::tensor(m.tokens, at::kLong).view({1, -1}).to(model.device());  // [1, pos]
    req.last_logits_only = true;
    for (int l = 0; l < c.n_layers; ++l) {
      req.capture.insert(attnPattern(l));
      req.capture.insert(attnV(l));
    }
    const RunResult r = model.run(req);
    const int64_t key = conceptRoute ? m.entity_last : m.entity_first;
    for (int l = 0; l < c.n_layers; ++l) {
      const at::Tensor pat = r.cache.at(attnPattern(l)).cpu();  // [1, head, q, k]
      const at::Tensor val = r.cache.at(attnV(l)).cpu();        // [1, k, head, d_head]
      const at::Tensor vw =
          valueWeightedAttention(pat.narrow(2, pat.size(2) - 1, 1), val);     // [1, head, 1, k]
      const at::Tensor toKey = vw.select(3, key).reshape({-1}).contiguous();  // [head]
      for (int h = 0; h < c.n_heads; ++h) {
        const double x = toKey[h].item<double>();
        g.values(l, h) += x / o.n_matching;
        squares(l, h) += x * x;
      }
    }
    ctx.report(double(i + 1) / o.n_matching,
               cat(conceptRoute ? "last" : "next", "-token matching: prompt ", i + 1, "/", o.n_matching));
  }
  const double n = o.n_matching;  // se = sample sd / √n over the prompts
  if (n > 1)
    g.se =
        ((squares - n * g.values.cwiseProduct(g.values)) / (n - 1)).cwiseMax(0.0).cwiseSqrt() / std::sqrt(n);
  g.provenance = provenanceOf(
      v, o, conceptRoute ? "dual-route matching (real words)" : "dual-route matching (random tokens)");
  g.provenance.n_prompts = o.n_matching;
  g.provenance.options["query_position"] = -1;
  g.provenance.options["entity_offset"] = "uniform in [filler_len / 2, filler_len - |e|]";
  g.provenance.options["key"] = conceptRoute ? "e[-1]" : "e[0]";
  g.id = conceptRoute ? "dual_route.last_token_matching" : "dual_route.next_token_matching";
  g.name = conceptRoute ? "Last-token matching (value-weighted attention to e[−1])"
                        : "Next-token matching (value-weighted attention to e[0])";
  g.unit = "value-weighted attention";
  return g;
}

}  // namespace hs
