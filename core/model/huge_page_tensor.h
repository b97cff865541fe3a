#pragma once
// Large CPU result tensors on transparent huge pages. A fresh allocation above glibc's mmap threshold
// (32 MiB as hs::tuneAllocator sets it) is new anonymous memory every time, and its first touch takes one
// page fault per 4 KiB: the 65 MB float32 logits of a 128-token forward over a 128k vocabulary took 0.15 s
// of faults on a 2-core VM, more than their GEMM. madvise(MADV_HUGEPAGE) makes that one fault per 2 MiB.
#include <ATen/core/Tensor.h>

namespace hs {

// An uninitialised contiguous CPU tensor; from 32 MiB on (Linux) its memory is a private anonymous mapping
// marked MADV_HUGEPAGE and unmapped when the last reference goes, smaller ones come from at::empty. Not
// resizable in place (not needed for results).
at::Tensor emptyOnHugePages(at::IntArrayRef sizes, at::ScalarType dtype);

}  // namespace hs
