#include "analysis/toolkit/induction_scores.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace hs {

InductionScores inductionScores(const Transformer& model, const InductionScoreOptions& o,
                                const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const int64_t lo = o.token_low >= 0 ? o.token_low : c.vocab_size / 8;
  const int64_t hi = o.token_high > 0 ? o.token_high : c.vocab_size;
  if (o.span < 2 || o.n_sequences < 1) fail("induction scores: span must be >= 2 and n_sequences >= 1");
  if (lo < 0 || hi > c.vocab_size || hi - lo < o.span)
    fail("induction scores: token range [", lo, ", ", hi, ") must lie in the vocabulary of ", c.vocab_size,
         " and hold at least ", o.span, " tokens");
  const int64_t off = o.bos >= 0 ? 1 : 0;
  const int64_t S = o.span, P = off + 2 * S;
  if (P > c.context_length) fail("induction scores: ", P, " tokens exceed the context of ", c.context_length);

  c10::InferenceMode guard;
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  const at::Tensor q = at::arange(off + S, P, at::kLong);      // [span] second-copy query positions
  const at::Tensor kInd = q - S + 1;                           // [span] token after the earlier occurrence
  const at::Tensor qPrev = at::arange(off + 1, P, at::kLong);  // positions with a previous real token
  at::Tensor indSum = at::zeros({c.n_layers, c.n_heads}, at::kDouble);   // [layers, heads]
  at::Tensor prevSum = at::zeros({c.n_layers, c.n_heads}, at::kDouble);  // [layers, heads]
  // Σ over sequences of each sequence's mean squared: the standard errors over the sequences.
  at::Tensor indSq = at::zeros({c.n_layers, c.n_heads}, at::kDouble);   // [layers, heads]
  at::Tensor prevSq = at::zeros({c.n_layers, c.n_heads}, at::kDouble);  // [layers, heads]
  double copied = 0;
  InductionScores out;
  // Sequences go through the model `chunk` at a time: memory stays bounded and cancellation is checked
  // between forwards; the sums over all sequences give the exact means.
  const int64_t chunk = std::max(1, o.chunk);
  for (int64_t done = 0; done < o.n_sequences; done += chunk) {
    ctx.checkCancelled();
    const int64_t B = std::min<int64_t>(chunk, o.n_sequences - done);
    // Each sequence: distinct random tokens, so "the earlier occurrence" is unique.
    at::Tensor tokens = at::empty({B, P}, at::kLong);  // [batch, pos]
    for (int64_t b = 0; b < B; ++b) {
      const at::Tensor r = at::randperm(hi - lo, gen, at::kLong).slice(0, 0, S) + lo;  // [span]
      if (off) tokens[b][0] = o.bos;
      tokens[b].slice(0, off, off + S).copy_(r);
      tokens[b].slice(0, off + S, P).copy_(r);
    }
    for (int64_t b = 0; b < B; ++b) {
      const at::Tensor row = tokens[b].contiguous();
      out.sequences.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + P);
    }
    RunRequest req;
    req.tokens = tokens.to(model.device());
    for (int l = 0; l < c.n_layers; ++l)
      req.capture.insert(attnPattern(l));
    const RunResult run = model.run(req);
    for (int l = 0; l < c.n_layers; ++l) {
      const at::Tensor pat = run.cache.at(attnPattern(l)).to(at::kDouble).cpu();  // [batch, head, q, k]
      const at::Tensor ind =
          pat.index({at::indexing::Slice(), at::indexing::Slice(), q, kInd});  // [batch, head, span]
      const at::Tensor prev = pat.index(
          {at::indexing::Slice(), at::indexing::Slice(), qPrev, qPrev - 1});  // [batch, head, P-off-1]
      indSum[l] += ind.sum(at::IntArrayRef{0, 2});                            // [head]
      prevSum[l] += prev.sum(at::IntArrayRef{0, 2});                          // [head]
      indSq[l] += ind.mean(2).pow(2).sum(0);                                  // [head]
      prevSq[l] += prev.mean(2).pow(2).sum(0);                                // [head]
    }
    // Copying: the prediction at second-copy position i (i > first) should be token i + 1.
    const at::Tensor pred = run.logits.argmax(-1).cpu();         // [batch, pos]
    const at::Tensor predicted = pred.slice(1, off + S, P - 1);  // [batch, span-1]
    const at::Tensor wanted = tokens.slice(1, off + S + 1, P);   // [batch, span-1]
    copied += predicted.eq(wanted).to(at::kDouble).sum().item<double>();
    ctx.report(double(done + B) / o.n_sequences,
               cat("induction scores: ", done + B, " / ", o.n_sequences, " sequences"));
  }

  const at::Tensor indMean = (indSum / double(o.n_sequences * S)).contiguous();  // [layers, heads]
  const at::Tensor prevMean =
      (prevSum / double(o.n_sequences * (P - off - 1))).contiguous();  // [layers, heads]
  // se = sd / √n over the sequences' means: (Σm² − n·mean²) / (n − 1) / n under the root.
  const double n = static_cast<double>(o.n_sequences);
  auto se = [n](const at::Tensor& sq, const at::Tensor& mean) {
    return n > 1 ? ((sq - n * mean * mean) / (n - 1)).clamp_min(0).sqrt() / std::sqrt(n)
                 : at::full_like(mean, std::nan(""));  // [layers, heads]
  };
  const at::Tensor indSe = se(indSq, indMean).contiguous(), prevSe = se(prevSq, prevMean).contiguous();
  out.previous_token.values.resize(c.n_layers, c.n_heads);
  out.induction.values.resize(c.n_layers, c.n_heads);
  out.previous_token.se.resize(c.n_layers, c.n_heads);
  out.induction.se.resize(c.n_layers, c.n_heads);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h) {
      out.induction.values(l, h) = indMean[l][h].item<double>();
      out.previous_token.values(l, h) = prevMean[l][h].item<double>();
      out.induction.se(l, h) = indSe[l][h].item<double>();
      out.previous_token.se(l, h) = prevSe[l][h].item<double>();
    }
  out.copy_accuracy = copied / double(o.n_sequences * (S - 1));

  Provenance prov;
  prov.method = "induction";
  prov.seed = o.seed;
  prov.n_prompts = o.n_sequences;
  prov.task = "repeated random tokens";
  prov.options = {{"span", o.span},
                  {"n_sequences", o.n_sequences},
                  {"bos", o.bos},
                  {"token_low", lo},
                  {"token_high", hi}};
  out.previous_token.id = "induction.prev_token";
  out.previous_token.name = "Previous-token attention";
  out.previous_token.unit = "attention";
  out.previous_token.provenance = prov;
  out.induction.id = "induction.prefix_matching";
  out.induction.name = "Induction (prefix matching)";
  out.induction.unit = "attention";
  out.induction.provenance = prov;
  return out;
}

}  // namespace hs
