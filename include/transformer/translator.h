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
#include "transformer/search_options.h"
#include "transformer/text.h"
#include "transformer/translation.h"

namespace transformer {

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

  // log p(targets[i] | sources[i]) for each pair, by the model's teacher-forced forward pass (text:
  // refused for a multilingual model, whose sides need their language tokens; score_ids them): it
  // needs the weights as trained (TranslatorOptions::Weights::kPlain, or kBf16 for bfloat16
  // products); other translators refuse.
  std::vector<Score> score(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                           const ScoreOptions& options = {}) const;
  std::vector<Score> score_ids(const std::vector<std::vector<int32_t>>& sources,
                               const std::vector<std::vector<int32_t>>& targets, const ScoreOptions& options = {}) const;

  // The vocabulary (throws Error when the translator was loaded without one). encode cleans the
  // text first (clean_input), as translate and score do: it gives the ids they would translate.
  std::vector<int32_t> encode(std::string_view text) const;
  // The source ids translate gives the model for `text`: encode's, after the source language's
  // token for a multilingual model (refused as translate refuses the languages given).
  std::vector<int32_t> encode_source(std::string_view text, const LanguageOptions& languages) const;
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
