#pragma once
// The CUDA runtime a CUDA libtorch loaded, reached at run time through dlsym: nothing to link, no CUDA
// headers, and a CPU-only libtorch (Debian's) simply has no such symbols. Used for what libtorch's API does
// not say: a device's free memory, and why no GPU is usable when the runtime is there.
#include <cstdint>
#include <string>

namespace hs {

// Free bytes on CUDA device `index` (cudaMemGetInfo), or -1 when unknown.
int64_t cudaFreeBytes(int index);

// Why a CUDA runtime is loaded but no device is usable, in words: the runtime's own error for
// cudaGetDeviceCount ("no CUDA-capable device is detected", "CUDA driver version is insufficient for CUDA
// runtime version", ...) or that it counts none, plus CUDA_VISIBLE_DEVICES when set. Empty when no CUDA
// runtime is loaded (a CPU-only libtorch) or when devices are usable.
std::string cudaUnusableReason();

}  // namespace hs
