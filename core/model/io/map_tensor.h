#pragma once
// A CPU tensor over bytes of a memory-mapped file: a zero-copy view when the bytes are aligned for
// the element type (the tensor's deleter holds the map alive), a private copy otherwise.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "model/io/mapped_file.h"

namespace hs {

// `bytes` must point inside `map` and hold product(shape) * itemsize(dtype) bytes.
at::Tensor tensorFromMap(const std::shared_ptr<MappedFile>& map, const uint8_t* bytes,
                         const std::vector<int64_t>& shape, at::ScalarType dtype);

// Product of dims, or -1 when it would overflow int64 or a dim is negative.
int64_t checkedNumel(const std::vector<int64_t>& shape);

}  // namespace hs
