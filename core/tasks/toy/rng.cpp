#include "tasks/toy/rng.h"

#include <limits>
#include <numeric>

#include "util/error.h"

namespace hs::toy {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t deriveSeed(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

uint64_t Rng::uniform(uint64_t n) {
  if (n == 0) fail("Rng::uniform: empty range");
  // 2^64 = q*n + r. Accept draws below q*n = 2^64 - r, so every residue is hit by exactly q raw values.
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t r = (max % n + 1) % n;
  if (r == 0) return engine_() % n;
  const uint64_t limit = max - r + 1;  // = 2^64 - r, representable since r >= 1
  for (;;) {
    uint64_t x = engine_();
    if (x < limit) return x % n;
  }
}

int Rng::uniformInt(int lo, int hi) {
  if (hi < lo) fail("Rng::uniformInt: empty range [", lo, ", ", hi, "]");
  return lo + static_cast<int>(uniform(static_cast<uint64_t>(hi - lo) + 1));
}

double Rng::unit() {
  return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0);
}

size_t Rng::weighted(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0)) fail("Rng::weighted: negative or NaN weight ", w);
    total += w;
  }
  if (!(total > 0)) fail("Rng::weighted: weights sum to ", total, ", expected > 0");
  double r = unit() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (r < weights[i]) return i;
    r -= weights[i];
  }
  // Rounding left r just above the last bucket: return the last non-zero weight.
  for (size_t i = weights.size(); i-- > 0;)
    if (weights[i] > 0) return i;
  return 0;
}

std::vector<int> Rng::choose(int n, int k) {
  if (k < 0 || k > n) fail("Rng::choose: cannot pick ", k, " distinct values from ", n);
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (int i = 0; i < k; ++i) {
    size_t j = static_cast<size_t>(i) + static_cast<size_t>(uniform(static_cast<uint64_t>(n - i)));
    std::swap(all[static_cast<size_t>(i)], all[j]);
  }
  all.resize(static_cast<size_t>(k));
  return all;
}

}  // namespace hs::toy
