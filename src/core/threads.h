#pragma once
// One thread pool for everything: OpenMP, which Debian's OpenMP build of OpenBLAS shares, so BLAS
// calls and the project's own kernels never oversubscribe the cores.
namespace tfm {

// Sets the number of threads for OpenMP kernels and BLAS (n >= 1).
void set_num_threads(int n);
int num_threads();

// For its lifetime, the calling thread's OpenMP kernels and BLAS calls use n threads (n >= 1; 0:
// unchanged). OpenMP's thread count is per calling thread, and Debian's OpenMP OpenBLAS follows
// it, so two threads may each hold their own.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace tfm
