#include "util/allocator.h"

#include <malloc.h>

namespace hs {

void tuneAllocator() {
#if defined(__GLIBC__)
  // 32 MiB is glibc's largest accepted mmap threshold on 64-bit; keep up to 1 GiB of free heap untrimmed.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
#endif
}

}  // namespace hs
