#pragma once
// Deterministic seeded train/valid/test splits (70/9/21 as in the Function Vectors and SITE work) and
// seeded demonstration sampling. All draws go through hs::toy::Rng (mt19937_64 + our own uniform), so a
// (dataset size, seed) pair gives the same split on every platform.
#include <cstdint>
#include <vector>

namespace hs {

// Stream tags so that splits, demo draws and corruptions of one user seed never share draws.
enum TaskStream : uint64_t {
  kStreamSplit = 0x73706c6974ULL,  // "split"
  kStreamDemos = 0x64656d6f73ULL,  // "demos"
  kStreamCorrupt = 0x636f7272ULL,  // "corr"
};

struct Split {
  std::vector<int> train, valid, test;  // example indices, each part sorted ascending
};

// n_train = round(n * train), n_valid = round(n * valid), test = the rest. Fractions in [0, 1] with
// train + valid <= 1. The partition is a seeded random permutation; parts are disjoint and cover [0, n).
Split splitIndices(int n, uint64_t seed, double train = 0.7, double valid = 0.09);

// k distinct indices drawn from `pool` without `exclude` (the query; -1 for none), in random order.
// Deterministic in (pool, k, exclude, seed). Throws when fewer than k candidates remain.
std::vector<int> sampleDemos(const std::vector<int>& pool, int k, int exclude, uint64_t seed);

}  // namespace hs
