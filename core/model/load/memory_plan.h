#pragma once
// The memory plan made before any weight is read: what the model needs on each device at the compute dtype
// (weights plus working memory), against what the machine has. `--dtype auto` (the default) chooses here:
// float32 when that copy fits comfortably, else the checkpoint's own 16-bit dtype. A model that does not fit
// is refused with the sizes and the ways out, before loading, never by the kernel's OOM killer.
//
// Working memory is an estimate for a typical analysis step: 8 prompts × 256 positions (capped at the
// context) with one layer's activations live (q, k, v, the MLP's three d_mlp-wide tensors, a few residual
// copies), the attention scores in float32, every layer's residual stream captured, the logits of one
// prompt and of each row's last position in float32, and 400 MB for libtorch, the tokenizer and the rest.
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/device_map.h"
#include "util/memory.h"  // formatBytes, parseByteSize

namespace hs {

struct MemoryBudget {
  uint64_t ram_available = 0;     // bytes this process can still take without swapping or being killed
  std::string ram_source;         // which limit decided it (util/memory.h RamRoom::source)
  std::vector<int64_t> gpu_free;  // free bytes per CUDA device; -1 where unknown; empty without CUDA
  // Bytes of the checkpoint already mapped into the address space when the budget was read, under an
  // address-space limit (which counts mappings; MemAvailable does not). Weights used in place from those
  // pages then need no more of it.
  uint64_t mapped_checkpoint = 0;
};

// The RAM this process can take (util/memory.h's ramRoom: MemAvailable, the cgroup's memory.max, RLIMIT_AS
// and HEADSCOPE_MEMORY_LIMIT, the smallest wins) and, with a CUDA libtorch, each GPU's free memory
// (cudaMemGetInfo found at run time, so CPU builds need nothing).
MemoryBudget currentMemoryBudget();

struct DeviceNeed {
  c10::Device device = c10::kCPU;
  uint64_t weights = 0, working = 0;  // bytes
  int64_t available = -1;             // bytes; -1 = unknown (not checked)
  uint64_t total() const { return weights + working; }
};

struct MemoryPlan {
  c10::ScalarType dtype = c10::kFloat;
  std::vector<DeviceNeed> devices;  // every device the map uses
  std::string note;                 // the auto choice, with its sizes ("" when the dtype was given)
  // CPU weights the checkpoint stores in the compute dtype can be used in place, as the file's memory-mapped
  // pages, or copied into 64-byte-aligned memory of the process's own. A safetensors or GGUF tensor seldom
  // starts 64-byte aligned, and the GEMMs read such weights more slowly (a Llama-3.2-1B-shaped bf16 forward
  // took 0.67 s mapped and 0.55 s copied on this project's machine). The copy is made when the need fits
  // comfortably (at most half of the RAM available, as for auto's float32); otherwise the weights stay
  // mapped, where the kernel can drop and reread them under memory pressure, and weights_note says so.
  bool copy_weights = true;
  std::string weights_note;  // "" when copy_weights or when every weight is converted anyway

  // The notes a user sees (LoadedModel::notes, `info`): note and weights_note, those that are not empty.
  std::vector<std::string> notes() const;
};

// Bytes of the weights at `elementBytes` per value, split as the map places them, and the working memory.
std::vector<DeviceNeed> memoryNeeds(const ModelConfig& c, long long nParams, size_t elementBytes,
                                    const DeviceMap& map, const MemoryBudget& budget);

// Resolves `requestedDtype` ("auto" or a dtype parseDtype knows) and checks that the model fits. Throws an
// hs::Error naming `what` (the model's path), the sizes, what is available and the ways out when it does not.
MemoryPlan planMemory(const std::string& what, const ModelConfig& c, long long nParams,
                      const std::string& requestedDtype, const DeviceMap& map, const MemoryBudget& budget);

}  // namespace hs
