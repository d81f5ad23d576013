#include "core/memory.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) before the test below

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tfm {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // 32 MiB is the largest threshold glibc accepts on 64-bit systems; setting it also stops glibc's
  // own adjustment of it.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // freed memory at the heap's top stays, up to 1 GiB
#endif
}

}  // namespace tfm
