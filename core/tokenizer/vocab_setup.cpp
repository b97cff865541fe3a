#include "tokenizer/vocab_setup.h"

#include <algorithm>

#include "util/error.h"

namespace hs::vocabsetup {

void buildIdTables(const Vocab& vocab, const std::vector<AddedToken>& added, const std::string& source,
                   std::vector<std::string>& pieces, std::vector<bool>& present, std::vector<bool>& isAdded) {
  int maxId = -1;
  for (const auto& [p, id] : vocab) {
    if (id < 0) fail(source, ": vocabulary entry \"", p, "\" has negative id ", id);
    maxId = std::max(maxId, id);
  }
  for (const AddedToken& t : added) {
    if (t.id < 0) fail(source, ": added token \"", t.content, "\" has negative id ", t.id);
    maxId = std::max(maxId, t.id);
  }
  // The tables are sized by the largest id: bound it like a model's vocabulary (4194304 ids).
  if (maxId >= kMaxTokenIds)
    fail(source, ": token id ", maxId, " is out of range 0..", kMaxTokenIds - 1,
         " (the limit on vocabulary ids)");
  pieces.assign(maxId + 1, std::string());
  present.assign(maxId + 1, false);
  isAdded.assign(maxId + 1, false);
  for (const auto& [p, id] : vocab) {
    pieces[id] = p;
    present[id] = true;
  }
  for (const AddedToken& t : added) {
    if (t.id < 0) fail(source, ": added token \"", t.content, "\" has negative id ", t.id);
    pieces[t.id] = t.content;
    present[t.id] = true;
    isAdded[t.id] = true;
  }
}

void buildByteIds(const Vocab& vocab, const std::function<std::string(unsigned char)>& pieceOfByte,
                  int (&byteIds)[256]) {
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(pieceOfByte(static_cast<unsigned char>(b)));
    byteIds[b] = it == vocab.end() ? -1 : it->second;
  }
}

void buildMergeRanks(const Vocab& vocab, const Merges& merges, const std::string& source, MergeRanks& ranks) {
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    auto ia = vocab.find(a), ib = vocab.find(b), im = vocab.find(a + b);
    if (ia == vocab.end() || ib == vocab.end() || im == vocab.end())
      fail(source, ": merge ", r, " \"", a, " ", b, "\" uses a piece that is not in the vocabulary (\"",
           ia == vocab.end() ? a : (ib == vocab.end() ? b : a + b), "\")");
    ranks.add(ia->second, ib->second, static_cast<int>(r), im->second);
  }
}

void checkId(int id, const std::vector<bool>& present, const std::string& source) {
  const int vocabSize = static_cast<int>(present.size());
  if (id < 0 || id >= vocabSize)
    fail(source, ": token id ", id, " is out of range (vocab size ", vocabSize, ")");
  if (!present[id])
    fail(source, ": token id ", id, " has no entry in the vocabulary (vocab size ", vocabSize, ")");
}

std::optional<int> idOf(const Vocab& vocab, const AddedTokenSplitter& added, const std::string& piece) {
  auto it = vocab.find(piece);
  if (it != vocab.end()) return it->second;
  for (const AddedToken& t : added.tokens())
    if (t.content == piece) return t.id;
  return std::nullopt;
}

}  // namespace hs::vocabsetup
