#pragma once
// Trains a Transformer from scratch on a deterministic stream of batches: AdamW, linear warm-up then
// cosine decay, gradient clipping, resumable checkpoints. The batch for step s depends only on s, so
// a run resumed from a checkpoint continues exactly as one uninterrupted run would.
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/intervention.h"
#include "model/weights.h"

namespace hs {

struct TrainBatch {
  at::Tensor tokens;     // [batch, pos] int64
  at::Tensor loss_mask;  // [batch, pos] float: 1 where the token at pos is a target (predicted from pos-1)
  std::vector<std::string> kinds;  // per row, for per-kind loss reporting
};

struct TrainConfig {
  int64_t steps = 1000;
  double lr = 3e-3;
  double min_lr_ratio = 0.1;  // cosine decays to lr * min_lr_ratio
  int64_t warmup = 100;
  double weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.95;
  double grad_clip = 1.0;
  uint64_t seed = 1;
  int64_t checkpoint_every = 500;  // steps; 0 = only at the end
  int64_t log_every = 50;
  int threads = 0;  // 0 = keep torch's default
  // > 0: stop (with a checkpoint) after this step; the schedule still spans `steps`, so a long run
  // can be done in pieces and resumed.
  int64_t stop_after = -1;
};

struct TrainProgress {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  std::map<std::string, double> kind_loss;  // mean loss per sample kind over the last log window
  double seconds = 0;
};

struct TrainResult {
  std::vector<TrainProgress> curve;  // one entry per log window
  double seconds = 0;
  int64_t steps_done = 0;
  bool finished = false;  // steps_done == steps
  // The numeric kernels (numeric_kernels.h) of every piece of the run, one entry per distinct record: more
  // than one means the pieces ran on different kernels and the result is not bit for bit the uninterrupted
  // run's.
  nlohmann::json numeric_kernels = nlohmann::json::array();
};

// What a training stage adds to plain next-token training (the head-pruning stage of the toy recipe).
struct TrainExtension {
  const ModelWeights* start = nullptr;  // start from a copy of these weights instead of initWeights
  std::vector<at::Tensor> params;       // extra leaves, optimised in a second group without weight decay
  double lr_ratio = 1.0;                // their learning rate: the schedule's × lr_ratio
  // The interventions of the forward of a step (e.g. gates drawn for that step from `params`).
  std::function<std::vector<Intervention>(int64_t step)> interventions;
  // A term added to the loss of every step (reported as the kind "penalty"); may be empty.
  std::function<at::Tensor()> penalty;
  nlohmann::json signature;  // the extension's settings, part of the checkpoint's signature
};

// One log window as training.json and the trainer state record it, and back (fails on a missing field).
nlohmann::json progressJson(const TrainProgress& p);
TrainProgress progressFromJson(const nlohmann::json& j);

// Learning rate at a step: linear warm-up to lr, then cosine to lr * min_lr_ratio at `steps`.
double learningRate(const TrainConfig& cfg, int64_t step);

// Fresh weights for a config (normal(0, 0.02); residual output projections scaled by 1/sqrt(2·layers);
// norms at 1), drawn from a torch generator seeded with `seed`.
ModelWeights initWeights(const ModelConfig& config, uint64_t seed);

// Runs training. `checkpointDir` holds the resumable state (model.safetensors, extra.safetensors with the
// extension's parameters, optimizer.pt, trainer_state.json); when it already holds a state for this config,
// training resumes from it. `onProgress` is called every log window (stderr printing is the caller's
// choice). The extension's parameters are updated in place.
TrainResult train(const ModelConfig& config, const TrainConfig& cfg,
                  const std::function<TrainBatch(int64_t step)>& batchAt, const std::string& checkpointDir,
                  const std::function<void(const TrainProgress&)>& onProgress, ModelWeights* out = nullptr,
                  TrainExtension* extension = nullptr);

}  // namespace hs
