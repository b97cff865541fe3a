#include "model/huge_page_tensor.h"

#include <ATen/ATen.h>

#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace hs {

at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype) {
  const at::TensorOptions opts = at::TensorOptions().dtype(dtype);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  const size_t bytes = size_t(n) * c10::elementSize(dtype);
  constexpr size_t kThreshold = size_t(32) << 20;  // below: glibc's heap reuses the memory without new faults
  if (bytes >= kThreshold) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
    return at::from_blob(
        p, sizes, [bytes](void* q) { munmap(q, bytes); }, opts);
  }
#endif
  return at::empty(sizes, opts);
}

}  // namespace hs
