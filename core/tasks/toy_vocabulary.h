#pragma once
// The one test of "is this the toy model?": the tokenizer's vocabulary is the default toy world's token table
// (same ids) and the model's vocabulary has its size. Methods choose their toy defaults by it (the induction
// records' toy tasks and token range, the toy corpus of mean ablation) and record that they did; the GUI
// shows it beside the model and offers the toy tasks only then.
#include <cstdint>

#include "tokenizer/tokenizer.h"

namespace hs {

bool isToyVocabulary(int64_t modelVocabSize, const Tokenizer* tok);

}  // namespace hs
