// The validation of the translation and scoring options (include/transformer/search_options.h):
// each refusal names the option and the value, as the command line, the server and Python show it.
#include <cmath>

#include "core/error.h"
#include "transformer/search_options.h"

namespace transformer {

void SearchOptions::validate() const {
  TFM_CHECK(beam_size >= 1 && beam_size <= kMaxBeamSize, "beam size must be in [1, ", kMaxBeamSize, "], got ",
            beam_size);
  TFM_CHECK(n_best >= 1 && n_best <= beam_size, "n-best must be in [1, beam size ", beam_size, "], got ", n_best);
  TFM_CHECK(std::isfinite(length_penalty), "length penalty must be finite, got ", length_penalty);
  TFM_CHECK(min_length >= 0, "the minimum output length must be >= 0, got ", min_length);
  TFM_CHECK(std::isfinite(max_length_a) && std::isfinite(max_length_b) && max_length_a >= 0 && max_length_b >= 0 &&
                max_length_a + max_length_b >= 1,
            "the maximum output length a * source + b needs finite a, b >= 0 and a + b >= 1, got a = ", max_length_a,
            ", b = ", max_length_b);
  TFM_CHECK(unscored_prefix >= 0, "the unscored prefix must be >= 0 tokens, got ", unscored_prefix);
  TFM_CHECK(sampling_topk >= -1,
            "sampling top-k must be -1 (the whole vocabulary), 0 (no sampling) or a number of tokens >= 1, got ",
            sampling_topk);
  TFM_CHECK(sampling_topp > 0 && sampling_topp <= 1, "sampling top-p must be in (0, 1], got ", sampling_topp);
  TFM_CHECK(sampling_temperature > 0 && std::isfinite(sampling_temperature),
            "the sampling temperature must be finite and > 0, got ", sampling_temperature);
  if (!sampling()) {
    const char* hint = " applies only to sampling, which is off (sampling top-k 0): set sampling top-k (-1: the "
                       "whole vocabulary) or leave it at 1";
    TFM_CHECK(sampling_topp == 1, "sampling top-p ", sampling_topp, hint);
    TFM_CHECK(sampling_temperature == 1, "the sampling temperature ", sampling_temperature, hint);
  } else {
    TFM_CHECK(beam_size == 1, "sampling (sampling top-k ", sampling_topk,
              ") draws one hypothesis per sentence: it needs beam size 1 and n-best 1, got beam size ", beam_size,
              " and n-best ", n_best);
  }
}

void TranslateOptions::validate() const {
  search.validate();
  TFM_CHECK(batch_sentences >= 1 && batch_sentences <= kMaxBatchSentences, "batch size must be in [1, ",
            kMaxBatchSentences, "] sentences, got ", batch_sentences);
  TFM_CHECK(max_input_tokens >= 1 && max_input_tokens <= kMaxInputTokens, "the input token limit must be in [1, ",
            kMaxInputTokens, "], got ", max_input_tokens);
  TFM_CHECK(max_memory >= -1, "max_memory must be a number of bytes, 0 (no limit) or -1 (automatic), got ",
            max_memory);
  TFM_CHECK(parallel_batches >= 0, "parallel batches must be >= 0 (0: automatic), got ", parallel_batches);
}

void ScoreOptions::validate() const {
  TFM_CHECK(batch_sentences >= 1 && batch_sentences <= kMaxBatchSentences, "batch size must be in [1, ",
            kMaxBatchSentences, "] pairs, got ", batch_sentences);
  TFM_CHECK(max_input_tokens >= 1 && max_input_tokens <= kMaxInputTokens, "the input token limit must be in [1, ",
            kMaxInputTokens, "], got ", max_input_tokens);
}

}  // namespace transformer
