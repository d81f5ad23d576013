#pragma once
// What the decoding tests (decode_test, sampling_test) check search against: small models with
// peaked or spread output distributions, teacher-forced sequence scores, and exhaustive search.
#include <cstdint>
#include <memory>
#include <vector>

#include "model/transformer.h"

namespace tfm::testing {

// The tiny preset at D 16, 2 heads, F 24, 2 + 2 layers, vocabulary `vocab`.
ModelConfig tiny_decoding_config(int64_t vocab);

// A model of that configuration whose target embedding is scaled by `scale`: large scales make
// peaked output distributions (search decisions matter), small ones spread ones (sampling has much
// to draw from).
std::unique_ptr<Transformer> scaled_model(int64_t vocab, uint64_t seed, DType dtype, double scale,
                                          bool pre_norm = false);

// The teacher-forced logits of `target` (decoder input BOS + target), in double: row t scores
// output token t, row |target| the end of sentence.
std::vector<std::vector<double>> forced_logits(const Transformer& m, const std::vector<int32_t>& source,
                                               const std::vector<int32_t>& target);

// Σ log p(y_t | y_<t, x) of `target` followed by EOS, by the teacher-forced training forward; with
// `allowed`, the softmax runs over those tokens only (a shortlist's).
double sequence_score(const Transformer& m, const std::vector<int32_t>& source, const std::vector<int32_t>& target,
                      const std::vector<int32_t>& allowed = {});

// The best sequence under the length penalty α among all that start with `start` and continue with
// tokens of `tokens`, at most `max_length` output tokens with the end of sentence: every one is
// scored (sequence_score / lp(|y| + 1)).
struct Best {
  std::vector<int32_t> tokens;
  double normalized = 0;
};
Best exhaustive_best(const Transformer& m, const std::vector<int32_t>& source, const std::vector<int32_t>& start,
                     int64_t max_length, double alpha, const std::vector<int32_t>& tokens);

}  // namespace tfm::testing
