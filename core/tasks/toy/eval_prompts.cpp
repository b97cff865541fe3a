#include "tasks/toy/eval_prompts.h"

#include <algorithm>

#include "tasks/toy/episodes.h"
#include "tasks/toy/rng.h"
#include "tasks/toy/tasks.h"
#include "util/error.h"

namespace hs::toy {

namespace {

// Per-builder stream offsets, so the same seed gives unrelated prompts of different kinds.
enum : uint64_t { kInduction = 1, kConceptCopy = 2, kTranslation = 3, kIclCls = 4, kFunction = 5 };

Rng promptRng(uint64_t seed, uint64_t builder) {
  return Rng(deriveSeed(seed, kStreamEval, builder));
}

// The prompt is the episode up to (not including) `cut`; the answer is the `len` tokens from `cut`.
EvalPrompt cutAt(const Episode& e, size_t cut, size_t len, std::string kind) {
  if (cut == 0 || cut + len > e.tokens.size())
    fail("toy eval prompt: cut ", cut, "+", len, " outside episode of ", e.tokens.size());
  EvalPrompt p;
  p.tokens.assign(e.tokens.begin(), e.tokens.begin() + static_cast<long>(cut));
  p.answer.assign(e.tokens.begin() + static_cast<long>(cut), e.tokens.begin() + static_cast<long>(cut + len));
  p.label_set = e.label_set;
  p.kind = std::move(kind);
  return p;
}

Lang randomLang(Rng& rng) {
  return rng.bernoulli(0.5) ? Lang::A : Lang::B;
}

}  // namespace

uint64_t evalSeed(uint64_t base, uint64_t i) {
  return deriveSeed(base, kStreamEval ^ 0x5e7ULL, i);
}

EvalPrompt inductionPrompt(const ToyWorld& w, uint64_t seed, int span_len) {
  if (span_len < 2) fail("toy induction prompt: span_len = ", span_len, ", expected >= 2");
  Rng rng = promptRng(seed, kInduction);
  const std::vector<int> span = randomSpan(w, rng, span_len);
  const Episode e = inductionEpisode(w, span, 2);
  // Stop j tokens into the repeat (j >= 1: the repeat has started, so induction can find the continuation).
  const int j = rng.uniformInt(1, span_len - 1);
  return cutAt(e, 1 + span.size() + static_cast<size_t>(j), 1, "induction");
}

EvalPrompt conceptCopyPrompt(const ToyWorld& w, uint64_t seed) {
  Rng rng = promptRng(seed, kConceptCopy);
  const Lang lang = randomLang(rng);
  const int n = rng.uniformInt(4, 8);
  const size_t m = static_cast<size_t>(rng.uniformInt(1, n - 1));
  std::vector<int> concepts = rng.choose(w.numConcepts(), n);
  // The asked-for word must span several tokens: copying it is concept copying, not one-token induction.
  for (int attempt = 0; w.word(lang, concepts[m]).size() < 2; ++attempt) {
    if (attempt > 10000) fail("toy concept copy prompt: the world has no multi-token words");
    const int c = static_cast<int>(rng.uniform(static_cast<uint64_t>(w.numConcepts())));
    if (std::find(concepts.begin(), concepts.end(), c) == concepts.end()) concepts[m] = c;
  }
  const Episode e = listEpisode(w, concepts, lang, lang);
  return cutAt(e, e.item_starts[m], w.word(lang, concepts[m]).size(), "concept_copy");
}

EvalPrompt translationPrompt(const ToyWorld& w, uint64_t seed, Lang from) {
  Rng rng = promptRng(seed, kTranslation);
  const Lang to = from == Lang::A ? Lang::B : Lang::A;
  const int n = rng.uniformInt(3, 8);
  const size_t m = static_cast<size_t>(rng.uniformInt(0, n - 1));
  const std::vector<int> concepts = rng.choose(w.numConcepts(), n);
  const Episode e = listEpisode(w, concepts, from, to);
  return cutAt(e, e.item_starts[m], w.word(to, concepts[m]).size(), "translation");
}

EvalPrompt iclClsPrompt(const ToyWorld& w, uint64_t seed, int shots, int min_labels, int max_labels) {
  Rng rng = promptRng(seed, kIclCls);
  const int labels = rng.uniformInt(min_labels, max_labels);
  const Lang lang = randomLang(rng);
  const Episode e = clsEpisode(w, rng, labels, shots, lang);
  return cutAt(e, e.answer_pos, e.answer_len, "icl_cls");
}

EvalPrompt functionPrompt(const ToyWorld& w, uint64_t seed, const std::string& task, int shots) {
  Rng rng = promptRng(seed, kFunction);
  const Episode e = functionEpisode(w, rng, task, shots);
  return cutAt(e, e.answer_pos, e.answer_len, "function:" + task);
}

std::string formatDescription(const std::string& kind) {
  if (kind == "induction")
    return "<bos> s1 .. sL s1 .. sj with L distinct random syllables of both languages (L = 16 by default) "
           "and j in "
           "[1, L-1]; "
           "answer: s(j+1), one token (token induction)";
  if (kind == "concept_copy")
    return "<bos> w1 , .. , wn ; w1 , .. , wm , with n in [4, 8] distinct words of one language and m in "
           "[1, n-1]; answer: all tokens of w(m+1), always a multi-token word (concept copying)";
  if (kind == "translation")
    return "<bos> w1 , .. , wn \u2192 tr(w1) , .. , tr(wm) , with n in [3, 8] distinct words and m in [0, "
           "n-1] "
           "(no trailing comma when m = 0); answer: all tokens of tr(w(m+1)) (list translation)";
  if (kind == "icl_cls")
    return "<bos> x1 : l1 <nl> .. xk : lk <nl> q : with 2-4 categories, the same number of label words drawn "
           "afresh and a fresh random category -> label mapping; every label appears among the k "
           "demonstrations "
           "when k >= labels; all words distinct, one language; answer: the query's label, one token; "
           "label_set: the episode's labels (TR ratio = probability mass on them)";
  if (kind == "function" || kind.rfind("function:", 0) == 0)
    return "<bos> x1 \u2192 f(x1) <nl> .. xk \u2192 f(xk) <nl> q \u2192 with k shots of a word task "
           "(translate_a_b, translate_b_a, antonym_a, successor_a, copy_a) on distinct concepts; answer: all "
           "tokens of f(q) (followed by <nl> in training)";
  fail("toy eval: unknown prompt kind \"", kind,
       "\", expected induction, concept_copy, translation, icl_cls or function");
}

}  // namespace hs::toy
