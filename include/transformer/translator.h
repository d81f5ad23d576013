#pragma once
// Translating and scoring with a trained model (docs/api.md). A Translator loads a model file and
// its vocabulary once; each call translates or scores a batch of sentences, sorted by length into
// batches that are decoded together, and gives the results back in input order.
//
//   transformer::Translator t("runs/demo/model.safetensors");
//   transformer::TranslateOptions o;
//   o.search.beam_size = 4;
//   for (const auto& r : t.translate({"three hundred and five"}, o)) std::cout << r.best().text << "\n";
//
// Text input goes through clean_input (transformer/text.h) first: NUL bytes become spaces, bytes
// that are not UTF-8 become U+FFFD, and the result is trimmed; the repairs are reported on the
// result, never silently. Every error is a transformer::Error naming the problem and the value.
// A Translator may be used from several threads at once (its calls do not modify it).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transformer/error.h"
#include "transformer/text.h"

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
  int64_t min_length = 0;       // no end of sentence before this many output tokens (it included);
                                //   benchmarks force a fixed length with min_length = max length
  bool record_attention = false;  // return the encoder-decoder attention of every output token
  // false: the hypotheses' score and normalized are NaN, not computed (CTranslate2's return_scores).
  // Greedy search then chooses each token from an int8 screen of the output projection and float32
  // logits of the few tokens it leaves (ops/screen.h): the same tokens as with scores, about 10%
  // faster for base on the CPU (docs/performance.md, session 30).
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

  // Throws Error naming the first option out of range.
  void validate() const;
};

// The encoder-decoder attention of one hypothesis: for each decoder layer and head, each output
// token's (end of sentence included) weights over the source tokens (end of sentence included).
struct Attention {
  int64_t layers = 0, heads = 0, target_length = 0, source_length = 0;
  std::vector<float> weights;  // [layers][heads][target_length][source_length], row-major
  float at(int64_t layer, int64_t head, int64_t target, int64_t source) const {
    return weights[static_cast<size_t>(((layer * heads + head) * target_length + target) * source_length + source)];
  }
  bool empty() const { return weights.empty(); }
};

struct Hypothesis {
  std::string text;          // detokenized ("" for translate_ids)
  std::vector<int32_t> ids;  // the output tokens, without beginning and end of sentence
  double score = 0;          // Σ log p of the tokens and the end of sentence
  double normalized = 0;     // score / lp(|ids| + 1): what beam search ranks by
  Attention attention;       // when SearchOptions::record_attention
};

struct Translation {
  std::vector<Hypothesis> hypotheses;  // n-best, best first; empty for an empty input
  std::vector<int32_t> source_ids;     // the encoded (and maybe truncated) source, without end of sentence
  std::vector<int32_t> target_prefix_ids;  // the forced target prefix, encoded: every hypothesis's ids
                                           //   begin with it (empty: none)
  bool truncated = false;              // the source had more than max_input_tokens tokens (text: or
                                       //   over 1024 bytes each, mostly spaces, cut before tokenizing)
  Repairs repairs;                     // what clean_input changed in the input line (text input only)
  Repairs prefix_repairs;              // what clean_input changed in the target prefix (text input only)
  // The best hypothesis; throws Error for an empty input, which has none.
  const Hypothesis& best() const;
};

struct ScoreOptions {
  int64_t batch_sentences = 64;     // pairs scored together, at most kMaxBatchSentences
  int64_t max_input_tokens = 1024;  // longer sides are cut to this many tokens, at most kMaxInputTokens

  // Throws Error naming the first option out of range.
  void validate() const;
};

// log p(target | source) under the model, by teacher forcing without label smoothing (Marian's
// scorer and fairseq's reference scoring): for rescoring n-best lists and filtering corpora.
struct Score {
  double total = 0;        // Σ log p of the target's tokens and its end of sentence
  double per_token = 0;    // total / tokens
  int64_t tokens = 0;      // the target's tokens, end of sentence included
  bool truncated = false;  // a side had more than max_input_tokens tokens (text: or over 1024 bytes each)
  Repairs source_repairs, target_repairs;  // what clean_input changed (text input only)
};

