#pragma once
// Keeps asynchronous signals away from the threads that run oneDNN 2.6's generated float32 GEMM
// kernels (dnnl_sgemm's, at the AVX2 and AVX-512 levels). Those kernels point the stack pointer at a
// buffer on the heap while they run (uxlfoundation/oneDNN#4845, fixed in oneDNN 3.11; Debian ships
// 2.6): the kernel writes the frame of a signal delivered then below that pointer, over the heap,
// and the program aborts later in free() ("corrupted size vs. prev_size"). Ctrl-C or SIGTERM during
// training, the server's SIGTERM, a profiler's SIGPROF: any handled signal could land there.
//
// A shield blocks every asynchronous signal (all but the synchronous SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGABRT and SIGSYS) in the calling thread until it ends, and, made outside a
// parallel region, in the OpenMP workers of the team oneDNN's own parallel region will get, for
// good (they run only the program's parallel loops; a signal for the process then goes to a thread
// that does not block it, or waits). A signal sent meanwhile is delivered when the shield ends: a
// Ctrl-C is late by one product at most. Cost: two rt_sigprocmask calls, and outside a parallel
// region an empty one (about 1 µs with 2 threads): one shield per product, not per block.
// Side effect: profilers that sample by SIGPROF see nothing of the workers.
#include <signal.h>

namespace tfm::cpu {

class SignalShield {
 public:
  SignalShield();
  ~SignalShield();
  SignalShield(const SignalShield&) = delete;
  SignalShield& operator=(const SignalShield&) = delete;

 private:
  sigset_t old_;
};

}  // namespace tfm::cpu
