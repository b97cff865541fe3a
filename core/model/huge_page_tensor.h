#pragma once
// Large CPU tensors on fresh memory. A fresh allocation above glibc's mmap threshold (32 MiB as
// hs::tuneAllocator sets it) is new anonymous memory every time, and its first touch takes one page fault
// per 4 KiB: the 65 MB float32 logits of a 128-token forward over a 128k vocabulary took 0.15 s of faults on
// a 2-core VM, more than their GEMM. madvise(MADV_HUGEPAGE) makes that one fault per 2 MiB.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace hs {

// An uninitialised contiguous CPU tensor; from 32 MiB on (Linux) its memory is a private anonymous mapping
// marked MADV_HUGEPAGE and unmapped when the last reference goes, smaller ones come from at::empty. Not
// resizable in place (not needed for results).
at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype);

// An uninitialised contiguous CPU tensor for a weight being loaded: from 32 MiB on (Linux) a private
// anonymous mapping of the system's default page size (page aligned; no MADV_HUGEPAGE: on this project's
// VMs a transparent huge page's first touch cost up to five times a 4 KiB page's per byte, and asking for
// them stalls in compaction when memory is fragmented), unmapped when the last reference goes; smaller
// ones from at::empty (64-byte aligned). Nothing is written: runLoadCopies populates and fills it.
at::Tensor emptyForLoad(at::IntArrayRef sizes, at::ScalarType dtype);

// One copy of a load: `src` (a CPU tensor of any strides and floating dtype) read in its logical,
// row-major order into `dst` (a contiguous CPU tensor holding as many values at its own dtype, e.g. from
// emptyForLoad; its shape may differ, as a reshape's would), converted as Tensor::to converts. `done`, if
// set, runs once the whole of dst is written, on whichever thread wrote its last part (e.g. to release the
// source's file pages); it must not throw.
struct LoadCopy {
  at::Tensor src, dst;
  std::function<void()> done;
};

// Makes every copy in one pass over as many threads as ATen's pool has (threads of its own: ATen's
// parallel_for, a template, runs serially in sources not compiled with OpenMP, as HeadScope's are). The
// copies are cut into units of about 4 MiB of destination, which the threads claim in order as they come
// free (a thread that the machine's other work holds back delays no other), and each unit is written in
// pieces of 256 KiB, each piece's fresh pages first populated in one madvise(MADV_POPULATE_WRITE) (Linux
// 5.14; no fault per page) and then written while the kernel's zeroes are still in the cache. bfloat16 ->
// float32 (a 16-bit shift) and same-dtype copies are written directly, a transposed 2-D source (GPT-2's
// Conv1D weights, their fused q/k/v thirds) in tiles, a source whose rows are contiguous (a fused q/k/v
// split per head) row by row; other dtype pairs and layouts are one Tensor::copy_ each, before the pass.
// Exceptions reach the caller.
void runLoadCopies(const std::vector<LoadCopy>& copies);

// `src` on `device` at `dtype`, contiguous, for loading weights: what src.to(device, dtype).contiguous()
// gives (the same tensor when nothing changes). On the CPU a conversion or a non-contiguous source is one
// runLoadCopies into emptyForLoad memory.
at::Tensor convertForLoad(const at::Tensor& src, at::Device device, at::ScalarType dtype);

// A new contiguous CPU copy of `src` at `dtype` in emptyForLoad memory (64-byte or page aligned), made by
// runLoadCopies: for a weight the checkpoint stores in the compute dtype but not aligned.
at::Tensor copyForLoad(const at::Tensor& src, at::ScalarType dtype);

}  // namespace hs
