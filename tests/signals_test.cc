// Products under a flood of signals (ops/cpu/signal_shield.h). oneDNN 2.6's generated float32 GEMM
// kernels point the stack pointer at the heap while they run: a signal delivered to a thread inside
// one has its frame written over the heap, and the program aborts later in free(). A handler that
// finds its own frame outside its thread's stack shows that it happened, at once; the corrupted heap
// would also end the test program.
#include <gtest/gtest.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ops/int8.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "testing/gradcheck.h"

namespace tfm {
namespace {

thread_local uintptr_t stack_low = 0, stack_high = 0;  // this thread's stack, where known
std::atomic<int64_t> handled{0}, off_the_stack{0};

void note_my_stack() {
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) {
    stack_low = reinterpret_cast<uintptr_t>(base);
    stack_high = stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

void on_signal(int) {
  volatile char here = 0;
  const auto at = reinterpret_cast<uintptr_t>(&here);
  handled.fetch_add(1, std::memory_order_relaxed);
  if (stack_high != 0 && (at < stack_low || at >= stack_high)) off_the_stack.fetch_add(1, std::memory_order_relaxed);
}

Tensor random(Shape shape, uint64_t seed) { return testing::random_tensor(std::move(shape), seed, -1, 1).to(DType::F32); }

// SIGUSR1 to the process every 20 µs, from a thread that blocks it itself, while the products that
// reach oneDNN run for a second and a half, and until 50 signals have been handled (float32 at the
// shapes oneDNN takes, a weight gradient, packed weights, int8 and bf16), with the heap in use
// around them, and teams of 2, 3 and 2 threads in turn (workers that leave and new ones).
TEST(Signals, ProductsSurviveAFloodOfSignals) {
  struct sigaction action = {}, old_action = {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old_action), 0);
  // The workers exist before any product (this pool's threads, started unshielded) and know their stacks.
  note_my_stack();
#pragma omp parallel
  note_my_stack();

  std::atomic<bool> done{false};
  std::thread sender([&] {
    sigset_t mine;
    sigemptyset(&mine);
    sigaddset(&mine, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &mine, nullptr);
    while (!done.load()) {
      kill(getpid(), SIGUSR1);
      usleep(20);
    }
  });

  const Tensor x = random({1024, 512}, 1), w = random({512, 512}, 2), wide = random({2048, 512}, 3),
               dy = random({1024, 2048}, 4);
  const Tensor y = Tensor::empty({1024, 512}), y_wide = Tensor::empty({1024, 2048}), dw = Tensor::zeros({2048, 512});
  const ops::PackedMatrix packed = ops::pack_weight(w);
  const ops::QuantizedMatrix quantized = ops::quantize_rows(w);
  const auto start = std::chrono::steady_clock::now();
  auto running = [&](int64_t ms) { return std::chrono::steady_clock::now() - start < std::chrono::milliseconds(ms); };
  const int threads = omp_get_max_threads();
  int64_t rounds = 0;
  while ((running(1500) || handled.load() < 50) && running(20000)) {
    omp_set_num_threads(rounds % 3 == 1 ? 3 : 2);
#pragma omp parallel
    if (stack_high == 0) note_my_stack();  // a new worker (started outside any shield)
    ops::matmul(x, w, y, {.trans_b = true});
    ops::matmul(x, wide, y_wide, {.trans_b = true});
    ops::matmul(dy, x, dw, {.trans_a = true, .beta = 1.0f});  // a widening layer's weight gradient
    ops::matmul_packed(x, packed, y);
    ops::matmul_int8(x, quantized, y);
    ops::matmul(x, w, y, {.trans_b = true, .precision = ops::Precision::kBf16});
    std::vector<std::vector<char>> churn;
    for (int i = 0; i < 64; ++i) churn.emplace_back(static_cast<size_t>(500 + 97 * i), static_cast<char>(i));
    ++rounds;
  }
  omp_set_num_threads(threads);
  done.store(true);
  sender.join();
  sigaction(SIGUSR1, &old_action, nullptr);
  std::printf("%lld rounds of products, %lld signals handled\n", static_cast<long long>(rounds),
              static_cast<long long>(handled.load()));
  EXPECT_GE(handled.load(), 50) << "the signals reached no handler in 20 s: the test tests nothing";
  EXPECT_EQ(off_the_stack.load(), 0) << "signal frames written outside their thread's stack (onto the heap)";
}

}  // namespace
}  // namespace tfm
