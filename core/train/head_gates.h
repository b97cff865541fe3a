#pragma once
// Per-head L0 gates (Louizos et al. 2018, "Learning sparse neural networks through L0 regularization"), as
// Voita et al. 2019 used them to prune attention heads: each head's output (hook_z) is multiplied by a
// stochastic gate z in [0, 1] drawn from a hard concrete distribution with a learned log α. The expected
// number of open gates is differentiable, so a penalty on it teaches the model to do its work with fewer
// heads. After training the gates are made deterministic and folded into the weights: W_O's columns of a
// head are scaled by its gate, and a head whose gate is exactly 0 is removed (its q, k, v and o rows are
// zeroed), which leaves an ordinary checkpoint of the same architecture.
#include <ATen/core/Tensor.h>

#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "results/results.h"

namespace hs {

// The hard concrete distribution's constants: temperature β, stretch interval (γ, ζ).
struct HardConcrete {
  static constexpr double kBeta = 2.0 / 3.0;
  static constexpr double kGamma = -0.1;
  static constexpr double kZeta = 1.1;
};

// A training-time gate for each entry of logAlpha, from uniform noise u of the same shape (0 < u < 1):
// s = sigmoid((log u − log(1 − u) + log α) / β), z = clamp(s·(ζ − γ) + γ, 0, 1).
at::Tensor hardConcreteSample(const at::Tensor& logAlpha, const at::Tensor& u);

// P(z > 0) per gate: sigmoid(log α − β·log(−γ/ζ)); its sum is the L0 penalty.
at::Tensor hardConcreteOpenProbability(const at::Tensor& logAlpha);

// The test-time gate: clamp(sigmoid(log α)·(ζ − γ) + γ, 0, 1) (exactly 0 or 1 for large |log α|).
at::Tensor hardConcreteDeterministic(const at::Tensor& logAlpha);

// Folds gates [n_layers, n_heads] into the weights in place: W_O's columns of head h of layer l are scaled
// by gates[l][h]; a head with gate 0 also gets zero q rows (and zero k, v rows when it has its own kv
// head), so its pattern is uniform and it writes nothing. Returns the removed heads, layer-major.
std::vector<HeadRef> foldHeadGates(ModelWeights& w, const ModelConfig& c, const at::Tensor& gates);

}  // namespace hs
