#include "core/threads.h"

#include <omp.h>

#include <cstdlib>

#include "core/error.h"

extern "C" void openblas_set_num_threads(int);

namespace tfm {

void set_num_threads(int n) {
  TFM_CHECK(n >= 1 && n <= kMaxThreads, "number of threads must be in [1, ", kMaxThreads, "], got ", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

void check_default_threads() {
  // Only a count asked for: a machine with more than kMaxThreads cores runs with all of them.
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env == nullptr) return;
  const int n = omp_get_max_threads();
  TFM_CHECK(n <= kMaxThreads, "the default thread count is ", n, " (OMP_NUM_THREADS=", env, "), over the limit of ",
            kMaxThreads, ": give fewer threads");
}

ScopedThreads::ScopedThreads(int n) {
  TFM_CHECK(n >= 0 && n <= kMaxThreads, "number of threads must be in [0, ", kMaxThreads, "] (0: unchanged), got ", n);
  if (n == 0) {
    check_default_threads();
    return;
  }
  previous_ = omp_get_max_threads();
  omp_set_num_threads(n);
}

ScopedThreads::~ScopedThreads() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

}  // namespace tfm
