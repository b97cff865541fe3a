#include "tasks/next_token_task.h"

#include "tasks/toy/eval_prompts.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

std::vector<int64_t> toIds(const std::vector<int>& v) {
  return {v.begin(), v.end()};
}

std::vector<NextTokenTask> toyListTasks(const toy::ToyWorld& w, int n, uint64_t seed, int shots) {
  if (n < 1) fail("toy list tasks: n = ", n, ", expected >= 1");
  NextTokenTask words{
      "copy_words", "verbatim copy of a multi-token word of a list (concept_copy prompts)", {}, {}};
  NextTokenTask random{"copy_random", "random-syllable span copying (induction prompts)", {}, {}};
  NextTokenTask trans{"translation", "list translation A -> B (translation prompts)", {}, {}};
  NextTokenTask ant{"antonym", cat("antonym_a function prompts, ", shots, " shots"), {}, {}};
  auto add = [](NextTokenTask& t, const toy::EvalPrompt& p) {
    t.prompts.push_back(toIds(p.tokens));
    t.answers.push_back(p.answer.at(0));
  };
  for (int i = 0; i < n; ++i) {
    const uint64_t s = toy::evalSeed(seed, static_cast<uint64_t>(i));
    add(words, toy::conceptCopyPrompt(w, s));
    add(random, toy::inductionPrompt(w, s));
    add(trans, toy::translationPrompt(w, s, toy::Lang::A));
    add(ant, toy::functionPrompt(w, s, "antonym_a", shots));
  }
  return {words, random, trans, ant};
}

NextTokenTask randomCopyTask(const DualRouteVocab& v, int n, uint64_t seed, int span) {
  if (span < 2 || static_cast<int>(v.random_tokens.size()) < span)
    fail("random copy task: span ", span, " needs >= 2 and at most ", v.random_tokens.size(), " tokens");
  NextTokenTask t{"copy_random", cat("random-token span copying (span ", span, ")"), {}, {}};
  for (int i = 0; i < n; ++i) {
    toy::Rng rng(toy::deriveSeed(seed, 0x72636f7079ULL, static_cast<uint64_t>(i)));
    std::vector<int64_t> s;
    for (int k : rng.choose(static_cast<int>(v.random_tokens.size()), span))
      s.push_back(v.random_tokens[static_cast<size_t>(k)]);
    const int j = rng.uniformInt(1, span - 1);
    std::vector<int64_t> p;
    if (v.bos >= 0) p.push_back(v.bos);
    p.insert(p.end(), s.begin(), s.end());
    p.insert(p.end(), s.begin(), s.begin() + j);
    t.prompts.push_back(p);
    t.answers.push_back(s[static_cast<size_t>(j)]);
  }
  return t;
}

}  // namespace hs
