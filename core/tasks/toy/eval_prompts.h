#pragma once
// Evaluation prompts of the toy model, one builder per measured quantity. Each prompt is a training episode
// (episodes.h, same format) cut just before the answer, built from its own seed: deriveSeed(seed,
// kStreamEval, kind) seeds it, so evaluation never replays a training sample's draws. Use a different seed
// per prompt (e.g. evalSeed(base, i)).
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/toy/world.h"

namespace hs::toy {

struct EvalPrompt {
  std::vector<int> tokens;     // the prompt, starting with <bos>
  std::vector<int> answer;     // expected next token(s), in order
  std::vector<int> label_set;  // icl_cls: this episode's label words (for the TR ratio); empty otherwise
  std::string kind;            // "induction", "concept_copy", "translation", "icl_cls", "function:<task>"
};

// Seed of prompt i of an evaluation set built from `base`.
uint64_t evalSeed(uint64_t base, uint64_t i);

// <bos> + span of `span_len` distinct syllables + a prefix (1..span_len-1 tokens) of its repeat;
// answer = the next span token (token induction).
EvalPrompt inductionPrompt(const ToyWorld& w, uint64_t seed, int span_len = 16);
// <bos> list of 4-8 words in one language ; its copy up to word m (m >= 1) and ","; answer = all tokens of
// word m, which is always multi-token (concept copying).
EvalPrompt conceptCopyPrompt(const ToyWorld& w, uint64_t seed);
// <bos> list of 3-8 words in `from` → its translation up to word m (m >= 0, with "," when m > 0); answer =
// the translation of word m.
EvalPrompt translationPrompt(const ToyWorld& w, uint64_t seed, Lang from = Lang::A);
// Classification episode with 2-4 fresh labels and a fresh mapping, `shots` demonstrations (every label shown
// when shots >= labels), then "query :"; answer = the query's label; label_set = the episode's labels.
EvalPrompt iclClsPrompt(const ToyWorld& w, uint64_t seed, int shots, int min_labels = 2, int max_labels = 4);
// Function episode for a word task: `shots` demonstrations "x → f(x) <nl>" then "q →"; answer = f(q).
EvalPrompt functionPrompt(const ToyWorld& w, uint64_t seed, const std::string& task, int shots);

// How the prompts of a kind are built, for the eval JSON. kind: "induction", "concept_copy", "translation",
// "icl_cls", "function" (or "function:<task>").
std::string formatDescription(const std::string& kind);

}  // namespace hs::toy
