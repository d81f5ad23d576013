// Sorting sentences into batches by length and running the batches, in order or several at once.
#include "decode/batching.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include <omp.h>

#include "core/threads.h"

namespace tfm {

std::vector<size_t> order_by_length(const std::vector<size_t>& lengths) {
  std::vector<size_t> order;
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  return order;
}

int64_t parallel_batches(const Transformer& model, int64_t option, int64_t batches) {
  const int64_t threads = omp_in_parallel() ? 1 : num_threads();
  int64_t parallel = option == 0 ? (batches >= 2 * threads ? threads : 1) : option;
  parallel = std::min({parallel, threads, batches});
  if (model.params().device() != Device::CPU) parallel = 1;
  return parallel;
}

void run_batches(int64_t batches, int64_t parallel, const std::function<void(int64_t)>& run) {
  if (parallel <= 1) {
    for (int64_t i = 0; i < batches; ++i) run(i);
    return;
  }
  // No exception may leave the parallel region: the first is kept and rethrown after it.
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic, 1) num_threads(parallel)
  for (int64_t i = batches - 1; i >= 0; --i) {
    if (failed.load()) continue;
    omp_set_num_threads(1);
    try {
      run(i);
    } catch (...) {
#pragma omp critical(run_batches_failure)
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tfm
