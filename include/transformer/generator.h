#pragma once
// Generating text with a decoder-only language model (docs/api.md): prompts continued by the same
// greedy search, beam search and random sampling that translate (names as CTranslate2's Generator).
//
//   transformer::Generator g("runs/lm/model.safetensors");
//   transformer::GenerationOptions o;
//   o.max_new_tokens = 20;
//   for (const auto& r : g.generate_batch({"ein Mann"}, o)) std::cout << r.best().text << "\n";
//
// A Generator may be used from several threads at once (its calls do not modify it).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transformer/error.h"
#include "transformer/search_options.h"
#include "transformer/text.h"
#include "transformer/translation.h"
#include "transformer/translator.h"

namespace transformer {

// A Generator loads as a Translator does (vocabulary, weights, threads, device); a shortlist is
// refused (it selects target tokens from source tokens, which a language model has none of).
using GeneratorOptions = TranslatorOptions;

// The options of a generate call, shared by the library, `transformer generate`, Python and the
// server. The search is translation's SearchOptions: beam_size (1, the default here: greedy),
// n_best, length_penalty and its normalization, beam_stop, return_scores, and the sampling fields
// (sampling_topk/topp/temperature and seed; a prompt's draws come from the stream of the seed and
// its prompt ids). Its max_length_a/b and min_length are replaced by the two limits below, and
// record_attention must stay false.
struct GenerationOptions {
  SearchOptions search = greedy();
  int64_t max_new_tokens = 50;  // at most this many tokens after the prompt (end of sequence excluded)
  int64_t min_new_tokens = 0;   // no end of sequence before this many (≤ max_new_tokens)
  bool include_prompt = false;  // each hypothesis's ids and text begin with the prompt's
  int64_t batch_sentences = 64;     // prompts decoded together (those of one length at once), ≤ kMaxBatchSentences
  int64_t max_input_tokens = 1024;  // longer prompts are refused, naming the limit; ≤ kMaxInputTokens

  // Throws Error naming the first option out of range.
  void validate() const;
  static SearchOptions greedy() {
    SearchOptions s;
    s.beam_size = 1;
    return s;
  }
};

struct Generation {
  // n-best, best first: ids and text are the continuation (with include_prompt the prompt first),
  // without the end of sequence; score Σ log p of the continuation and its end (when return_scores).
  // A continuation that reaches max_new_tokens ends there, scored and length-normalized without an
  // end after it, as Hugging Face's generate() ends it (so beam search ranks as generate() does).
  std::vector<Hypothesis> hypotheses;
  std::vector<int32_t> prompt_ids;  // the prompt as fed: for text, BOS then the encoded text
  Repairs repairs;                  // what clean_input changed in the prompt (text only)
  const Hypothesis& best() const;   // throws Error when there is none
};

// Called with (prompt index, token id) as each token is generated (greedy search and sampling only).
using TokenCallback = std::function<void(int64_t, int32_t)>;

class Generator {
 public:
  // Loads the model, which must be decoder-only (the error names its architecture), and unless
  // options.need_vocab is false its vocabulary.
  explicit Generator(const std::string& model_path, const GeneratorOptions& options = {});
  ~Generator();
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;

  // Text prompts → continuations, in input order. A prompt is cleaned (clean_input), encoded, and
  // fed after BOS (an empty prompt: BOS alone). A prompt longer than max_input_tokens is a
  // SentenceError naming the limit.
  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerationOptions& options = {},
                                         const TokenCallback& on_token = {}) const;
  // Token id prompts, fed exactly as given (nothing added; an empty one is BOS alone); hypotheses
  // with ids only.
  std::vector<Generation> generate_batch_ids(const std::vector<std::vector<int32_t>>& prompts,
                                             const GenerationOptions& options = {},
                                             const TokenCallback& on_token = {}) const;
  // One prompt.
  Generation generate(const std::string& prompt, const GenerationOptions& options = {},
                      const TokenCallback& on_token = {}) const;

  // Scoring: each text's log-probability under the model by teacher forcing (Score::total: Σ log p
  // of its tokens and the end of sequence, after BOS; tokens counts the end too). A model without
  // BOS (bos_id −1) scores the tokens after the first, which is their context only. A text is cleaned
  // (target_repairs says what changed) and encoded; one of more than max_input_tokens tokens (or
  // than a learned position table holds after BOS) has its first scored (truncated). Each alone, as
  // Translator::score. Needs the float32 weights as trained (weights kPlain or kBf16).
  std::vector<Score> score(const std::vector<std::string>& texts, const ScoreOptions& options = {}) const;
  // Token id sequences (without BOS and EOS, which scoring adds), each id in the vocabulary.
  std::vector<Score> score_ids(const std::vector<std::vector<int32_t>>& sequences,
                               const ScoreOptions& options = {}) const;

  // The vocabulary, as Translator's.
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  bool has_vocab() const;
  // Space-separated token ids of line `line_number`, any id of the vocabulary (BOS and EOS too);
  // throws naming the line and the bad word or id.
  std::vector<int32_t> parse_ids(std::string_view line, int64_t line_number) const;

  int64_t vocab_size() const;
  int32_t bos_id() const;
  const LoadNotes& load_notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace transformer
