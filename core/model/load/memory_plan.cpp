#include "model/load/memory_plan.h"

#include <ATen/Context.h>

#include <algorithm>
#include <map>

#include "model/cuda_runtime.h"
#include "model/load/model_loader.h"
#include "util/error.h"
#include "util/memory.h"

namespace hs {

namespace {

const char* dtypeWord(c10::ScalarType t) {
  return t == c10::kFloat ? "float32" : t == c10::kBFloat16 ? "bfloat16" : t == c10::kHalf ? "float16" : "?";
}

// The checkpoint's own dtype when it is a 16-bit float, else float32.
c10::ScalarType storedCompute(const ModelConfig& c) {
  if (c.dtype == "bfloat16") return c10::kBFloat16;
  if (c.dtype == "float16") return c10::kHalf;
  return c10::kFloat;
}

bool fits(const std::vector<DeviceNeed>& needs, double fraction) {
  for (const auto& n : needs)
    if (n.available >= 0 && static_cast<double>(n.total()) > fraction * static_cast<double>(n.available))
      return false;
  return true;
}

std::string describeNeeds(const std::vector<DeviceNeed>& needs) {
  std::string out;
  for (const auto& n : needs) {
    out += (out.empty() ? "" : "; ") + n.device.str() + " needs ~" + formatBytes(n.total()) + " (weights " +
           formatBytes(n.weights) + " + working " + formatBytes(n.working) + ")";
    if (n.available >= 0) out += ", " + formatBytes(static_cast<uint64_t>(n.available)) + " available";
  }
  return out;
}

}  // namespace

MemoryBudget currentMemoryBudget() {
  MemoryBudget b;
  const RamRoom room = ramRoom();
  b.ram_available = room.source.empty() ? 0 : room.bytes;
  b.ram_source = room.source;
  if (at::hasCUDA())
    for (int i = 0; i < static_cast<int>(at::getNumGPUs()); ++i)
      b.gpu_free.push_back(cudaFreeBytes(i));
  return b;
}

std::vector<DeviceNeed> memoryNeeds(const ModelConfig& c, long long nParams, size_t elem,
                                    const DeviceMap& map, const MemoryBudget& budget) {
  const uint64_t d = c.d_model, V = c.vocab_size, L = std::max(c.n_layers, 1);
  const uint64_t embed = V * d + (c.learned_pos_emb ? static_cast<uint64_t>(c.context_length) * d : 0);
  const uint64_t head = (c.tied_embeddings ? 0 : V * d) + 2 * d;
  const uint64_t total = static_cast<uint64_t>(std::max<long long>(nParams, 0));
  const uint64_t perLayer = total > embed + head ? (total - embed - head) / L : 0;

  // Working memory (see the header): 8 × 256 positions.
  const uint64_t positions = std::min<uint64_t>(256, std::max(c.context_length, 1)), rows = 8;
  const uint64_t tokens = rows * positions;
  const uint64_t qkv = static_cast<uint64_t>(c.n_heads + 2 * c.n_kv_heads) * std::max(c.d_head, 1);
  const uint64_t layerLive = tokens * (3ull * c.d_mlp + 6 * d + qkv) * elem;
  const uint64_t scores = rows * c.n_heads * positions * positions * 4 * 2;
  const uint64_t captures = tokens * d * L * elem;
  const uint64_t logits = (positions + rows) * V * 4 * 2;
  const uint64_t overhead = 400ull * 1000 * 1000;
  const uint64_t working = layerLive + scores + captures + logits;

  std::map<std::string, DeviceNeed> byDevice;
  auto add = [&](c10::Device dev, uint64_t values) {
    DeviceNeed& n = byDevice[dev.str()];
    n.device = dev;
    n.weights += values * elem;
  };
  add(map.embed, embed);
  for (const auto& dev : map.layers)
    add(dev, perLayer);
  add(map.head, head);
  if (c.tied_embeddings && map.head != map.embed) add(map.head, V * d);  // the unembedding's own copy
  byDevice[map.head.str()].working += working;
  DeviceNeed& cpu = byDevice[c10::Device(c10::kCPU).str()];
  cpu.device = c10::kCPU;
  cpu.working += overhead;

  std::vector<DeviceNeed> out;
  for (auto& [name, n] : byDevice) {
    if (n.device.is_cpu())
      n.available = budget.ram_source.empty() ? -1 : static_cast<int64_t>(budget.ram_available);
    else if (n.device.is_cuda() && n.device.index() >= 0 &&
             n.device.index() < static_cast<int>(budget.gpu_free.size()))
      n.available = budget.gpu_free[static_cast<size_t>(n.device.index())];
    out.push_back(n);
  }
  return out;
}

std::vector<std::string> MemoryPlan::notes() const {
  std::vector<std::string> out;
  for (const std::string* n : {&note, &weights_note})
    if (!n->empty()) out.push_back(*n);
  return out;
}

MemoryPlan planMemory(const std::string& what, const ModelConfig& c, long long nParams,
                      const std::string& requestedDtype, const DeviceMap& map, const MemoryBudget& budget) {
  MemoryPlan plan;
  const c10::ScalarType stored = storedCompute(c);
  const bool automatic = requestedDtype.empty() || requestedDtype == "auto";
  std::vector<DeviceNeed> needs;
  if (automatic) {
    // float32 when that copy takes at most half of what is available on every device, else as stored.
    const auto f32 = memoryNeeds(c, nParams, 4, map, budget);
    if (stored == c10::kFloat || fits(f32, 0.5)) {
      plan.dtype = c10::kFloat;
      needs = f32;
      plan.note = "dtype auto: float32 (" + describeNeeds(needs) + ")";
    } else {
      plan.dtype = stored;
      needs = memoryNeeds(c, nParams, 2, map, budget);
      plan.note = std::string("dtype auto: ") + dtypeWord(stored) +
                  " as stored, since a float32 copy would not fit comfortably (" + describeNeeds(f32) +
                  "); --dtype f32 forces it";
    }
  } else {
    plan.dtype = parseDtype(requestedDtype);
    needs = memoryNeeds(c, nParams, c10::elementSize(plan.dtype), map, budget);
  }
  plan.devices = needs;
  std::vector<DeviceNeed> cpuNeeds;
  for (const DeviceNeed& n : needs)
    if (n.device.is_cpu()) cpuNeeds.push_back(n);
  plan.copy_weights = fits(cpuNeeds, 0.5);
  if (!plan.copy_weights && plan.dtype == stored) {
    plan.weights_note =
        "weights: used in place from the checkpoint's memory-mapped pages, since a copy would not fit "
        "comfortably (" +
        describeNeeds(cpuNeeds) + "); products read weights the file does not align to 64 bytes more slowly";
    if (budget.mapped_checkpoint > 0) {
      // The CPU's weights are the mapped pages the address-space reading already counted as used.
      for (DeviceNeed& n : needs)
        if (n.device.is_cpu() && n.available >= 0)
          n.available += static_cast<int64_t>(budget.mapped_checkpoint);
      plan.devices = needs;
    }
  }
  if (fits(needs, 1.0)) return plan;

  // Refused: say what it needs, what there is, and what would make it fit.
  std::vector<std::string> ways;
  if (plan.dtype == c10::kFloat) ways.push_back("--dtype bf16 (half the weights)");
  if (!map.usesCuda() && at::hasCUDA()) {
    ways.push_back("--device cuda");
    ways.push_back("--device cuda --gpu-layers N (the last N layers on the GPU)");
  } else if (!map.usesCuda()) {
    ways.push_back("--device cuda with a CUDA build (docs/gpu.md)");
  } else {
    ways.push_back("fewer --gpu-layers or more GPUs (--device cuda:0,cuda:1)");
  }
  ways.push_back("free memory on this machine");
  std::string wayText;
  for (size_t i = 0; i < ways.size(); ++i)
    wayText += (i ? (i + 1 == ways.size() ? " or " : ", ") : "") + ways[i];
  fail(what, ": not enough memory to load it as ", dtypeWord(plan.dtype), " on ", map.describe(), ": ",
       describeNeeds(needs), " (RAM limit from ", budget.ram_source, "); use ", wayText);
}

}  // namespace hs
