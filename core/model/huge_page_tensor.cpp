#include "model/huge_page_tensor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace hs {

namespace {

constexpr size_t kThreshold = size_t(32) << 20;  // below: glibc's heap reuses the memory without new faults

}  // namespace

at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype) {
  const at::TensorOptions opts = at::TensorOptions().dtype(dtype);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  const size_t bytes = size_t(n) * c10::elementSize(dtype);
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

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and the writes fault as usual
#endif

at::Tensor copyForLoad(const at::Tensor& src, at::ScalarType dtype) {
  const size_t bytes = size_t(src.numel()) * c10::elementSize(dtype);
#ifdef __linux__
  if (src.device().is_cpu() && src.is_contiguous() && bytes >= kThreshold) {
    // Fresh pages of the system's default size: on this project's VM a transparent huge page's first
    // touch cost five times a 4 KiB page's per byte (the host backs freed guest memory lazily), so no
    // MADV_HUGEPAGE here.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    at::Tensor dst = at::from_blob(
        p, src.sizes(), [bytes](void* q) { munmap(q, bytes); }, at::TensorOptions().dtype(dtype));
    const bool same = src.scalar_type() == dtype;
    const bool bf16ToFloat = src.scalar_type() == at::kBFloat16 && dtype == at::kFloat;
    const at::Tensor s = src.view(-1), d = dst.view(-1);
    const int64_t n = src.numel();
    const int64_t chunk = int64_t(1) << 20;  // values per step: 4 MiB of float32
    const size_t outItem = c10::elementSize(dtype), inItem = c10::elementSize(src.scalar_type());
    auto* out = static_cast<uint8_t*>(p);
    const auto* in = static_cast<const uint8_t*>(src.data_ptr());
    at::parallel_for(0, (n + chunk - 1) / chunk, 1, [&](int64_t c0, int64_t c1) {
      // This thread's part of the destination, populated in one call (no fault per page), then written.
      madvise(out + c0 * chunk * outItem, size_t(std::min(n, c1 * chunk) - c0 * chunk) * outItem,
              MADV_POPULATE_WRITE);
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t i0 = c * chunk, len = std::min(n, i0 + chunk) - i0;
        if (same) {
          std::memcpy(out + i0 * outItem, in + i0 * inItem, size_t(len) * outItem);
        } else if (bf16ToFloat) {  // a bfloat16 is the high half of the float32 with the same value
          const auto* from = reinterpret_cast<const uint16_t*>(in) + i0;
          auto* to = reinterpret_cast<uint32_t*>(out) + i0;
          for (int64_t i = 0; i < len; ++i)
            to[i] = uint32_t(from[i]) << 16;
        } else {
          d.narrow(0, i0, len).copy_(s.narrow(0, i0, len));
        }
      }
    });
    return dst;
  }
#endif
  at::Tensor out = at::empty(src.sizes(), at::TensorOptions().dtype(dtype));  // 64-byte aligned
  out.copy_(src);
  return out;
}

at::Tensor convertForLoad(const at::Tensor& src, at::Device device, at::ScalarType dtype) {
  if (device.is_cpu() && src.device().is_cpu() && src.scalar_type() != dtype && src.is_contiguous())
    return copyForLoad(src, dtype);
  return src.to(device, dtype).contiguous();
}

}  // namespace hs
