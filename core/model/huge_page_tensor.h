#pragma once
// Large CPU tensors on fresh memory. A fresh allocation above glibc's mmap threshold (32 MiB as
// hs::tuneAllocator sets it) is new anonymous memory every time, and its first touch takes one page fault
// per 4 KiB: the 65 MB float32 logits of a 128-token forward over a 128k vocabulary took 0.15 s of faults on
// a 2-core VM, more than their GEMM. madvise(MADV_HUGEPAGE) makes that one fault per 2 MiB.
#include <ATen/core/Tensor.h>

namespace hs {

// An uninitialised contiguous CPU tensor; from 32 MiB on (Linux) its memory is a private anonymous mapping
// marked MADV_HUGEPAGE and unmapped when the last reference goes, smaller ones come from at::empty. Not
// resizable in place (not needed for results).
at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype);

// `src` on `device` at `dtype`, contiguous, for loading weights: what src.to(device, dtype).contiguous()
// gives (the same tensor when nothing changes). A dtype conversion of a large contiguous CPU tensor (a bf16
// checkpoint's mapped pages loaded as float32) is made in one pass over ATen's threads, each thread
// populating the destination pages it then writes: on a machine whose fresh memory is expensive to touch
// (a VM's host faults in each page on first use), that cost, most of such a load, is shared by every core
// instead of falling on one.
at::Tensor convertForLoad(const at::Tensor& src, at::Device device, at::ScalarType dtype);

// A new contiguous, 64-byte-aligned CPU copy of `src` at `dtype`, made as convertForLoad makes its
// conversions: for a weight the checkpoint stores in the compute dtype but not aligned.
at::Tensor copyForLoad(const at::Tensor& src, at::ScalarType dtype);

}  // namespace hs
