#include "model/device_map.h"

#include <ATen/Context.h>

#include <sstream>

#include "model/cuda_runtime.h"
#include "util/error.h"

namespace hs {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(trim(item));
  if (!s.empty() && s.back() == ',') out.push_back("");  // "cpu," names an empty last device
  return out;
}

std::string layerRange(int a, int b) {
  return a == b ? cat("layer ", a) : cat("layers ", a, "-", b);
}

}  // namespace

bool DeviceMap::single() const {
  for (const auto& d : layers)
    if (d != embed) return false;
  return head == embed;
}

bool DeviceMap::usesCuda() const {
  if (embed.is_cuda() || head.is_cuda()) return true;
  for (const auto& d : layers)
    if (d.is_cuda()) return true;
  return false;
}

std::string DeviceMap::describe() const {
  if (single()) return embed.str();
  // Runs of consecutive layers on one device, with the embedding and head attached where they live.
  std::string out;
  size_t i = 0;
  while (i < layers.size()) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[i])
      ++j;
    std::vector<std::string> parts;
    if (i == 0 && embed == layers[i]) parts.push_back("embedding");
    parts.push_back(layerRange(int(i), int(j)));
    if (j + 1 == layers.size() && head == layers[j]) parts.push_back("head");
    std::string joined;
    for (const auto& p : parts)
      joined += (joined.empty() ? "" : ", ") + p;
    out += (out.empty() ? "" : " + ") + layers[i].str() + " (" + joined + ")";
    i = j + 1;
  }
  if (!layers.empty() && embed != layers.front()) out = embed.str() + " (embedding) + " + out;
  if (!layers.empty() && head != layers.back()) out += " + " + head.str() + " (head)";
  return out;
}

DeviceMap DeviceMap::all(c10::Device d, int nLayers) {
  DeviceMap m;
  m.embed = m.head = d;
  m.layers.assign(static_cast<size_t>(std::max(nLayers, 0)), d);
  return m;
}

c10::Device parseDevice(const std::string& nameIn) {
  const std::string name = trim(nameIn);
  c10::Device d = c10::kCPU;
  try {
    d = c10::Device(name);
  } catch (const std::exception&) {
    fail("unknown device \"", name, "\" (expected cpu, cuda or cuda:N)");
  }
  if (!d.is_cpu() && !d.is_cuda()) fail("unsupported device \"", name, "\" (expected cpu, cuda or cuda:N)");
  if (d.is_cuda()) {
    if (!at::hasCUDA()) {
      const std::string why = cudaUnusableReason();
      if (!why.empty())
        fail("device \"", name, "\" requested, but no GPU is usable: ", why,
             " (check the driver with nvidia-smi, and that the job was given a GPU); or use --device cpu");
      fail("device \"", name,
           "\" requested, but this build of libtorch has no CUDA (a CPU-only libtorch such as Debian's); "
           "use --device cpu, or build HeadScope against a CUDA libtorch (docs/gpu.md)");
    }
    const auto n = static_cast<int64_t>(at::getNumGPUs());
    if (!d.has_index()) d = c10::Device(c10::kCUDA, 0);
    if (d.index() >= n)
      fail("device \"", name, "\" requested, but ", n, " CUDA device", n == 1 ? " is" : "s are",
           " visible (cuda:0", n > 1 ? cat("..cuda:", n - 1) : std::string(), ")");
  }
  return d;
}

DeviceMap parseDeviceMap(const std::string& spec, int gpuLayers, int nLayers) {
  const std::vector<std::string> names = splitComma(spec.empty() ? "cpu" : spec);
  std::vector<c10::Device> devices;
  for (const auto& n : names) {
    if (n.empty()) fail("device list \"", spec, "\" has an empty entry");
    devices.push_back(parseDevice(n));
  }
  if (gpuLayers >= 0) {
    if (devices.size() != 1 || !devices.front().is_cuda())
      fail("--gpu-layers ", gpuLayers, " needs one CUDA device (--device cuda or cuda:N), got \"", spec,
           "\"");
    if (gpuLayers > nLayers) fail("--gpu-layers ", gpuLayers, ": the model has only ", nLayers, " layers");
    DeviceMap m = DeviceMap::all(c10::kCPU, nLayers);
    for (int l = nLayers - gpuLayers; l < nLayers; ++l)
      m.layers[static_cast<size_t>(l)] = devices.front();
    if (gpuLayers > 0) m.head = devices.front();
    return m;
  }
  if (devices.size() == 1) return DeviceMap::all(devices.front(), nLayers);
  if (static_cast<int>(devices.size()) > nLayers)
    fail("device list \"", spec, "\" names ", devices.size(), " devices for ", nLayers, " layers");
  DeviceMap m;
  m.embed = devices.front();
  m.head = devices.back();
  const size_t k = devices.size();
  for (int l = 0; l < nLayers; ++l)
    m.layers.push_back(devices[static_cast<size_t>(l) * k / static_cast<size_t>(nLayers)]);
  return m;
}

DeviceMap deviceMapOf(const ModelWeights& w) {
  DeviceMap m;
  m.embed = w.tok_emb.device();
  for (const LayerWeights& lw : w.layers)
    m.layers.push_back(lw.wq.device());
  m.head = w.unembed.device();
  return m;
}

}  // namespace hs
