#pragma once
// How the process's heap treats big blocks (glibc malloc), and how much memory the machine has free.
#include <cstdint>

namespace tfm {

// By default glibc serves big blocks (above 128 KB, a threshold it raises as it sees them freed)
// with their own mmap and unmaps them when freed, and returns freed memory at the heap's top to the
// kernel, so buffers made anew at every decoding step, such as the [rows, vocabulary] logits
// (31 MiB for 256 rows × 32,000), cost a page fault and a page clearing per 4 KB, every step. This
// keeps blocks of up to 32 MiB on the heap and freed memory in the process for reuse: about a
// quarter fewer page faults in the small training step, a third fewer in base (docs/performance.md).
// Blocks above 32 MiB stay mmap'd by glibc; core/tensor.cc keeps a few of those itself for reuse.
// Call it once, first thing in main(). A no-op on other C libraries.
void keep_freed_memory_for_reuse();

// Bytes the machine can still give this process without swapping (Linux's MemAvailable), or, where
// that is not known, its physical memory; 0 when neither is.
int64_t available_memory_bytes();

}  // namespace tfm
