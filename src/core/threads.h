#pragma once
// One thread pool for everything: OpenMP, which Debian's OpenMP build of OpenBLAS shares, so BLAS
// calls and the project's own kernels never oversubscribe the cores.
namespace tfm {

// The most threads any option may ask for. Far more than any machine's cores; beyond some tens of
// thousands libgomp fails to start them, or crashes (seen with --threads 100000).
constexpr int kMaxThreads = 1024;

// Sets the number of threads for OpenMP kernels and BLAS (1 <= n <= kMaxThreads).
void set_num_threads(int n);
int num_threads();

// Checks the thread count OMP_NUM_THREADS asks for against kMaxThreads, naming the variable: what
// threads 0 ("all cores") runs with. Without it, all cores, however many.
void check_default_threads();

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
