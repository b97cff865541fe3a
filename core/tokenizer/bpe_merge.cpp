#include "tokenizer/bpe_merge.h"

#include <queue>

namespace hs {
namespace {

struct Candidate {
  double priority;
  size_t left;  // index of the left symbol (stable: symbols never move, merged ones die)
  int leftId, rightId, merged;
  bool operator>(const Candidate& o) const {
    if (priority != o.priority) return priority > o.priority;
    return left > o.left;
  }
};

}  // namespace

std::vector<int> bpeMerge(std::vector<int> symbols, const MergeLookup& lookup) {
  const size_t n = symbols.size();
  if (n < 2) return symbols;
  // Doubly linked list over positions; a merged-away symbol gets alive=false.
  std::vector<long> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<long>(i) - 1;
    next[i] = (i + 1 < n) ? static_cast<long>(i + 1) : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](size_t left) {
    const long right = next[left];
    if (right < 0) return;
    if (auto m = lookup(symbols[left], symbols[right]))
      heap.push({m->priority, left, symbols[left], symbols[right], m->id});
  };
  for (size_t i = 0; i + 1 < n; ++i)
    consider(i);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Stale entries: a side was merged away or changed since the candidate was pushed.
    if (!alive[c.left] || symbols[c.left] != c.leftId) continue;
    const long right = next[c.left];
    if (right < 0 || symbols[right] != c.rightId) continue;
    symbols[c.left] = c.merged;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = static_cast<long>(c.left);
    if (prev[c.left] >= 0) consider(static_cast<size_t>(prev[c.left]));
    consider(c.left);
  }
  std::vector<int> out;
  for (long i = 0; i >= 0; i = next[i])
    out.push_back(symbols[i]);
  return out;
}

}  // namespace hs
