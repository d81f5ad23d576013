// transformer::Encoder (include/transformer/encoder.h): a model's encoder, its vocabulary and its
// inference weights, over decode/embedding (batching and pooling); the embedding options' checks.
#include "transformer/encoder.h"

#include <algorithm>

#include "api/loading.h"
#include "core/error.h"
#include "core/threads.h"
#include "decode/embedding.h"

namespace transformer {

using tfm::cat;

void EmbedOptions::validate() const {
  const int p = pooling ? static_cast<int>(*pooling) : 0;
  TFM_CHECK(p >= 0 && p <= static_cast<int>(Pooling::kMax), "pooling must be mean, cls, last, max or none, got ", p);
  TFM_CHECK(batch_sentences >= 1 && batch_sentences <= kMaxBatchSentences, "batch size must be in [1, ",
            kMaxBatchSentences, "] sentences, got ", batch_sentences);
  TFM_CHECK(max_input_tokens >= 1 && max_input_tokens <= kMaxInputTokens, "the input token limit must be in [1, ",
            kMaxInputTokens, "], got ", max_input_tokens);
  TFM_CHECK(threads >= 0 && threads <= tfm::kMaxThreads, "threads must be in [0, ", tfm::kMaxThreads,
            "] (0: the process's default), got ", threads);
}

struct Encoder::Impl {
  std::string path;
  EncoderOptions options;
  std::unique_ptr<tfm::Transformer> model;
  tfm::Vocab vocab;
  bool has_vocab = false;
  LoadNotes notes;

  const tfm::ModelConfig& config() const { return model->config(); }
  // The ids the encoder reads for a text's tokens: encoder-only [bos] tokens eos, else tokens eos.
  std::vector<int32_t> wrap(std::vector<int32_t> tokens) const {
    const tfm::ModelConfig& c = config();
    if (c.architecture == "encoder-only" && c.bos_id >= 0) tokens.insert(tokens.begin(), c.bos_id);
    tokens.push_back(c.eos_id);
    return tokens;
  }
  // Token types checked against the inputs and the model's; all zero ones dropped (the model's default).
  std::vector<std::vector<int32_t>> check_types(const std::vector<std::vector<int32_t>>& inputs,
                                                const std::vector<std::vector<int32_t>>& types) const {
    const int64_t G = std::max<int64_t>(config().token_types, 1);
    TFM_CHECK(types.empty() || types.size() == inputs.size(), "there are ", inputs.size(), " inputs but ",
              types.size(), " token type sequences (give one per input, or none)");
    bool any = false;
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i].size() != inputs[i].size())
        throw SentenceError(static_cast<long long>(i),
                            cat("it has ", inputs[i].size(), " tokens but ", types[i].size(), " token types"));
      for (int32_t t : types[i]) {
        if (t < 0 || t >= G)
          throw SentenceError(static_cast<long long>(i),
                              cat("token type ", t, " is outside the model's token types [0, ", G, ")"));
        any = any || t != 0;
      }
    }
    return any ? types : std::vector<std::vector<int32_t>>{};
  }
  std::vector<Embedding> run(const std::vector<std::vector<int32_t>>& ids, const EmbedOptions& o,
                             const std::vector<std::vector<int32_t>>& types) const {
    tfm::ScopedThreads threads(o.threads);
    return tfm::embed_ids(*model, ids, types, o);
  }
};

Encoder::Encoder(const std::string& model_path, const EncoderOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = model_path;
  m.options = options;
  TFM_CHECK(options.threads >= 0 && options.threads <= tfm::kMaxThreads, "threads must be in [0, ", tfm::kMaxThreads,
            "] (0: the process's default), got ", options.threads);
  TFM_CHECK(options.shortlist.empty(), "a shortlist restricts a decoder's output; an encoder has none (leave out '",
            options.shortlist, "')");
  tfm::ScopedThreads threads(options.threads);
  const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(model_path);
  m.model = api::load_model_noting(file, options.verify, m.notes);
  TFM_CHECK(m.model->config().has_encoder(), "'", model_path, "' is a ", m.model->config().architecture,
            " model, which has no encoder to embed with (give an encoder-only or encoder-decoder model)");
  if (options.need_vocab) {
    m.vocab = api::load_matching_vocab(model_path, options.vocab, *m.model, api::vocab_fingerprint(file), m.notes);
    m.has_vocab = true;
  }
  api::prepare_inference_weights(*m.model, options.weights, options.device, "embedding");
}

Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

