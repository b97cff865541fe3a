// A next-token task: prompts whose first answer token is scored (the dual-route study's list tasks and the
// toy world's copying, translation and function prompts), as data, before any model runs on it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/dual_route_vocab.h"
#include "tasks/toy/world.h"

namespace hs {

struct NextTokenTask {
  std::string id;           // stable, e.g. "copy_words"
  std::string description;  // one line
  std::vector<std::vector<int64_t>> prompts;
  std::vector<int64_t> answers;  // [prompts] the first answer token
};

// Token ids as the model takes them (the toy world builds prompts as int).
std::vector<int64_t> toIds(const std::vector<int>& v);

// The list tasks of the toy world, n prompts each, built from toy/eval_prompts.h with evalSeed(seed, i):
// "copy_words" (conceptCopyPrompt: verbatim copy of a multi-token word of a list), "copy_random"
// (inductionPrompt: nonsense / random-syllable copying), "translation" (translationPrompt A → B),
// "antonym" (functionPrompt "antonym_a" with `shots` demonstrations).
std::vector<NextTokenTask> toyListTasks(const toy::ToyWorld& w, int n, uint64_t seed, int shots = 4);
// Random-token copying for any model: B s1..sL s1..sj, answer s(j+1) (L = span distinct tokens of
// v.random_tokens, j uniform in [1, L−1], B = v.bos when >= 0; no separator); id "copy_random".
NextTokenTask randomCopyTask(const DualRouteVocab& v, int n, uint64_t seed, int span = 16);

}  // namespace hs
