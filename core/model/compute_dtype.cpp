#include "model/compute_dtype.h"

#include <ATen/ATen.h>

#include <torch/version.h>

#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "util/error.h"

namespace hs {

namespace {

// libtorch's message up to its first line (without the C++ frames some builds append).
std::string firstLine(const std::string& s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string probe(at::ScalarType dtype, at::Device device) {
  const at::TensorOptions o = at::TensorOptions().dtype(dtype).device(device);
  const at::Tensor x = at::ones({2, 3, 4}, o);  // [batch, pos, d]
  const at::Tensor w = at::ones({5, 4}, o);     // [out, d]
  const at::Tensor b = at::ones({5}, o);        // [out]
  const at::Tensor ids = at::zeros({2, 3}, at::TensorOptions().dtype(at::kLong).device(device));
  const std::pair<const char*, std::function<void()>> kernels[] = {
      {"linear", [&] { at::linear(x, w); }},
      {"linear with bias", [&] { at::linear(x, w, b); }},
      {"batched matmul", [&] { at::matmul(x, x.transpose(-1, -2)); }},
      {"embedding", [&] { at::embedding(w, ids); }},
      {"silu", [&] { at::silu(x); }},
      {"gelu", [&] { at::gelu(x); }},
      {"gelu (tanh)", [&] { at::gelu(x, "tanh"); }},
      {"relu", [&] { at::relu(x); }},
      {"tanh", [&] { at::tanh(x); }},
      {"mul/add", [&] { (x * x + x).sum(); }},
  };
  for (const auto& k : kernels) {
    try {
      k.second();
    } catch (const std::exception& e) {
      return cat(k.first, ": ", firstLine(e.what()));
    }
  }
  return "";
}

bool checkCompensatedGemm(at::ScalarType dtype, at::Device device) {
  try {
    // Fixed values (no random draw: the global generator stays as the caller left it).
    const at::Tensor xd = at::sin(at::arange(4 * 512, at::kDouble) * 0.731).view({4, 512});  // [4, 512]
    const at::Tensor wd =
        at::cos(at::arange(64 * 512, at::kDouble) * 0.377).view({64, 512}) * 0.1;  // [64, 512]
    const at::TensorOptions o = at::TensorOptions().dtype(dtype).device(device);
    const at::Tensor x = xd.to(o), w = wd.to(o);
    const at::Tensor exact = at::mm(x.to(at::kDouble), w.to(at::kDouble).t()).cpu();  // [4, 64]
    const at::Tensor hi = at::mm(x, w.t());
    const at::Tensor lo = at::addmm(-hi, x, w.t());
    const double plain = (hi.to(at::kDouble).cpu() - exact).abs().max().item<double>();
    const double compensated =
        (hi.to(at::kDouble) + lo.to(at::kDouble)).cpu().sub(exact).abs().max().item<double>();
    return plain > 0 && compensated <= plain / 16;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

bool compensatedGemmWorks(at::ScalarType dtype, at::Device device) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::string>, bool> known;
  const std::pair<int, std::string> key{static_cast<int>(dtype), device.str()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, checkCompensatedGemm(dtype, device)).first;
  return it->second;
}

std::string computeDtypeProblem(at::ScalarType dtype, at::Device device) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::string>, std::string> known;
  const std::pair<int, std::string> key{static_cast<int>(dtype), device.str()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, probe(dtype, device)).first;
  return it->second;
}

void requireComputeDtype(at::ScalarType dtype, at::Device device) {
  const std::string problem = computeDtypeProblem(dtype, device);
  if (problem.empty()) return;
  const char* name = dtype == at::kHalf       ? "float16"
                     : dtype == at::kBFloat16 ? "bfloat16"
                                              : c10::toString(dtype);
  fail("compute dtype ", name, " is not available on ", device.str(), " with this libtorch (",
       TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, "; ", problem,
       "): use bfloat16 (the same memory, with CPU ", "kernels) or float32",
       device.is_cpu() ? ", or float16 on a CUDA device" : "");
}

}  // namespace hs
