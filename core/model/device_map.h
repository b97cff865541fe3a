#pragma once
// Where each part of a model lives: the token (and position) embeddings, every layer, the head (final norm
// and unembedding). One device for everything, layers split across several GPUs (`cuda:0,cuda:1`), or the
// last N layers and the head on a GPU with the rest on the CPU (`--device cuda --gpu-layers N`, as
// llama.cpp's n_gpu_layers: the unembedding is the largest matrix product of a forward, so it goes with
// the GPU layers; the embedding is a gather and stays on the CPU).
//
// The forward moves the residual stream [batch, pos, d_model] between layers on different devices; logits,
// captured activations and interventions live on the head's device (Transformer::device()).
#include <c10/core/Device.h>

#include <string>
#include <vector>

#include "model/weights.h"

namespace hs {

struct DeviceMap {
  c10::Device embed = c10::kCPU;
  std::vector<c10::Device> layers;  // one per layer
  c10::Device head = c10::kCPU;

  bool single() const;    // everything on one device
  bool usesCuda() const;  // any part on a GPU
  std::string describe()
      const;  // "cpu", "cuda:0", "cpu (embedding, layers 0-11) + cuda:0 (layers 12-15, head)"

  static DeviceMap all(c10::Device d, int nLayers);
};

// `spec`: "cpu", "cuda", "cuda:N", or a comma-separated list of devices over which the layers are split
// in order (as evenly as counts allow; embedding on the first, head on the last). `gpuLayers` >= 0 puts the
// last gpuLayers layers and the head on the one CUDA device `spec` names, the rest on the CPU; -1 = unused.
// Errors name the bad part: an unknown device, CUDA asked for on a build without it, a GPU index that
// does not exist, --gpu-layers beyond the model's layers or without a CUDA device.
DeviceMap parseDeviceMap(const std::string& spec, int gpuLayers, int nLayers);

// A device from "cpu" / "cuda" / "cuda:N"; the errors of parseDeviceMap.
c10::Device parseDevice(const std::string& name);

// Where loaded weights live (the embedding's, each layer's q projection's, the unembedding's device).
DeviceMap deviceMapOf(const ModelWeights& w);

}  // namespace hs
