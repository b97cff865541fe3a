#pragma once
// One episode of each kind as token ids plus a loss mask. The training mixture packs these and the
// evaluation prompts cut them at the final answer, so both see exactly the same format:
//   induction       <bos> s1 .. sL s1 .. sL [s1 .. sL ...]        (L distinct syllables, 2-4 repeats)
//   copy list       <bos> w1 , w2 , .. wn ; w1 , w2 , .. wn       (one language)
//   translate list  <bos> w1 , .. wn → tr(w1) , .. tr(wn)          (A → B or B → A)
//   classification  <bos> x1 : l(x1) <nl> .. xk : l(xk) <nl> q : l(q) <nl>
//   function        <bos> x1 → f(x1) <nl> .. xk → f(xk) <nl> q → f(q) <nl>
//   category        <bos> x1 = d(x1) <nl> .. q = d(q) <nl>           (d = the digit of a word's category;
//                                                                     the separator may be ":" instead)
//   fuzzy list      <bos> w1 , .. wn | v1 , .. vn                    (v_i another word of w_i's category;
//                                                                     the separator may be ":" instead)
// loss_mask[t] == 1 marks tokens[t] as a training target (the logits at t-1 predict it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/toy/rng.h"
#include "tasks/toy/world.h"

namespace hs::toy {

struct Episode {
  std::vector<int> tokens;          // [len] starts with <bos>
  std::vector<uint8_t> loss_mask;   // [len] 1 where tokens[t] is a target
  std::vector<size_t> item_starts;  // start of every answer item: repeat/list words/labels/outputs (see .cpp)
  size_t answer_pos = 0;            // start of the final answer (query label / output, 2nd repeat)
  size_t answer_len = 0;
  std::vector<int> label_set;   // classification: this episode's label word ids, in category order
  std::vector<int> categories;  // classification: the episode's categories; label_set[i] is theirs
};

// <bos> + `span` repeated `repeats` times; span = distinct syllable ids of either language. Mask: every
// repeated token except the first of the second repeat (which no context can predict).
// item_starts = start of each repeat after the first.
Episode inductionEpisode(const ToyWorld& w, const std::vector<int>& span, int repeats);
// A random span of `len` distinct syllables drawn from both languages.
std::vector<int> randomSpan(const ToyWorld& w, Rng& rng, int len);

// <bos> list(from) SEP list(to): SEP is ";" when from == to (copy) and "→" otherwise (translation). Mask: the
// whole second list (words and commas). item_starts = start of each word of the second list.
Episode listEpisode(const ToyWorld& w, const std::vector<int>& concepts, Lang from, Lang to);

// Classification episode: n_labels categories and n_labels label words drawn afresh, a fresh random
// bijection category -> label, `shots` demonstrations and one query, all in language `lang`, all concepts
// distinct. When shots >= n_labels every category (so every label) appears among the demonstrations.
// Mask: every label position. item_starts = label positions; answer = the query's label.
Episode clsEpisode(const ToyWorld& w, Rng& rng, int n_labels, int shots, Lang lang);

// Function episode x -> f(x) for a word task (tasks.h), `shots` demonstrations then the query, distinct
// concepts. Mask: every output and the <nl> that ends it. item_starts = output starts; answer = query output.
Episode functionEpisode(const ToyWorld& w, Rng& rng, const std::string& task, int shots);

// Category naming: `shots` demonstrations then the query, each "x = d <nl>" with d the fixed digit token of
// x's category (kDigit0 + category), all in language `lang`, distinct concepts. A fixed attribute, like a
// fact from pre-training: it gives the model the category as a feature, over which the classification
// episodes' fresh label mappings can then be learned in context. `sep` is "=" (tok::kEq) or ":"
// (tok::kColon, the classification episodes' separator: the model then has to know a word's category at
// the very position where a classification episode reads it). Mask: every digit. item_starts = digits.
Episode categoryEpisode(const ToyWorld& w, Rng& rng, int shots, Lang lang, int sep = tok::kEq);

// Category-level (fuzzy) copying: a list of n words, "|", then n other words of the same categories in the
// same order, all in language `lang`, all 2n concepts distinct. Only the category of the next word (its
// first syllable) is predictable, and only by matching the current word's category to the first list's:
// the match a classification query needs to find the demonstrations of its category. Mask: the first
// syllable of every second-list word. item_starts = those positions; answer = the whole second list.
// `sep` separates the words of both lists: "," (tok::kComma) or ":" (tok::kColon, the classification
// episodes' separator: the query's category is then matched from a ":" to what follows the earlier ":"s,
// as a classification query matches its demonstrations' labels).
Episode fuzzyListEpisode(const ToyWorld& w, Rng& rng, int n, Lang lang, int sep = tok::kComma);

}  // namespace hs::toy
