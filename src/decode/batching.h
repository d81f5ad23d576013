#pragma once
// How a call's sentences are split into batches and the batches run: sentences sorted by length so
// that a batch holds similar lengths, and batches run one after another or several at once, one per
// thread. Translation and embedding share it.
#include <cstdint>
#include <functional>
#include <vector>

#include "model/transformer.h"

namespace tfm {

// The indices of the sequences of non-zero length, shortest first (stable: equal lengths keep input
// order).
std::vector<size_t> order_by_length(const std::vector<size_t>& lengths);

// How many batches to run at once: `option` (0: one per thread when there are at least two
// batches per thread, else 1), at most the threads and the batches; one when the model is on a GPU
// (one stream of device work, in order).
int64_t parallel_batches(const Transformer& model, int64_t option, int64_t batches);

// Runs run(0) … run(batches − 1): in order when parallel ≤ 1, else `parallel` at a time, longest
// (last) first so that no long batch starts last and runs alone, each on one thread (its own
// parallel regions, BLAS and oneDNN calls run on it). The first exception is rethrown after the
// batches running have ended; the batches not yet started are skipped.
void run_batches(int64_t batches, int64_t parallel, const std::function<void(int64_t)>& run);

}  // namespace tfm
