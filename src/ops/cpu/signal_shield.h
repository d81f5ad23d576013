#pragma once
// Keeps asynchronous signals away from the threads that run oneDNN 2.6's generated float32 GEMM
// kernels (dnnl_sgemm's, at the AVX2 and AVX-512 levels). Those kernels point the stack pointer at a
// buffer on the heap while they run (uxlfoundation/oneDNN#4845, fixed in oneDNN 3.11; Debian ships
// 2.6): the kernel writes the frame of a signal delivered then below that pointer, over the heap,
// and the program aborts later in free() ("corrupted size vs. prev_size"). Ctrl-C or SIGTERM during
// training, the server's SIGTERM, a profiler's SIGPROF: any handled signal could land there.
//
// A shield blocks every asynchronous signal (all but the synchronous SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGABRT and SIGSYS) in the calling thread until it ends, and in the OpenMP worker
// threads of the calling thread's teams for good (they run only the program's parallel loops; a
// signal for the process then goes to a thread that does not block it). A signal sent meanwhile
// waits and is delivered when the shield ends: a Ctrl-C is late by one product at most.
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
