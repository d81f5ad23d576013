#include "ops/cpu/signal_shield.h"

#include <omp.h>
#include <pthread.h>

#include <initializer_list>

namespace tfm::cpu {

namespace {

const sigset_t& asynchronous_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigfillset(&s);
    for (const int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) sigdelset(&s, synchronous);
    return s;
  }();
  return set;
}

thread_local bool blocked_for_good = false;  // a worker that has blocked them

}  // namespace

SignalShield::SignalShield() {
  pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), &old_);
  // Inside a parallel region oneDNN runs on this thread alone. Outside, on the team the next
  // region gets: the threads of a region of the same size, each made to block the signals for good
  // (once; a worker started meanwhile inherits this thread's blocked mask). No count of the pool's
  // workers is kept: libgomp may pick other pool threads for a team (thread binding) or replace
  // them (a smaller team, then a larger one).
  if (omp_in_parallel()) return;
#pragma omp parallel
  {
    if (omp_get_thread_num() != 0 && !blocked_for_good) {
      pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), nullptr);
      blocked_for_good = true;
    }
  }
}

SignalShield::~SignalShield() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace tfm::cpu
