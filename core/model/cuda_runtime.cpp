#include "model/cuda_runtime.h"

#include <dlfcn.h>

#include <cstdlib>

namespace hs {

namespace {

template <typename F>
F runtimeFunction(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

int64_t cudaFreeBytes(int index) {
  const auto get = runtimeFunction<int (*)(int*)>("cudaGetDevice");
  const auto set = runtimeFunction<int (*)(int)>("cudaSetDevice");
  const auto info = runtimeFunction<int (*)(size_t*, size_t*)>("cudaMemGetInfo");
  if (!get || !set || !info) return -1;
  int previous = 0;
  if (get(&previous) != 0 || set(index) != 0) return -1;
  size_t freeBytes = 0, totalBytes = 0;
  const int rc = info(&freeBytes, &totalBytes);
  set(previous);
  return rc == 0 ? static_cast<int64_t>(freeBytes) : -1;
}

std::string cudaUnusableReason() {
  const auto count = runtimeFunction<int (*)(int*)>("cudaGetDeviceCount");
  const auto errorString = runtimeFunction<const char* (*)(int)>("cudaGetErrorString");
  if (!count) return "";
  int n = 0;
  const int rc = count(&n);
  std::string why;
  if (rc != 0) {
    const char* text = errorString ? errorString(rc) : nullptr;
    why = "the CUDA runtime says \"" + std::string(text ? text : "error") + "\" (error " +
          std::to_string(rc) + ")";
  } else if (n == 0) {
    why = "the CUDA runtime sees no device";
  } else {
    return "";
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    why += std::string("; CUDA_VISIBLE_DEVICES=\"") + visible + "\"";
  return why;
}

}  // namespace hs
