#pragma once
// Heads that write nothing into the residual stream: every column of their W_O slice is exactly zero (and
// there is no output bias to speak for them). Pruned heads look like this (the toy recipe's head-pruning
// stage closes heads so); analyses still give them a cell, with a score of zero on every causal measure.
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "results/results.h"

namespace hs {

// Every silent head, in layer-major order.
std::vector<HeadRef> silentHeads(const ModelWeights& w, const ModelConfig& c);

}  // namespace hs
