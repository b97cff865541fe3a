#pragma once
// The dual route of induction (docs/methods.md, "Induction and the dual route"): token copying vs concept
// copying heads, as the dual-route study's official code builds its prompts (sfeucht/dual-route-induction
// scripts/causal_scores.py and scripts/attention_scores.py; docs/methods.md cites the lines).
//
// Prompts (B = <bos>, S = the separator, F = filler_len, e the entity of 2–5 tokens):
//   copying, clean:    B rand e S rand e0     rand = a filler of F − |e| tokens
//   copying, corrupt:  B rand' S rand e0      rand' = an independent filler of F tokens: the corrupt first
//                                             half knows nothing of e or rand, and has the clean half's
//                                             length, so −2 is the same position in both prompts.
//   matching:          B r1 e r2 S r1         |r1| = p uniform in [F/2, F − |e|] (e at a random offset of at
//                                             least half the first half), |r2| = F − p − |e| (may be 0);
//                                             the query is the last token (r1's last).
// Fillers: "corpus" (real models): a window of encoded corpus text at a random offset, shuffled — each filler
// drawn independently (official pile_chunk); "random" (the toy model, whose world has no running text):
// distinct tokens of the random-token pool, none of them in e.
// Entities, balanced over lengths as the official n/4 per length: random-token entity i has length
// entity_min + i mod (entity_max − entity_min + 1), its tokens a shuffled corpus window (corpus fillers) or
// distinct pool tokens; real word i comes from the words of length bucket i mod (number of buckets).
//
// Causal copying scores (patchingSweepAverage, PatchMode::FromClean, PatchMetric::TargetProb): each head's
// hook_z at −2 (the last filler token of the second half, where the model must predict e0) is copied from
// the clean into the corrupt run.
//  - Token copying (e = random tokens): ΔP(e0) read at −2. The sweep reads the last position, so both
//    prompts end at that filler token: "B rand e S rand" / "B rand' S rand" (e0 dropped; causal attention
//    makes −2's logits independent of it) and the patch is at the last position.
//  - Concept copying (e = real multi-token words): both prompts end with e0; the patch is at −2 and the
//    read at −1 (e0, where the model predicts e1): ΔP(e1).
// Attention scores: value-weighted attention A_ij‖v_j‖ / Σ_j A_ij‖v_j‖ (hook_pattern, hook_v) from the last
// position of the matching prompt to e[0] (next-token matching, random-token e) or to e[−1] (last-token
// matching, real words), averaged over prompts.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/dual_route_vocab.h"
#include "tasks/toy/world.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct DualRouteOptions {
  int n_prompts = 16;   // prompt pairs per copying score
  int n_matching = 16;  // prompts per attention score
  uint64_t seed = 1;
  int filler_len = 30;  // tokens of the first half (filler + entity) in every prompt: the official seq_len
  int entity_min = 2;   // random-token entity lengths cycle through [entity_min, entity_max]
  int entity_max = 5;
  std::string filler = "random";  // "corpus" or "random" (see above)
  nlohmann::json toJson() const;
};

// One copying prompt pair (full prompts, ending with e0) and its entity.
struct CopyingPair {
  std::vector<int64_t> clean, corrupt;  // same length
  std::vector<int64_t> entity;
};
// Pair i of a score: entity = random tokens (concept == false) or a real word of the vocab.
CopyingPair copyingPair(const DualRouteVocab& v, const DualRouteOptions& o, bool conceptRoute, int index);

// One matching prompt and the positions of its entity's first and last token.
struct MatchingPrompt {
  std::vector<int64_t> tokens;
  std::vector<int64_t> entity;
  int64_t entity_first = 0, entity_last = 0;  // absolute positions in tokens
};
MatchingPrompt matchingPrompt(const DualRouteVocab& v, const DualRouteOptions& o, bool conceptRoute,
                              int index);

// Grid "dual_route.token_copying" (unit ΔP).
HeadGrid tokenCopyingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                            const AnalysisContext& ctx = {});
// Grid "dual_route.concept_copying" (unit ΔP); needs v.words.
HeadGrid conceptCopyingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                              const AnalysisContext& ctx = {});

// Value-weighted attention: pattern [batch, head, q, k], values [batch, k, head, d_head] →
// [batch, head, q, k] with w_ij = A_ij‖v_j‖ / Σ_j A_ij‖v_j‖ (0 where the denominator is 0).
at::Tensor valueWeightedAttention(const at::Tensor& pattern, const at::Tensor& values);

// Grid "dual_route.next_token_matching" (concept == false: random-token e, to e[0]) or
// "dual_route.last_token_matching" (concept == true: real words, to e[−1]); unit "value-weighted attention";
// o.n_matching prompts.
HeadGrid matchingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                        bool conceptRoute, const AnalysisContext& ctx = {});

}  // namespace hs
