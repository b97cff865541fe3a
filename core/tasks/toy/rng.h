#pragma once
// Portable seeded sampling for the toy world. Every draw goes through std::mt19937_64, whose raw output the
// C++ standard fixes bit for bit; the std::*_distribution classes are deliberately NOT used because their
// algorithms differ between standard libraries (libstdc++ vs libc++ vs MSVC), and the world, the training
// stream and the evaluation prompts must be identical wherever HeadScope is built.
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace hs::toy {

// SplitMix64 finaliser: a bijection on 64 bits with full avalanche. Used to turn (seed, stream, index) into
// independent engine seeds, so sample i depends on (seed, i) only.
uint64_t mix64(uint64_t x);

// Seed for item `index` of stream `stream` under the user seed `seed`.
uint64_t deriveSeed(uint64_t seed, uint64_t stream, uint64_t index = 0);

// Stream tags: different consumers of one user seed never share draws.
enum Stream : uint64_t {
  kStreamWorld = 0x776f726c64ULL,  // "world"
  kStreamTrain = 0x747261696eULL,  // "train"
  kStreamEval = 0x6576616cULL,     // "eval"
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t next() { return engine_(); }
  // Uniform in [0, n), n >= 1, by rejection: draws at or above the largest multiple of n are redrawn, so
  // every residue is equally likely (no modulo bias).
  uint64_t uniform(uint64_t n);
  // Uniform in [lo, hi], both inclusive.
  int uniformInt(int lo, int hi);
  // Uniform double in [0, 1) from the top 53 bits of one draw.
  double unit();
  bool bernoulli(double p) { return unit() < p; }
  // Index i with probability weights[i] / sum(weights); weights >= 0, sum > 0.
  size_t weighted(const std::vector<double>& weights);
  // k distinct values from [0, n), in random order (partial Fisher–Yates).
  std::vector<int> choose(int n, int k);

  // Fisher–Yates with our own uniform().
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) {
      size_t j = static_cast<size_t>(uniform(i));
      std::swap(v[i - 1], v[j]);
    }
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(v.size()))];
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace hs::toy
