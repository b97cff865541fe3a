#include "model/io/map_tensor.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>

namespace hs {

int64_t checkedNumel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

at::Tensor tensorFromMap(const std::shared_ptr<MappedFile>& map, const uint8_t* bytes,
                         const std::vector<int64_t>& shape, at::ScalarType dtype) {
  const auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  const size_t item = c10::elementSize(dtype);
  if (reinterpret_cast<uintptr_t>(bytes) % item == 0) {
    // Zero-copy: the deleter owns a reference to the map, so the pages live as long as any view.
    std::shared_ptr<MappedFile> keep = map;
    const auto offset = static_cast<size_t>(bytes - map->data());
    return at::from_blob(
        map->mutableData() + offset, shape, [keep](void*) mutable { keep.reset(); }, options);
  }
  // Unaligned (e.g. a safetensors header whose length is not a multiple of the item size): copy.
  at::Tensor out = at::empty(shape, options);
  std::memcpy(out.data_ptr(), bytes, static_cast<size_t>(out.numel()) * item);
  return out;
}

}  // namespace hs
