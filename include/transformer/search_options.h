#pragma once
// The options of translating and scoring (docs/api.md): how each sentence is searched for, how a
// call batches its sentences, and their documented maxima. Value types only, each with validate(),
// which throws transformer::Error naming the option and its value.
#include <cstdint>

#include "transformer/language_options.h"

namespace transformer {

// The documented maxima of the options below.
inline constexpr int64_t kMaxBeamSize = 1024;  // beam search's memory grows with sentences · beam²
inline constexpr int64_t kMaxBatchSentences = 4096;
inline constexpr int64_t kMaxInputTokens = 16384;

// How each sentence is searched for: beam search with a length penalty, as in the paper (§6.1),
// greedy search, or random sampling.
struct SearchOptions {
  int64_t beam_size = 4;        // 1 = greedy; at most kMaxBeamSize
  double length_penalty = 0.6;  // α of GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al., 2016); 0 = none
  double max_length_a = 1.0;    // at most a · (source tokens) + b output tokens, end of sentence included
  double max_length_b = 50.0;   //   (a target prefix counts; one that reaches the limit is followed by EOS)
  int64_t n_best = 1;           // hypotheses returned per sentence (≤ beam_size)
  int64_t min_length = 0;       // no end of sentence (eos_id, nor a ModelConfig::stop_ids id) before this
                                //   many output tokens (it included); benchmarks force a fixed length
                                //   with min_length = max length
  bool record_attention = false;  // return the encoder-decoder attention of every output token
  // false: the hypotheses' score and normalized are NaN, not computed (CTranslate2's return_scores).
  // Greedy search then chooses each token from an int8 screen of the output projection and float32
  // logits of the few tokens it leaves (ops/screen.h): the same tokens as with scores, about 10%
  // faster for base on the CPU (docs/performance.md).
  bool return_scores = true;
  // How scores of hypotheses of different lengths L (end of sentence included) are compared: a score
  // is divided by lp(L). kGnmt: ((5 + L) / 6)^α (Wu et al., 2016); kPower: L^α (Marian's --normalize,
  // CTranslate2, Hugging Face generate()).
  enum class LengthNormalization { kGnmt, kPower };
  LengthNormalization length_normalization = LengthNormalization::kGnmt;
  // When a sentence's beam search ends. kFirstK: once beam_size hypotheses have ended, or when no
  // live one can beat the n-th best ended one (fairseq). kNoBetterLive: once beam_size have ended and
  // the best live hypothesis, normalized at its current length, is no better than the worst of the
  // beam_size best ended ones; until then each new ending may replace a worse one (Hugging Face
  // generate()'s default, early_stopping False).
  enum class BeamStop { kFirstK, kNoBetterLive };
  BeamStop beam_stop = BeamStop::kFirstK;

  // Random sampling (back-translation, as CTranslate2's sampling_topk/topp/temperature): each output
  // token is drawn from the model's distribution instead of searched for. At every step the logits
  // are divided by the temperature before the softmax; then only the sampling_topk most probable
  // tokens are kept, then of those the smallest set of most probable whose probability reaches
  // sampling_topp (nucleus sampling, Holtzman et al., 2020; always at least one token), and the
  // token is drawn from that set, renormalized. Ties rank the lower id first. The tokens search may
  // not produce are never drawn (padding, beginning of sentence, end of sentence before min_length;
  // only end of sentence at the maximum length), and with a shortlist only its tokens are.
  // Sampling decodes one hypothesis per sentence: it needs beam_size 1 (so n_best 1).
  // A sampled hypothesis's score is the model's own Σ log p of its tokens (untempered, over every
  // token as search scores them, not the restricted distribution it was drawn from), so it equals
  // what score_ids gives the pair, and normalized divides it by the length penalty as for search.
  int64_t sampling_topk = 0;          // 0: no sampling (search); 1: the most probable token (greedy
                                      //   search, whatever the other sampling fields); k > 1: sample
                                      //   among the k most probable; -1: among the whole vocabulary
  double sampling_topp = 1.0;         // in (0, 1]; 1: no nucleus restriction
  double sampling_temperature = 1.0;  // > 0; below 1 sharpens the distribution, above 1 flattens it
  // Draws are reproducible and independent of how sentences are batched: sentence i's draws come
  // from the Philox stream keyed by (seed, XXH3-64 of its source ids and target prefix ids), one
  // number per output position. The same seed, options and sentence give the same output whatever
  // the thread count, batch size, parallel_batches, or where the sentence stands in the input, so
  // identical sentences get identical samples; translate again with another seed for other samples.
  // (With a shortlist the tokens allowed are the batch's selection, which depends on the batching,
  // as for search.)
  uint64_t seed = 0;
  bool sampling() const { return sampling_topk != 0; }
  // The first n tokens of each target prefix are forced without their log-probabilities (0 each,
  // as Hugging Face's forced_bos_token_id): the Translator forces a multilingual model's target
  // language token so (LanguageOptions::target), which then counts in the length but not the score.
  int64_t unscored_prefix = 0;
  // How a hypothesis that reaches the maximum length ends. false: with an end of sentence, scored
  // (fairseq, CTranslate2); true: with the token chosen there and no end of sentence, as Hugging
  // Face's generate() stops at max_new_tokens (beam search then ends the K best continuations of
  // that step, whatever their tokens).
  bool limit_without_eos = false;

  // Throws Error naming the first option out of range.
  void validate() const;
};

// A translation call's options: the search, and how sentences are batched.
struct TranslateOptions {
  SearchOptions search;
  int64_t batch_sentences = 64;     // sentences decoded together, at most kMaxBatchSentences
  int64_t max_input_tokens = 1024;  // longer inputs are cut to this many tokens (Translation::truncated),
                                    //   at most kMaxInputTokens
  // A translation whose decoding is estimated to need more memory than this is refused before it
  // starts, naming the estimate. Bytes; -1: 80% of the memory available when it starts (the host's,
  // or the GPU's for a model on a GPU); 0: no limit.
  int64_t max_memory = -1;
  // Batches decoded at the same time, each by one thread (CTranslate2's inter_threads): a step of
  // one batch on one thread wastes none of its time waiting for the other threads, which a batch
  // split over threads does at every operation. 0: as many as there are threads when the input has
  // at least two batches per thread, else 1; 1: one batch at a time, each operation on every thread.
  // More batches in flight hold more decoding caches in memory.
  int64_t parallel_batches = 0;
  // A multilingual model's source and target languages (transformer/language_options.h).
  LanguageOptions languages;

  // Throws Error naming the first option out of range.
  void validate() const;
};

struct ScoreOptions {
  // At most kMaxBatchSentences. Each pair is scored alone (a batch of one, without padding), so
  // that its score has the same bits whatever pairs come with it: this no longer changes anything.
  int64_t batch_sentences = 64;
  int64_t max_input_tokens = 1024;  // longer sides are cut to this many tokens, at most kMaxInputTokens

  // Throws Error naming the first option out of range.
  void validate() const;
};

}  // namespace transformer
