#include "model/huge_page_tensor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>
#include <thread>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and the writes fault as usual
#endif

namespace hs {

namespace {

constexpr size_t kThreshold = size_t(32) << 20;   // below: glibc's heap reuses the memory without new faults
constexpr int64_t kUnitBytes = int64_t(4) << 20;  // destination bytes a thread claims at a time
constexpr int64_t kPieceBytes = int64_t(256) << 10;  // populated, then written while in the cache
constexpr int64_t kTile = 64;                        // a transposed copy's tile: 64 x 64 values

int64_t numelOf(at::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

// A private anonymous mapping of `sizes` at `dtype`, unmapped when the tensor's storage goes.
at::Tensor anonymousTensor(at::IntArrayRef sizes, at::ScalarType dtype, size_t bytes) {
#ifdef __linux__
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return at::from_blob(
      p, sizes, [bytes](void* q) { munmap(q, bytes); }, at::TensorOptions().dtype(dtype));
#else
  return at::empty(sizes, at::TensorOptions().dtype(dtype));
#endif
}

// Maps the whole pages of [p, p + bytes) in one call, each zeroed, with no fault per page.
void populate(void* p, size_t bytes) {
#ifdef __linux__
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t from = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t to = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
  if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#endif
}

enum class Convert { Same, Bf16ToFloat, Aten };
enum class Layout {
  Rows,        // the source as rows of `cols` contiguous values (one row when contiguous)
  Transposed,  // a 2-D source with strides (1, stride): dst[r][c] = src[r + c * stride]
  Aten,        // anything else: one Tensor::copy_ (ATen's own threads), before the pass
};

struct Job {
  const LoadCopy* copy = nullptr;
  Convert convert = Convert::Same;
  Layout layout = Layout::Rows;
  int64_t n = 0;        // values
  int64_t quantum = 1;  // units and pieces start at multiples of this many values
  int64_t cols = 0;     // Rows: values per source row; Transposed: the destination's columns
  int64_t stride = 0;   // Transposed: the source's stride between columns
  std::vector<int64_t> outerSizes, outerStrides;  // Rows: the dimensions before the last
  const uint8_t* in = nullptr;
  uint8_t* out = nullptr;
  size_t inItem = 0, outItem = 0;
};

Job makeJob(const LoadCopy& c) {
  const at::Tensor &s = c.src, &d = c.dst;
  if (!s.device().is_cpu() || !d.device().is_cpu() || !d.is_contiguous() || s.numel() != d.numel())
    throw std::invalid_argument("runLoadCopies: needs a CPU source and a contiguous CPU destination of " +
                                std::to_string(s.numel()) + " values");
  Job j;
  j.copy = &c;
  j.n = s.numel();
  j.inItem = c10::elementSize(s.scalar_type());
  j.outItem = c10::elementSize(d.scalar_type());
  j.in = static_cast<const uint8_t*>(s.data_ptr());
  j.out = static_cast<uint8_t*>(d.data_ptr());
  if (j.n == 0) return j;
  j.convert = s.scalar_type() == d.scalar_type()                                  ? Convert::Same
              : s.scalar_type() == at::kBFloat16 && d.scalar_type() == at::kFloat ? Convert::Bf16ToFloat
                                                                                  : Convert::Aten;
  if (j.convert != Convert::Aten && s.is_contiguous()) {
    j.layout = Layout::Rows, j.cols = j.n;
  } else if (j.convert != Convert::Aten && s.stride(-1) == 1) {
    j.layout = Layout::Rows, j.cols = s.size(-1);
    j.outerSizes.assign(s.sizes().begin(), s.sizes().end() - 1);
    j.outerStrides.assign(s.strides().begin(), s.strides().end() - 1);
  } else if (j.convert != Convert::Aten && s.dim() == 2 && s.stride(0) == 1) {
    j.layout = Layout::Transposed, j.cols = s.size(1), j.stride = s.stride(1), j.quantum = j.cols;
  } else {
    j.layout = Layout::Aten;
  }
  return j;
}

// `len` values from `in` to `out`, converted.
void convertRun(const Job& j, const uint8_t* in, uint8_t* out, int64_t len) {
  if (j.convert == Convert::Bf16ToFloat) {  // a bfloat16 is the high half of the float32 with its value
    const auto* from = reinterpret_cast<const uint16_t*>(in);
    auto* to = reinterpret_cast<uint32_t*>(out);
    for (int64_t i = 0; i < len; ++i)
      to[i] = uint32_t(from[i]) << 16;
  } else {
    std::memcpy(out, in, size_t(len) * j.outItem);
  }
}

template <typename In, typename Out, typename F>
void transposedRows(const Job& j, int64_t r0, int64_t r1, F cvt) {
  const auto* src = reinterpret_cast<const In*>(j.in);
  auto* dst = reinterpret_cast<Out*>(j.out);
  for (int64_t rb = r0; rb < r1; rb += kTile)
    for (int64_t cb = 0; cb < j.cols; cb += kTile) {
      const int64_t re = std::min(r1, rb + kTile), ce = std::min(j.cols, cb + kTile);
      for (int64_t c = cb; c < ce; ++c)
        for (int64_t r = rb; r < re; ++r)
          dst[r * j.cols + c] = cvt(src[r + c * j.stride]);
    }
}

// Writes the destination's values [v0, v1) (multiples of the job's quantum, or its end).
void writeRange(const Job& j, int64_t v0, int64_t v1) {
  switch (j.layout) {
    case Layout::Rows: {
      int64_t r = v0 / j.cols, c = v0 % j.cols;
      for (int64_t v = v0; v < v1; ++r, c = 0) {
        int64_t offset = c;  // the row's first value in the source, in values
        for (int64_t d = int64_t(j.outerSizes.size()) - 1, rest = r; d >= 0; --d) {
          offset += (rest % j.outerSizes[size_t(d)]) * j.outerStrides[size_t(d)];
          rest /= j.outerSizes[size_t(d)];
        }
        const int64_t len = std::min(j.cols - c, v1 - v);
        convertRun(j, j.in + offset * int64_t(j.inItem), j.out + v * int64_t(j.outItem), len);
        v += len;
      }
      return;
    }
    case Layout::Transposed: {
      const int64_t r0 = v0 / j.cols, r1 = v1 / j.cols;
      if (j.convert == Convert::Bf16ToFloat)
        return transposedRows<uint16_t, uint32_t>(j, r0, r1, [](uint16_t x) { return uint32_t(x) << 16; });
      auto same = [](auto x) { return x; };
      switch (j.outItem) {
        case 1:
          return transposedRows<uint8_t, uint8_t>(j, r0, r1, same);
        case 2:
          return transposedRows<uint16_t, uint16_t>(j, r0, r1, same);
        case 4:
          return transposedRows<uint32_t, uint32_t>(j, r0, r1, same);
        default:
          return transposedRows<uint64_t, uint64_t>(j, r0, r1, same);
      }
    }
    case Layout::Aten:
      return;  // made whole before the pass
  }
}

struct Unit {
  size_t job;
  int64_t v0, v1;
};

}  // namespace

at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const size_t bytes = size_t(numelOf(sizes)) * c10::elementSize(dtype);
  if (bytes >= kThreshold) {
    at::Tensor t = anonymousTensor(sizes, dtype, bytes);
    madvise(t.data_ptr(), bytes, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
    return t;
  }
#endif
  return at::empty(sizes, at::TensorOptions().dtype(dtype));
}

at::Tensor emptyForLoad(at::IntArrayRef sizes, at::ScalarType dtype) {
  const size_t bytes = size_t(numelOf(sizes)) * c10::elementSize(dtype);
  if (bytes >= kThreshold) return anonymousTensor(sizes, dtype, bytes);
  return at::empty(sizes, at::TensorOptions().dtype(dtype));  // 64-byte aligned
}

void runLoadCopies(const std::vector<LoadCopy>& copies) {
  std::vector<Job> jobs;
  jobs.reserve(copies.size());
  std::vector<Unit> units;
  int64_t bytes = 0;  // written by the pass
  for (const LoadCopy& c : copies) {
    jobs.push_back(makeJob(c));
    const Job& j = jobs.back();
    if (j.layout == Layout::Aten) {  // ATen's copy, parallel in itself (run from our threads, it would nest)
      c.dst.view(c.src.sizes()).copy_(c.src);
      jobs.back().n = 0;  // done below, with the empty ones
      continue;
    }
    const int64_t perUnit = std::max(j.quantum, kUnitBytes / int64_t(j.outItem) / j.quantum * j.quantum);
    bytes += j.n * int64_t(j.outItem);
    for (int64_t v = 0; v < j.n; v += perUnit)
      units.push_back({jobs.size() - 1, v, std::min(j.n, v + perUnit)});
  }
  std::vector<std::atomic<int64_t>> left(jobs.size());  // units still to write, per job
  for (auto& l : left)
    l = 0;
  for (const Unit& u : units)
    ++left[u.job];
  for (size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].n == 0 && jobs[i].copy->done) jobs[i].copy->done();

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex errorMutex;
  auto work = [&] {
    try {
      for (size_t u; !failed.load(std::memory_order_relaxed) && (u = next.fetch_add(1)) < units.size();) {
        const Job& j = jobs[units[u].job];
        const int64_t perPiece =
            std::max(j.quantum, kPieceBytes / int64_t(j.outItem) / j.quantum * j.quantum);
        for (int64_t v = units[u].v0; v < units[u].v1; v += perPiece) {
          const int64_t e = std::min(units[u].v1, v + perPiece);
          populate(j.out + v * int64_t(j.outItem), size_t(e - v) * j.outItem);
          writeRange(j, v, e);
        }
        if (left[units[u].job].fetch_sub(1) == 1 && j.copy->done) j.copy->done();
      }
    } catch (...) {
      failed = true;
      std::lock_guard<std::mutex> lock(errorMutex);
      if (!error) error = std::current_exception();
    }
  };
  // Threads of our own, as many as ATen's pool has (the thread policy's count), this one included: ATen's
  // parallel_for is a template that runs in parallel only where the caller is compiled with OpenMP, which
  // HeadScope's sources are not, so through it this pass ran on one thread.
  // A small model's copies (under 4 units) take less than starting a thread.
  const size_t workers = at::in_parallel_region() || bytes < 4 * kUnitBytes
                             ? 1
                             : std::min(size_t(std::max(1, at::get_num_threads())), units.size());
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < workers; ++i) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads: the ones there are do the work
      break;
    }
  }
  work();
  for (std::thread& t : helpers)
    t.join();
  if (error) std::rethrow_exception(error);
}

at::Tensor copyForLoad(const at::Tensor& src, at::ScalarType dtype) {
  at::Tensor out = emptyForLoad(src.sizes(), dtype);
  if (src.device().is_cpu()) {
    runLoadCopies({LoadCopy{src, out, nullptr}});
  } else {
    out.copy_(src);
  }
  return out;
}

at::Tensor convertForLoad(const at::Tensor& src, at::Device device, at::ScalarType dtype) {
  if (device.is_cpu() && src.device().is_cpu())
    return src.scalar_type() == dtype && src.is_contiguous() ? src : copyForLoad(src, dtype);
  return src.to(device, dtype).contiguous();
}

}  // namespace hs
