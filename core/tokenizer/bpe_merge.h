#pragma once
// The BPE merge loop shared by every tokenizer: start from a sequence of symbol ids and repeatedly merge
// the adjacent pair with the best (lowest) priority, leftmost first on ties, until no pair can merge.
// Rank-based BPE (GPT-2, HF tokenizer.json) uses the merge rank as priority; score-based SentencePiece BPE
// (llama2.c, GGUF "llama") uses minus the score of the merged piece. A heap over a linked list keeps it
// O(n log n), so a long prompt without pre-tokenisation (SentencePiece) stays fast.
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hs {

struct MergeResult {
  double priority;  // lower merges first
  int id;           // the merged symbol
};

// Looks up whether two adjacent symbols merge.
using MergeLookup = std::function<std::optional<MergeResult>(int left, int right)>;

std::vector<int> bpeMerge(std::vector<int> symbols, const MergeLookup& lookup);

// Rank table of a merges list: (left id, right id) -> (rank, merged id).
class MergeRanks {
 public:
  void add(int left, int right, int rank, int merged) {
    table_.emplace(key(left, right), std::make_pair(rank, merged));
  }
  std::optional<MergeResult> find(int left, int right) const {
    auto it = table_.find(key(left, right));
    if (it == table_.end()) return std::nullopt;
    return MergeResult{static_cast<double>(it->second.first), it->second.second};
  }
  size_t size() const { return table_.size(); }

 private:
  static uint64_t key(int a, int b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  std::unordered_map<uint64_t, std::pair<int, int>> table_;
};

}  // namespace hs
