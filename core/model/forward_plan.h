#pragma once
// Internal to the forward: what Transformer::run decides from a RunRequest before any compute. planForward
// checks the request against the model (every hs::Error a bad request gets comes from there), and returns
// the shapes, the position ids, which fast paths apply, the KV-cache use and the attention masks.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "model/config.h"
#include "model/intervention_apply.h"
#include "model/transformer.h"

namespace hs {

// Causal + padding masks of one forward. Query i (absolute T0 + i) sees key j iff j ≤ T0 + i and j is real;
// sliding layers also need j > T0 + i − window.
struct AttentionMasks {
  at::Tensor blocked;       // [batch or 1, 1, pos, k_pos] true = may not attend; undefined: nothing blocked
  at::Tensor blockedLocal;  // the same for sliding layers, when the window is shorter than k_pos
  at::Tensor queryReal;     // [batch, 1, pos, 1] float32 1 = real query, 0 = padding (padded queries only)
};

struct ForwardPlan {
  // Inputs, masks and positions start on the embedding's device (dev); with a device map each layer gets
  // them, and the residual stream, on its own device. Results live on the head's (home).
  at::Device dev = at::kCPU;
  at::Device home = at::kCPU;
  at::ScalarType dt = at::kFloat;  // compute dtype (the weights')

  // The input: tokens, or the residual stream entering start_layer (fast patching).
  bool fromResid = false;
  int firstLayer = 0;      // start_layer: the first layer that runs
  at::Tensor tokens;       // [batch, pos] int64 on dev (undefined when starting from resid_in)
  int64_t batch = 0;       // rows of the input (rows joining later not counted)
  int64_t pos = 0;         // this forward's positions
  int64_t joinedRows = 0;  // rows that join at later layers (resid_join)
  at::Tensor real;         // [batch, pos] int64 1 = real token, 0 = padding
  at::Tensor positionIds;  // [batch, pos] int64 (or [1, pos] with joining rows, which share their positions)

  // Fast path last_layer_from: the last layer's queries start at this position (0 = every position).
  int64_t tailFrom = 0;

  // The KV cache: cached positions first, then this forward's.
  KVCache* kv = nullptr;
  int64_t cached = 0;        // positions already in the cache (T0)
  int64_t keyPositions = 0;  // cached + pos (T)
  // Fast path shared cache: a read-only cache of batch 1 read by every row, never copied per row.
  bool sharedCache = false;
  bool extendKv = false;  // append this forward's keys and values to the cache once the run has succeeded

  std::vector<ResolvedIntervention> interventions;  // in request order
  AttentionMasks masks;
};

// Checks `req` against the model (`c` with its defaults filled in) and plans the forward. Throws hs::Error
// naming what is wrong; computes nothing of the model.
ForwardPlan planForward(const ModelConfig& c, const RunRequest& req, at::Device dev, at::Device home,
                        at::ScalarType dt);

// "[2, 7, 32]": a tensor's shape as error messages print it.
std::string shapeOf(const at::Tensor& t);

}  // namespace hs
