#include "core/threads.h"

#include <omp.h>

#include "core/error.h"

extern "C" void openblas_set_num_threads(int);

namespace tfm {

void set_num_threads(int n) {
  TFM_CHECK(n >= 1, "number of threads must be at least 1, got ", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

ScopedThreads::ScopedThreads(int n) {
  TFM_CHECK(n >= 0, "number of threads must be at least 0 (0: unchanged), got ", n);
  if (n == 0) return;
  previous_ = omp_get_max_threads();
  omp_set_num_threads(n);
}

ScopedThreads::~ScopedThreads() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

}  // namespace tfm