std::vector<Embedding> Encoder::embed(const std::vector<std::string>& texts, const EmbedOptions& options) const {
  options.validate();  // before any tokenizing
  TFM_CHECK(impl_->has_vocab, "the encoder was loaded without a vocabulary (need_vocab = false): give token ids");
  std::vector<std::vector<int32_t>> ids;
  std::vector<Repairs> repairs;
  ids.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    CleanText clean = clean_input(texts[i]);
    bool cut = false;
    std::vector<int32_t> tokens =
        api::encode_bounded(impl_->vocab, clean.text, options.max_input_tokens, tfm::Side::kSource, cut);
    if (cut && static_cast<int64_t>(tokens.size()) <= options.max_input_tokens)
      throw SentenceError(static_cast<long long>(i),
                          cat("it has ", clean.text.size(), " bytes, more than the input token limit of ",
                              options.max_input_tokens, " allows (", api::kBytesPerToken * api::kMaxGrowth,
                              " bytes a token)"));
    ids.push_back(impl_->wrap(std::move(tokens)));
    repairs.push_back(clean.repairs);
  }
  std::vector<Embedding> out = impl_->run(ids, options, {});
  for (size_t i = 0; i < out.size(); ++i) out[i].repairs = repairs[i];
  return out;
}

std::vector<Embedding> Encoder::embed_ids(const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& options,
                                          const std::vector<std::vector<int32_t>>& token_types) const {
  options.validate();
  const tfm::ModelConfig& c = impl_->config();
  for (size_t i = 0; i < inputs.size(); ++i)
    for (int32_t v : inputs[i]) {
      if (v < 0 || v >= c.vocab_size)
        throw SentenceError(static_cast<long long>(i),
                            cat("token id ", v, " is outside the vocabulary [0, ", c.vocab_size, ")"));
      if (v == c.pad_id)
        throw SentenceError(static_cast<long long>(i), cat("token id ", v, " is the padding id, which input may not "
                                                           "contain"));
    }
  return impl_->run(inputs, options, impl_->check_types(inputs, token_types));
}

std::vector<int32_t> Encoder::encode(std::string_view text) const {
  TFM_CHECK(impl_->has_vocab, "the encoder was loaded without a vocabulary (need_vocab = false)");
  return impl_->wrap(impl_->vocab.encode(clean_input(text).text));
}

std::vector<int32_t> Encoder::parse_ids(std::string_view line, int64_t line_number) const {
  const tfm::ModelConfig& c = impl_->config();
  return api::parse_id_line(line, line_number, [&](long long v, const std::string& word) {
    TFM_CHECK(v >= 0 && v < c.vocab_size, "line ", line_number, ": token id ", word, " is outside the vocabulary [0, ",
              c.vocab_size, ")");
    TFM_CHECK(v != c.pad_id, "line ", line_number, ": token id ", v, " is the padding id, which input may not contain");
  });
}

EmbedOptions Encoder::resolve(const EmbedOptions& options) const {
  return tfm::resolve_embed_options(impl_->config(), options);
}

bool Encoder::has_vocab() const { return impl_->has_vocab; }
int64_t Encoder::dim() const { return impl_->config().d_model; }
const std::string& Encoder::architecture() const { return impl_->config().architecture; }
const std::string& Encoder::model_path() const { return impl_->path; }
const LoadNotes& Encoder::load_notes() const { return impl_->notes; }

}  // namespace transformer
