#pragma once
// Embedding with a model's encoder (docs/api.md): an Encoder loads an encoder-only model (BERT), or
// the encoder of an encoder-decoder model, once; each call gives one vector per input (or every
// token's hidden state), its sentences sorted by length into batches that are encoded together,
// the results in input order.
//
//   transformer::Encoder e("runs/bert/model.safetensors");
//   transformer::EmbedOptions o;
//   o.normalize = true;
//   for (const auto& v : e.embed({"a sentence", "another"}, o)) use(v.values);  // v.dim floats each
//
// How a text is wrapped: an encoder-only model reads beginning-of-sentence (its bos_id, BERT's
// [CLS]) + the text's tokens + end-of-sentence (eos_id, BERT's [SEP]); the bos is left out when
// bos_id is −1. The encoder of an encoder-decoder model reads what translation gives it: the tokens
// + end-of-sentence. An empty text still gets a vector, from the specials alone. embed_ids takes
// ids exactly as given (nothing added). Text input goes through clean_input (transformer/text.h),
// its repairs reported on the result. Every error is a transformer::Error naming the problem and the
// value (a SentenceError naming the input). An Encoder may be used from several threads at once.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transformer/embed_options.h"
#include "transformer/error.h"
#include "transformer/text.h"
#include "transformer/translator.h"

namespace transformer {

// How an Encoder loads its model: TranslatorOptions' fields vocab, need_vocab, verify, weights
// (kPacked by default; kInt8, kPlain, kBf16) and device (threads: EmbedOptions::threads); the
// shortlist is refused (it is about the decoder's output).
using EncoderOptions = TranslatorOptions;

class Encoder {
 public:
  // Loads the model (an encoder-only model, or an encoder-decoder one whose encoder embeds; a
  // decoder-only model has none and is refused) and, unless need_vocab is false, its vocabulary.
  explicit Encoder(const std::string& model_path, const EncoderOptions& options = {});
  ~Encoder();
  Encoder(Encoder&&) noexcept;
  Encoder& operator=(Encoder&&) noexcept;

  // Texts → embeddings, in input order.
  std::vector<Embedding> embed(const std::vector<std::string>& texts, const EmbedOptions& options = {}) const;
  // Token ids, taken exactly as given (no specials added; an empty sequence or a padding id is
  // refused) → embeddings. token_types: empty (all type 0), or one sequence per input of the same
  // length, each in [0, the model's token_types) (a model without token types takes only 0).
  std::vector<Embedding> embed_ids(const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& options = {},
                                   const std::vector<std::vector<int32_t>>& token_types = {}) const;

  // The ids embed() encodes a text to (cleaned, specials added).
  std::vector<int32_t> encode(std::string_view text) const;
  // Space-separated token ids, as `embed --ids` reads them; throws naming line_number and the bad
  // word or id (outside the vocabulary, or padding).
  std::vector<int32_t> parse_ids(std::string_view line, int64_t line_number) const;
  // The options a call with `options` uses: pooling and normalize, where unset, the model's defaults
  // (those its file records, else mean and not normalized).
  EmbedOptions resolve(const EmbedOptions& options) const;
  bool has_vocab() const;
  int64_t dim() const;                  // d_model, the length of each vector
  const std::string& architecture() const;  // the model's (encoder-only or encoder-decoder)
  const std::string& model_path() const;
  const LoadNotes& load_notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace transformer
