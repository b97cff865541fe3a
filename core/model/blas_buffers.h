#pragma once
// OpenBLAS takes a work buffer of 128 MiB of address space for each of its threads when it loads, and one
// for a caller the first time a product needs it; it keeps and reuses them. When the kernel refuses that
// memory, Debian's OpenBLAS (0.3.21) retries forever (OpenBLAS issue 5289; since 0.3.30 it exits instead).
// Under an address-space limit (`ulimit -v`: cluster login nodes, SGE's h_vmem, batch jobs) HeadScope spun
// at 100 % CPU: before main on a many-core node, whose buffers alone exceed the limit (64 cores: 8 GiB), and
// at the first float32 product once a model had taken the room.
//
// Two guards, both only under such a limit:
//  - before any shared library initialises (the executable's .preinit_array, so before OpenBLAS), when the
//    buffers of one thread per CPU would take more than a quarter of the room, the program restarts itself
//    with OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set to what fits; the thread policy then never exceeds
//    that (blasThreadCap). With no room even for one thread it exits with one line.
//  - reserveBlasBuffers(), called by the programs first thing after the thread policy: refuses in one line
//    when less than kBlasStartRoom is left, and otherwise runs one threaded float32 product so that OpenBLAS
//    takes its buffers now. The memory plan (model/load/memory_plan.h) then counts them as used.
#include <cstdint>

namespace hs {

inline constexpr uint64_t kBlasBufferBytes = 128ull << 20;  // OpenBLAS's BUFFER_SIZE on x86-64
inline constexpr uint64_t kBlasSlackBytes = 64ull << 20;    // libraries' start-up allocations beside them
inline constexpr uint64_t kBlasStartRoom = kBlasBufferBytes + kBlasSlackBytes;

// The thread count the start-up guard restarted the program with; 0 when it did not.
int blasThreadCap();

// Throws an hs::Error naming the limit, what is left and the way out when the address-space limit leaves
// less than kBlasStartRoom. A no-op without a limit, and with a BLAS that is not OpenBLAS.
void reserveBlasBuffers();

}  // namespace hs
