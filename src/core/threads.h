#pragma once
// One thread pool for everything: OpenMP, which Debian's OpenMP build of OpenBLAS shares, so BLAS
// calls and the project's own kernels never oversubscribe the cores.
namespace tfm {

// Sets the number of threads for OpenMP kernels and BLAS (n >= 1).
void set_num_threads(int n);
int num_threads();

}  // namespace tfm