struct TranslatorOptions {
  std::string vocab{};  // the SentencePiece model; "": vocab.model beside the model file
  bool need_vocab = true;  // false: ids only (translate_ids, score_ids); no vocabulary is loaded
  bool verify = true;   // verify the model file's checksum (false: loads faster; damage goes unnoticed
                        //   unless the weights are not finite)
  // How the weights are held for decoding: packed once for the products (the default, fastest in
  // float32), int8 (faster still, slightly less exact), plain float32 as trained (which scoring
  // needs), or bfloat16 products (inputs rounded to bfloat16, float32 sums: the arithmetic of
  // `train --bf16`): on a GPU its tensor cores; on a CPU with bfloat16 instructions (AVX-512 BF16,
  // which AMX CPUs have too) weights packed in bfloat16, faster than packed float32 (greedy 1.4×,
  // beam 4 1.5–1.8× on a Zen 4), the plain ones given back; elsewhere the plain weights, slower than
  // packed float32. Scoring takes it as well.
  enum class Weights { kPacked, kInt8, kPlain, kBf16 };
  Weights weights = Weights::kPacked;
  std::string shortlist{};  // a shortlist file (`transformer shortlist`): each batch scores only the
                          //   target tokens it selects; faster, may change translations. The scores
                          //   (Hypothesis::score, normalized) are then log-probabilities under the
                          //   softmax over the selected tokens, not the whole vocabulary (as
                          //   CTranslate2's vocabulary mapping): higher than score() gives the pair
  int threads = 0;        // threads of this translator's calls; 0: the process's default (all cores)
  // Where the model runs: "cpu", or "cuda" ("cuda:0"), the first NVIDIA GPU, in a build with the
  // CUDA backend. On a GPU kPacked fuses each decoder self-attention's Q, K and V into one product
  // and puts the biases and ReLU into the products' epilogues; kBf16 packs the weights rounded to
  // bfloat16 once for its tensor cores (the float32 ones stay in the GPU's memory beside them,
  // unused: about 1.5× the float32 model's memory); kPlain keeps them as trained;
  // kInt8 is refused (a CPU format). Batches are decoded one at a time there.
  std::string device = "cpu";
};

// A note the loader wants a user to see (a model file without a checksum, a model without a
// vocabulary fingerprint): the command line prints them on stderr.
struct LoadNotes {
  std::vector<std::string> notes;     // informational: "note: …"
  std::vector<std::string> warnings;  // something may be wrong: "warning: …"
};

class Translator {
 public:
  // Loads the model (a .safetensors model or checkpoint file) and, unless options.need_vocab is
  // false, its vocabulary, checking that they belong together (size and fingerprint).
  explicit Translator(const std::string& model_path, const TranslatorOptions& options = {});
  ~Translator();
  Translator(Translator&&) noexcept;
  Translator& operator=(Translator&&) noexcept;

  // Sentences → translations, in input order. Empty lines give translations with no hypotheses.
  //
  // target_prefixes (optional: empty, or one per line): a forced start of each translation
  // (interactive translation, terminology), "" for none. A prefix goes through clean_input and is
  // encoded as a text of its own (so it begins a word); decoding feeds its tokens first (teacher
  // forcing), adding their log-probabilities to the score, and then searches (or samples) the rest:
  // every hypothesis's ids are the prefix's followed by the continuation, and its text their
  // decoding. All beams of a sentence share the prefix. It counts in max_length and min_length; one
  // that reaches max_length is followed by the end of sentence. Of an empty line it is ignored (an
  // empty line has no translation). A prefix longer than max_input_tokens is refused.
  std::vector<Translation> translate(const std::vector<std::string>& lines, const TranslateOptions& options = {},
                                     const std::vector<std::string>& target_prefixes = {}) const;
  // Token ids (without end of sentence) → translations with ids only (Hypothesis::text empty); the
  // prefixes as ids (checked as sources are: in the vocabulary, no padding, BOS or EOS).
  std::vector<Translation> translate_ids(const std::vector<std::vector<int32_t>>& sources,
                                         const TranslateOptions& options = {},
                                         const std::vector<std::vector<int32_t>>& target_prefixes = {}) const;

  // log p(targets[i] | sources[i]) for each pair, by the model's teacher-forced forward pass: it
  // needs the weights as trained (TranslatorOptions::Weights::kPlain, or kBf16 for bfloat16
  // products); other translators refuse.
  std::vector<Score> score(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                           const ScoreOptions& options = {}) const;
  std::vector<Score> score_ids(const std::vector<std::vector<int32_t>>& sources,
                               const std::vector<std::vector<int32_t>>& targets, const ScoreOptions& options = {}) const;

  // The vocabulary (throws Error when the translator was loaded without one). encode cleans the
  // text first (clean_input), as translate and score do: it gives the ids they would translate.
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // an id outside [0, vocab_size()) is an Error
  std::string piece(int32_t id) const;  // one token's piece, as the vocabulary spells it
  bool has_vocab() const;

  // Space-separated token ids, as `translate --ids` reads them; throws naming line_number and the
  // bad word or id (outside the vocabulary, or a padding, beginning or end of sentence id, which
  // the model adds itself).
  std::vector<int32_t> parse_ids(std::string_view line, int64_t line_number) const;

  int64_t vocab_size() const;
  const std::string& model_path() const;
  // The fingerprint of the vocabulary the model was trained with ("" if the file records none).
  const std::string& vocab_fingerprint() const;
  const LoadNotes& load_notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace transformer
