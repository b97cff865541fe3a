// The tokens the dual-route prompts and list tasks are built from (docs/methods.md, "Induction and the dual
// route"): random filler tokens, an encoded running-text corpus and real multi-token words, for the toy world
// or for any tokenizer. Data only: the prompts themselves are built in analysis/methods/dual_route.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/toy/world.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// Where the dual-route prompts take their tokens from.
struct DualRouteVocab {
  int64_t bos = -1;                         // prepended when >= 0
  int64_t sep = -1;                         // between the two halves when >= 0
  std::vector<int64_t> random_tokens;       // filler "random": fillers and random-token entities
  std::vector<int64_t> corpus;              // filler "corpus": encoded running text (no BOS)
  std::vector<std::vector<int64_t>> words;  // real words of >= 2 tokens (empty: no concept scores)
  std::string source;                       // one line for provenance
};

// The ids of `text` as they follow other text (no BOS, no SentencePiece dummy prefix of its own): " word"
// gives the word's mid-sentence tokens under byte-level and SentencePiece tokenizers alike.
std::vector<int64_t> continuationIds(const Tokenizer& tok, const std::string& text);
// The newline token as the official code takes it: the last id of "\n" encoded without BOS.
int64_t newlineId(const Tokenizer& tok);

// The toy world's vocabulary (no corpus: fillers are random syllables); `sep` is a token string of the world
// ("→" by default, "" = no separator).
DualRouteVocab toyDualRouteVocab(const toy::ToyWorld& w, const std::string& sep = "\xE2\x86\x92");
// Any other model: random tokens from [vocab/4, 3·vocab/4) minus the tokenizer's bos/eos; the corpus
// `corpusFile` encoded (no BOS; "" = none); words from `wordsFile` (one a line, kept when " word" is 2..5
// tokens), or when that is "" the distinct alphabetic words of at least 3 letters of the corpus text that
// are 2..5 tokens; `sep` encoded without BOS must give one token ("\n": the newline token; "" = none).
DualRouteVocab modelDualRouteVocab(const Tokenizer& tok, int64_t vocabSize, const std::string& corpusFile,
                                   const std::string& wordsFile, const std::string& sep);

}  // namespace hs
