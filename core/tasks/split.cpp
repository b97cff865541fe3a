#include "tasks/split.h"

#include <algorithm>
#include <cmath>

#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

Split splitIndices(int n, uint64_t seed, double train, double valid) {
  if (n < 0) fail("splitIndices: negative dataset size ", n);
  if (train < 0 || valid < 0 || train + valid > 1.0 + 1e-12)
    fail("splitIndices: fractions train ", train, " valid ", valid, " must be >= 0 with train + valid <= 1");
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    perm[static_cast<size_t>(i)] = i;
  toy::Rng rng(toy::deriveSeed(seed, kStreamSplit));
  rng.shuffle(perm);
  const int nTrain = static_cast<int>(std::lround(n * train));
  const int nValid = std::min(n - nTrain, static_cast<int>(std::lround(n * valid)));
  Split s;
  s.train.assign(perm.begin(), perm.begin() + nTrain);
  s.valid.assign(perm.begin() + nTrain, perm.begin() + nTrain + nValid);
  s.test.assign(perm.begin() + nTrain + nValid, perm.end());
  for (auto* part : {&s.train, &s.valid, &s.test})
    std::sort(part->begin(), part->end());
  return s;
}

std::vector<int> sampleDemos(const std::vector<int>& pool, int k, int exclude, uint64_t seed) {
  std::vector<int> candidates;
  candidates.reserve(pool.size());
  for (int i : pool)
    if (i != exclude) candidates.push_back(i);
  if (k < 0 || k > static_cast<int>(candidates.size()))
    fail("sampleDemos: ", k, " demonstrations requested but only ", candidates.size(),
         " candidates remain in a pool of ", pool.size(), " without the query");
  toy::Rng rng(toy::deriveSeed(seed, kStreamDemos, static_cast<uint64_t>(exclude + 1)));
  std::vector<int> out;
  out.reserve(static_cast<size_t>(k));
  for (int j : rng.choose(static_cast<int>(candidates.size()), k))
    out.push_back(candidates[static_cast<size_t>(j)]);
  return out;
}

}  // namespace hs
