#pragma once
// Corrupted ICL inputs (docs/architecture.md, "Tasks and prompts"; docs/methods.md), all seeded through
// hs::toy::Rng:
// - shuffled labels (Function Vectors): the demos' labels permuted so that, as far as the label
//   multiset allows, no demo keeps a label equal to its own;
// - shuffled demonstration inputs (inputs permuted across demos) and garbled inputs (each demo input's
//   tokens replaced by random tokens of the same count): both kill task learning, keep the format;
// - labels replaced by numbers 1..k or by random words (a consistent relabeling: kills task recognition,
//   keeps the input -> label mapping learnable);
// - random-token repeats "[bos] r r" for induction scores and multi-token-concept repeats (dual route).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tasks/dataset.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// A permutation perm of [0, keys.size()) (element i receives keys[perm[i]]) with the fewest fixed points
// keys[perm[i]] == keys[i] the multiset allows (max(0, 2m - n), m the largest multiplicity); seeded.
std::vector<int> derangementOf(const std::vector<std::string>& keys, uint64_t seed);

// Demo i gets the outputs (and class label) of demo perm[i], perm = derangementOf(canonical outputs).
std::vector<Example> shuffleLabels(const std::vector<Example>& demos, uint64_t seed);
// Demo i gets the input of demo perm[i], perm = derangementOf(inputs).
std::vector<Example> shuffleInputs(const std::vector<Example>& demos, uint64_t seed);

// A consistent relabeling of demos and query: every distinct canonical label (outputs[0]) of the demos,
// in order of first appearance, maps to a new label; the query's answer is mapped when it is one of them.
struct Relabeled {
  std::vector<Example> demos;
  Example query;
  std::vector<std::pair<std::string, std::string>> mapping;  // (old label, new label)
};
// New labels "1", "2", ..., "k".
Relabeled numberLabels(const std::vector<Example>& demos, const Example& query);
// New labels: distinct words drawn from `words` (which must hold at least k distinct entries); seeded.
Relabeled randomWordLabels(const std::vector<Example>& demos, const Example& query,
                           const std::vector<std::string>& words, uint64_t seed);

// Token ids eligible as random tokens: [lo, hi) without the tokenizer's BOS/EOS.
struct TokenRange {
  int lo = 0, hi = 0;
};
// Every demo input span refilled with random tokens from `range` (same count, so every position and
// span is unchanged); pieces, segment texts and text follow the new ids.
Prompt garbleDemoInputs(const Tokenizer& tok, const Prompt& p, TokenRange range, uint64_t seed);

// "[bos] r r ...": `length` distinct random tokens from `range`, repeated `repeats` times.
struct RepeatSequence {
  std::vector<int> ids;      // [pos]
  std::vector<Span> copies;  // [repeats] span of each copy
  int n_bos = 0;
};
RepeatSequence randomTokenRepeat(int length, int repeats, TokenRange range, int bos_id, uint64_t seed);

// Candidate words whose continuation encoding (" " + word, as after other text) has between
// min_tokens and max_tokens tokens, in input order, duplicates removed.
std::vector<std::string> multiTokenWords(const Tokenizer& tok, const std::vector<std::string>& candidates,
                                         int min_tokens = 2, int max_tokens = 5);

// "[bos] w1 w2 .. wn w1 w2 .. wn": n distinct words drawn from `words`, each encoded as " " + word
// (continuation form), the list repeated `repeats` times; word_spans[copy][i] is word i in that copy.
struct ConceptRepeat {
  std::vector<int> ids;
  std::vector<std::string> words;  // the drawn words, in order
  std::vector<Span> copies;
  std::vector<std::vector<Span>> word_spans;  // [repeats][n_words]
  int n_bos = 0;
};
ConceptRepeat conceptRepeat(const Tokenizer& tok, const std::vector<std::string>& words, int n_words,
                            int repeats, uint64_t seed, std::optional<bool> add_bos = std::nullopt);

}  // namespace hs
