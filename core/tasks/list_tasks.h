#pragma once
// The dual-route study's list tasks for real tokenizers (docs/methods.md, "Induction and the dual route";
// official scripts/vocablist_ablation.py, VocabListDataset and NonsenseListDataset): a numbered list of
// `items` words, then the list again with each word transformed, cut before the last transformed word:
//
//   <bos>French vocab:\n 1. w1\n 2. w2\n ... 10. w10 \n English translation:\n 1. t1\n ... 10.
//
// answer: the first token of " t10". Every piece is tokenized on its own as the official code does:
// the headers as text (the first with the tokenizer's own BOS), "i." as text, each word as it follows a
// space (continuationIds), the newline as its last token (newlineId).
//
// Task ids (word lists from the dual-route repository's data folder, `dataDir`):
//   translation_fr, translation_de, translation_es  conneauetal_2017/en-{fr,de,es}.txt "english foreign":
//                       foreign → English ("French vocab:" / "English translation:"), pairs whose two
//                       words are equal dropped
//   antonym, synonym    nguyenetal_2017/all_{antonyms,synonyms}.csv word1 → word2 ("Words:" / "Antonyms:")
//   copy_words          nguyenetal_2017/all_synonyms.csv word1 → word1 ("English vocab:" twice): verbatim
//   upper               nguyenetal_2017/all_antonyms.csv lower(word1) → UPPER(word1) ("Lowercase Words:" /
//                       "Capitalized Words:"): the official "CAPS" task
//   nonsense            words of 2 random corpus tokens (no newline), copied ("Vocab:" twice): needs
//                       v.corpus, not dataDir
// Every task but copy_words and nonsense keeps only pairs whose two words start with different tokens (the
// official filter), so the first answer token says which word was produced.
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/dual_route_vocab.h"
#include "tasks/next_token_task.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct ListTaskOptions {
  int items = 10;  // words per list, the query word included (official seq_len)
  int n = 64;      // prompts (official max_n 1024): the first n pairs of a seeded shuffle
  uint64_t seed = 1;
};

// The ids above, in this order.
const std::vector<std::string>& listTaskIds();
// One task: n prompts (fewer when the list holds fewer usable pairs), their answers, id = `id`. Errors name
// the file and what was wrong.
NextTokenTask listTask(const std::string& id, const Tokenizer& tok, const std::string& dataDir,
                       const DualRouteVocab& v, const ListTaskOptions& o);

}  // namespace hs
