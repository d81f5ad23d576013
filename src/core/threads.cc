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

}  // namespace tfm
