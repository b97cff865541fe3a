#pragma once
// Keeps glibc malloc from handing large blocks back to the kernel after every free.
//
// libtorch allocates each activation with malloc. With glibc's defaults, blocks above the (dynamic) mmap
// threshold are mmap'd and unmapped per tensor, and the heap top is trimmed after frees, so every forward
// pays for fresh zeroed pages; for a small model such as the toy model's training step the page faults cost
// more than the arithmetic. Raising the mmap and trim thresholds keeps freed memory in the process for
// reuse. Numbers are unaffected. Programs call this once, first thing in main().
namespace hs {

void tuneAllocator();

}  // namespace hs
