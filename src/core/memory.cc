#include "core/memory.h"

#include <unistd.h>

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) before the test below
#include <fstream>
#include <limits>
#include <string>

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

int64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

}  // namespace tfm
