#include "ops/cpu/signal_shield.h"

#include <omp.h>
#include <pthread.h>

#include <atomic>
#include <memory>

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

// Each thread that starts parallel regions has a pool of OpenMP worker threads of its own (the
// main thread, each of the server's or a program's threads); `shielded` counts that pool's
// workers that block the signals. A worker that exits (a smaller team) takes itself off the count
// of its pool, which the shared pointer keeps alive for it.
struct Pool {
  std::atomic<int> shielded{0};
};
thread_local std::shared_ptr<Pool> my_pool;  // as the master of teams
struct Worker {
  std::shared_ptr<Pool> pool;  // set once this worker blocks the signals
  ~Worker() {
    if (pool) pool->shielded.fetch_sub(1, std::memory_order_relaxed);
  }
};
thread_local Worker me_as_worker;

// The workers this thread's next team will have, each made to block the signals once. Inside a
// parallel region a product runs on its thread alone (nested regions have one thread).
void shield_workers() {
  if (omp_in_parallel()) return;
  if (!my_pool) my_pool = std::make_shared<Pool>();
  if (my_pool->shielded.load(std::memory_order_relaxed) >= omp_get_max_threads() - 1) return;
  const std::shared_ptr<Pool> pool = my_pool;
#pragma omp parallel
  {
    if (omp_get_thread_num() != 0 && !me_as_worker.pool) {
      pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), nullptr);
      me_as_worker.pool = pool;
      pool->shielded.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

}  // namespace

SignalShield::SignalShield() {
  pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), &old_);
  shield_workers();  // with this thread's signals blocked: a worker it starts inherits the mask
}

SignalShield::~SignalShield() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace tfm::cpu
