#pragma once
// The dual route of induction (DESIGN 5.2): token copying vs concept copying heads.
//
// Prompts (one half before the separator, one after; B = the optional <bos>, S = the optional separator):
//   copying, clean:    B rand e S rand e0 [e1]     rand = filler_len − |e| distinct random tokens
//   copying, corrupt:  B rand' S rand e0 [e1]      rand' = rand plus |e| more random tokens (none of them
//                                                  in rand or e), shuffled: the corrupt first half lacks e
//                                                  but has the clean half's length, so every position of
//                                                  the two prompts lines up and a patch at −2 is the same
//                                                  position in both.
//   matching:          B r1 e r2 S r1              r1_len + |e| + |r2| = filler_len, read from the last r1.
//
// Causal copying scores (patchingSweepAverage, PatchMode::FromClean, PatchMetric::TargetProb): each head's
// hook_z at the last filler token of the second half (−2 of the full prompt, where the model must predict e0)
// is copied from the clean into the corrupt run.
//  - Token copying (e = random tokens): ΔP(e0) read at −2. The sweep reads the last position, so both
//    prompts end at that filler token: "B rand e S rand" / "B rand' S rand" (the token e0 is dropped) and the
//    patch is at the last position, which is −2 of the full prompt.
//  - Concept copying (e = real multi-token words): both prompts end with e0 ("... S rand e0"); the patch is
//    at −2 and the read at −1 (the position holding e0, where the model predicts e's second token e1):
//    ΔP(e1).
// Attention scores: value-weighted attention A_ij‖v_j‖ / Σ_j A_ij‖v_j‖ (hook_pattern, hook_v) from the last
// position of the matching prompt to e[0] (next-token matching, random-token e) or to e[−1] (last-token
// matching, real words), averaged over prompts.
//
// Vocabularies: on the toy model random tokens are the syllables of both languages, real words the toy
// words with >= 2 tokens (both languages), the separator "→"; on other models random tokens come from the
// middle half of the vocabulary and words from a word list (toyDualRouteVocab / modelDualRouteVocab).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis_context.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/toy/world.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// Where the dual-route prompts take their tokens from.
struct DualRouteVocab {
  int64_t bos = -1;                         // prepended when >= 0
  int64_t sep = -1;                         // between the two halves when >= 0
  std::vector<int64_t> random_tokens;       // fillers and random-token entities
  std::vector<std::vector<int64_t>> words;  // real words of >= 2 tokens (empty: no concept scores)
  std::string source;  // one line for provenance ("toy world", "vocab [a, b) + words.txt")
};

// The toy world's vocabulary; `sep` is a token string of the world ("→" by default, "" = no separator).
DualRouteVocab toyDualRouteVocab(const toy::ToyWorld& w, const std::string& sep = "\xE2\x86\x92");
// Any other model: random tokens from [vocab/4, 3·vocab/4) minus the tokenizer's bos/eos; words from
// `wordsFile` (one word a line, encoded as " word" without BOS, kept when 2..5 tokens; "" = none);
// `sep` encoded without BOS ("" = none; must be one token).
DualRouteVocab modelDualRouteVocab(const Tokenizer& tok, int64_t vocabSize, const std::string& wordsFile,
                                   const std::string& sep);

struct DualRouteOptions {
  int n_prompts = 16;  // prompt pairs per score
  uint64_t seed = 1;
  int filler_len = 30;  // tokens of the first half (filler + entity) in every prompt
  int entity_min = 2;   // random-token entity length, uniform in [entity_min, entity_max]
  int entity_max = 5;
  int r1_len = 10;  // matching prompts: tokens of r1 (repeated after the separator)
  nlohmann::json toJson() const;
};

// One copying prompt pair (full prompts, ending with e0 and e1 not included) and its entity.
struct CopyingPair {
  std::vector<int64_t> clean, corrupt;  // same length
  std::vector<int64_t> entity;
};
// Pair i of a score: entity = random tokens (concept == false) or a real word of the vocab.
CopyingPair copyingPair(const DualRouteVocab& v, const DualRouteOptions& o, bool concept, int index);

// One matching prompt and the positions of its entity's first and last token.
struct MatchingPrompt {
  std::vector<int64_t> tokens;
  std::vector<int64_t> entity;
  int64_t entity_first = 0, entity_last = 0;  // absolute positions in tokens
};
MatchingPrompt matchingPrompt(const DualRouteVocab& v, const DualRouteOptions& o, bool concept, int index);

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
// "dual_route.last_token_matching" (concept == true: real words, to e[−1]); unit "value-weighted attention".
HeadGrid matchingScores(const Transformer& model, const DualRouteVocab& v, const DualRouteOptions& o,
                        bool concept, const AnalysisContext& ctx = {});

}  // namespace hs
