#include "tasks/toy/episodes.h"

#include <algorithm>

#include "tasks/toy/tasks.h"
#include "util/error.h"

namespace hs::toy {

namespace {

// Append tokens with one mask value.
void put(Episode& e, const std::vector<int>& ids, uint8_t mask) {
  for (int id : ids) {
    e.tokens.push_back(id);
    e.loss_mask.push_back(mask);
  }
}
void put(Episode& e, int id, uint8_t mask) {
  put(e, std::vector<int>{id}, mask);
}

// A concept of `pool` not in `used`, drawn until one is found; -1 after 10000 draws that all were used.
int pickUnused(Rng& rng, const std::vector<int>& pool, const std::vector<int>& used) {
  int c = rng.pick(pool);
  for (int attempt = 0; std::find(used.begin(), used.end(), c) != used.end(); ++attempt) {
    if (attempt > 10000) return -1;
    c = rng.pick(pool);
  }
  return c;
}

Episode begin() {
  Episode e;
  put(e, tok::kBos, 0);
  return e;
}

}  // namespace

std::vector<int> randomSpan(const ToyWorld& w, Rng& rng, int len) {
  std::vector<int> pool = w.syllables[0];
  pool.insert(pool.end(), w.syllables[1].begin(), w.syllables[1].end());
  std::vector<int> span;
  for (int i : rng.choose(static_cast<int>(pool.size()), len))
    span.push_back(pool[static_cast<size_t>(i)]);
  return span;
}

Episode inductionEpisode(const ToyWorld& w, const std::vector<int>& span, int repeats) {
  if (span.size() < 2 || repeats < 2)
    fail("toy induction episode: span of ", span.size(), " tokens x ", repeats,
         " repeats, expected >= 2 x >= 2");
  Episode e = begin();
  put(e, span, 0);
  for (int r = 1; r < repeats; ++r) {
    e.item_starts.push_back(e.tokens.size());
    put(e, span, 1);
  }
  // The token that opens the second repeat follows a span end never seen before: unpredictable.
  e.loss_mask[1 + span.size()] = 0;
  e.answer_pos = 1 + span.size();
  e.answer_len = span.size();
  return e;
}

Episode listEpisode(const ToyWorld& w, const std::vector<int>& concepts, Lang from, Lang to) {
  if (concepts.empty()) fail("toy list episode: empty word list");
  Episode e = begin();
  for (size_t i = 0; i < concepts.size(); ++i) {
    if (i) put(e, tok::kComma, 0);
    put(e, w.word(from, concepts[i]), 0);
  }
  put(e, from == to ? tok::kSemi : tok::kArrow, 0);
  e.answer_pos = e.tokens.size();
  for (size_t i = 0; i < concepts.size(); ++i) {
    if (i) put(e, tok::kComma, 1);
    e.item_starts.push_back(e.tokens.size());
    put(e, w.word(to, concepts[i]), 1);
  }
  e.answer_len = e.tokens.size() - e.answer_pos;
  return e;
}

Episode clsEpisode(const ToyWorld& w, Rng& rng, int n_labels, int shots, Lang lang) {
  if (n_labels < 2 || n_labels > w.numCategories() || n_labels > static_cast<int>(w.label_tokens.size()))
    fail("toy classification episode: ", n_labels, " labels, expected 2..", w.numCategories());
  if (shots < 0) fail("toy classification episode: ", shots, " shots");
  Episode e = begin();
  // Fresh categories, fresh label words and a fresh bijection: label_set[i] names categories[i].
  for (int k : rng.choose(w.numCategories(), n_labels))
    e.categories.push_back(k);
  for (int j : rng.choose(static_cast<int>(w.label_tokens.size()), n_labels))
    e.label_set.push_back(w.label_tokens[static_cast<size_t>(j)]);

  // Category slot (index into e.categories) of each demonstration: all slots once when shots allow it.
  std::vector<int> slots;
  for (int i = 0; i < shots; ++i)
    slots.push_back(shots >= n_labels && i < n_labels
                        ? i
                        : static_cast<int>(rng.uniform(static_cast<uint64_t>(n_labels))));
  rng.shuffle(slots);
  slots.push_back(static_cast<int>(rng.uniform(static_cast<uint64_t>(n_labels))));  // the query

  std::vector<int> used;  // concepts, kept distinct so the query is never a copied demonstration
  for (int slot : slots) {
    const auto& pool = w.concepts_of_category[static_cast<size_t>(e.categories[static_cast<size_t>(slot)])];
    const int c = pickUnused(rng, pool, used);
    if (c < 0)
      fail("toy classification episode: category ", e.categories[static_cast<size_t>(slot)], " has ",
           pool.size(), " words, too few for ", shots, " shots");
    used.push_back(c);
    put(e, w.word(lang, c), 0);
    put(e, tok::kColon, 0);
    e.item_starts.push_back(e.tokens.size());
    put(e, e.label_set[static_cast<size_t>(slot)], 1);
    put(e, tok::kNl, 0);
  }
  e.answer_pos = e.item_starts.back();
  e.answer_len = 1;
  return e;
}

Episode functionEpisode(const ToyWorld& w, Rng& rng, const std::string& task, int shots) {
  if (shots < 0 || shots + 1 > w.numConcepts()) fail("toy function episode: ", shots, " shots");
  Episode e = begin();
  for (int c : rng.choose(w.numConcepts(), shots + 1)) {
    auto [x, y] = wordTaskPair(w, task, c);
    put(e, x, 0);
    put(e, tok::kArrow, 0);
    e.item_starts.push_back(e.tokens.size());
    put(e, y, 1);
    put(e, tok::kNl, 1);  // the end of the output is part of the answer: generation knows when to stop
  }
  e.answer_pos = e.item_starts.back();
  e.answer_len = e.tokens.size() - 1 - e.answer_pos;
  return e;
}

Episode categoryEpisode(const ToyWorld& w, Rng& rng, int shots, Lang lang, int sep) {
  if (shots < 0 || shots + 1 > w.numConcepts()) fail("toy category episode: ", shots, " shots");
  if (sep != tok::kEq && sep != tok::kColon)
    fail("toy category episode: separator token ", sep, ", expected \"=\" or \":\"");
  if (w.numCategories() > 10)
    fail("toy category episode: ", w.numCategories(), " categories, the digits name at most 10");
  Episode e = begin();
  for (int c : rng.choose(w.numConcepts(), shots + 1)) {
    put(e, w.word(lang, c), 0);
    put(e, sep, 0);
    e.item_starts.push_back(e.tokens.size());
    put(e, tok::kDigit0 + w.category[static_cast<size_t>(c)], 1);
    put(e, tok::kNl, 0);
  }
  e.answer_pos = e.item_starts.back();
  e.answer_len = 1;
  return e;
}

Episode fuzzyListEpisode(const ToyWorld& w, Rng& rng, int n, Lang lang, int sep) {
  if (n < 1 || 2 * n > w.numConcepts()) fail("toy fuzzy list episode: ", n, " words per list");
  if (sep != tok::kComma && sep != tok::kColon)
    fail("toy fuzzy list episode: separator token ", sep, ", expected \",\" or \":\"");
  Episode e = begin();
  const std::vector<int> first = rng.choose(w.numConcepts(), n);
  std::vector<int> used = first;  // concepts, kept distinct so no word of the second list is a copy
  std::vector<int> second;
  for (int c : first) {
    const auto& pool = w.concepts_of_category[static_cast<size_t>(w.category[static_cast<size_t>(c)])];
    const int v = pickUnused(rng, pool, used);
    if (v < 0)
      fail("toy fuzzy list episode: category ", w.category[static_cast<size_t>(c)], " has ", pool.size(),
           " words, too few for lists of ", n);
    used.push_back(v);
    second.push_back(v);
  }
  for (int i = 0; i < n; ++i) {
    if (i) put(e, sep, 0);
    put(e, w.word(lang, first[static_cast<size_t>(i)]), 0);
  }
  put(e, tok::kBar, 0);
  e.answer_pos = e.tokens.size();
  for (int i = 0; i < n; ++i) {
    if (i) put(e, sep, 0);
    e.item_starts.push_back(e.tokens.size());
    const std::vector<int>& v = w.word(lang, second[static_cast<size_t>(i)]);
    put(e, v.front(), 1);
    put(e, std::vector<int>(v.begin() + 1, v.end()), 0);
  }
  e.answer_len = e.tokens.size() - e.answer_pos;
  return e;
}

}  // namespace hs::toy
