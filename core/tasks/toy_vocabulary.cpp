#include "tasks/toy_vocabulary.h"

#include <optional>
#include <string>

#include "tasks/toy/world.h"

namespace hs {

bool isToyVocabulary(int64_t modelVocabSize, const Tokenizer* tok) {
  if (!tok) return false;
  static const toy::ToyWorld w = toy::ToyWorld::build();
  if (modelVocabSize != w.vocabSize()) return false;
  for (int id = 0; id < w.vocabSize(); ++id) {
    const std::optional<int> got = tok->idOf(w.tokens[static_cast<size_t>(id)]);
    if (!got || *got != id) return false;
  }
  return true;
}

}  // namespace hs
