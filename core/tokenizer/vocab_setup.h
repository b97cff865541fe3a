#pragma once
// Setup shared by the merge-rank BPE tokenizers (byte-level and SentencePiece-style): the id -> piece
// tables over the vocabulary and the added tokens, the byte -> id lookup, the merge ranks, and the id
// checks and lookups that read them. Every error names `source`.
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_merge.h"

namespace hs::vocabsetup {

using Vocab = std::unordered_map<std::string, int>;

// Ids are bounded like a model's vocabulary (core/model/config_limits.h kMaxVocab).
constexpr int kMaxTokenIds = 1 << 22;
using Merges = std::vector<std::pair<std::string, std::string>>;

// Sizes the tables to the largest id and fills them: pieces[id] is the vocabulary piece, or an added
// token's content (an added token may reuse a vocabulary id, GPT-2's "<|endoftext|>"). Ids in neither are
// not present. Throws on a negative id or one of kMaxTokenIds or more.
void buildIdTables(const Vocab& vocab, const std::vector<AddedToken>& added, const std::string& source,
                   std::vector<std::string>& pieces, std::vector<bool>& present, std::vector<bool>& isAdded);

// byteIds[b] = the id of pieceOfByte(b), -1 where the vocabulary lacks it.
void buildByteIds(const Vocab& vocab, const std::function<std::string(unsigned char)>& pieceOfByte,
                  int (&byteIds)[256]);

// One rank per merge, in list order. Throws when a merge uses a piece missing from the vocabulary.
void buildMergeRanks(const Vocab& vocab, const Merges& merges, const std::string& source, MergeRanks& ranks);

// Throws unless id is in range and has a piece (present.size() is the vocabulary size).
void checkId(int id, const std::vector<bool>& present, const std::string& source);

// The id of a vocabulary piece, else of an added token with that content.
std::optional<int> idOf(const Vocab& vocab, const AddedTokenSplitter& added, const std::string& piece);

}  // namespace hs::vocabsetup
