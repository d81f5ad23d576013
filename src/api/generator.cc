// transformer::Generator (include/transformer/generator.h): a decoder-only model, its vocabulary and
// its inference weights, over decode/'s generate_search.
#include "transformer/generator.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "api/loading.h"
#include "core/device.h"
#include "core/error.h"
#include "core/threads.h"
#include "data/vocab.h"
#include "decode/scorer.h"
#include "decode/search.h"
#include "model/batch.h"
#include "decode/translator.h"

namespace transformer {

using tfm::cat;

namespace {
// Why an empty prompt cannot be continued by a model without BOS.
std::string empty_prompt_without_bos() {
  return "the prompt is empty, and this model puts no BOS before a prompt (bos_id -1): generation needs at least "
         "one token to start from";
}
}  // namespace

const Hypothesis& Generation::best() const {
  TFM_CHECK(!hypotheses.empty(), "the generation has no hypothesis");
  return hypotheses.front();
}

void GenerationOptions::validate() const {
  search.validate();
  TFM_CHECK(max_new_tokens >= 0 && max_new_tokens <= kMaxInputTokens, "max_new_tokens must be in [0, ",
            kMaxInputTokens, "], got ", max_new_tokens);
  TFM_CHECK(min_new_tokens >= 0 && min_new_tokens <= max_new_tokens, "min_new_tokens must be in [0, max_new_tokens ",
            max_new_tokens, "], got ", min_new_tokens);
  TFM_CHECK(batch_sentences >= 1 && batch_sentences <= kMaxBatchSentences, "batch_sentences must be in [1, ",
            kMaxBatchSentences, "], got ", batch_sentences);
  TFM_CHECK(max_input_tokens >= 1 && max_input_tokens <= kMaxInputTokens, "max_input_tokens must be in [1, ",
            kMaxInputTokens, "], got ", max_input_tokens);
  TFM_CHECK(!search.record_attention, "generation records no attention (a decoder-only model has no "
            "encoder-decoder attention): leave record_attention false");
}

struct Generator::Impl {
  GeneratorOptions options;
  std::unique_ptr<tfm::Transformer> model;
  tfm::Vocab vocab;
  bool has_vocab = false;
  LoadNotes notes;

  const tfm::Vocab& need_vocab() const {
    TFM_CHECK(has_vocab, "the generator was loaded without a vocabulary (need_vocab = false): give token ids");
    return vocab;
  }
  void load_vocab(const std::string& model_path, const std::string& fingerprint) {
    const std::string path = options.vocab.empty() ? tfm::default_vocab_path(model_path) : options.vocab;
    TFM_CHECK(std::filesystem::exists(path), "no vocabulary: '", path, "' does not exist (give vocab, --vocab)");
    vocab = tfm::Vocab::load(path);
    has_vocab = true;
    TFM_CHECK(vocab.size() == model->config().vocab_size, "the vocabulary '", path, "' has ", vocab.size(),
              " pieces but the model has ", model->config().vocab_size);
    TFM_CHECK(fingerprint.empty() || fingerprint == vocab.fingerprint(), "the vocabulary '", path,
              "' is not the one '", model_path, "' was trained with (fingerprint ", vocab.fingerprint(),
              ", the model's ", fingerprint, ")");
  }
  // The inference weights the options ask for (as Translator's).
  void prepare_weights() {
    using W = GeneratorOptions::Weights;
    using P = tfm::Transformer::PlainWeights;
    const tfm::Device device = tfm::parse_device(options.device, "device");
    if (device != tfm::Device::CPU) {
      TFM_CHECK(options.weights != W::kInt8, "int8 weights are for the CPU; on ", options.device,
                " the model runs in float32 (leave out the int8 weights, --int8)");
      tfm::require_device_memory(device, "generating");
      model->params().to_device(device, /*gradients=*/false);
    }
    if (options.weights == W::kInt8) model->quantize_int8(P::kRelease);
    else if (options.weights == W::kPacked) model->pack_weights(P::kRelease);
    else if (options.weights == W::kBf16) model->use_bf16_products(P::kRelease);
  }
  // Batches of prompts, in input order: each generated, its hypotheses converted.
  std::vector<Generation> run(const std::vector<std::vector<int32_t>>& prompts, const GenerationOptions& o, bool text,
                              const TokenCallback& on_token) const;
};

std::vector<Generation> Generator::Impl::run(const std::vector<std::vector<int32_t>>& prompts,
                                             const GenerationOptions& o, bool text,
                                             const TokenCallback& on_token) const {
  tfm::ScopedThreads threads(options.threads);
  std::vector<Generation> out(prompts.size());
  const auto batch = static_cast<size_t>(o.batch_sentences);
  for (size_t first = 0; first < prompts.size(); first += batch) {
    const size_t end = std::min(prompts.size(), first + batch);
    const std::vector<std::vector<int32_t>> chunk(prompts.begin() + static_cast<std::ptrdiff_t>(first),
                                                  prompts.begin() + static_cast<std::ptrdiff_t>(end));
    tfm::TokenCallback report;
    if (on_token) report = [&](int64_t i, int32_t id) { on_token(static_cast<int64_t>(first) + i, id); };
    auto done = tfm::generate_search(*model, chunk, o.search, o.max_new_tokens, o.min_new_tokens, report);
    for (size_t i = 0; i < chunk.size(); ++i) {
      Generation& g = out[first + i];
      g.prompt_ids = chunk[i];
      for (tfm::Hypothesis& h : done[i]) {
        Hypothesis r;
        if (o.include_prompt) r.ids = chunk[i];
        r.ids.insert(r.ids.end(), h.tokens.begin(), h.tokens.end());
        if (text) r.text = vocab.decode(r.ids);
        r.score = h.score;
        r.normalized = h.normalized;
        g.hypotheses.push_back(std::move(r));
      }
    }
  }
  return out;
}

Generator::Generator(const std::string& model_path, const GeneratorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  TFM_CHECK(options.threads >= 0 && options.threads <= tfm::kMaxThreads, "threads must be in [0, ", tfm::kMaxThreads,
            "] (0: the process's default), got ", options.threads);
  TFM_CHECK(options.shortlist.empty(), "a shortlist selects target tokens by source tokens: a language model has no "
            "source (leave out the shortlist '", options.shortlist, "')");
  tfm::ScopedThreads threads(options.threads);
  const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(model_path);
  m.model = api::load_model_noting(file, options.verify, m.notes);
  const std::string& arch = m.model->config().architecture;
  TFM_CHECK(arch == "decoder-only", "'", model_path, "' is an ", arch,
            " model; generation needs a decoder-only one (translate with this one, or embed with an encoder-only one)");
  if (options.need_vocab) m.load_vocab(model_path, api::vocab_fingerprint(file));
  m.prepare_weights();
}

Generator::~Generator() = default;
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;

std::vector<Generation> Generator::generate_batch(const std::vector<std::string>& prompts,
                                                  const GenerationOptions& options,
                                                  const TokenCallback& on_token) const {
  options.validate();
  const tfm::Vocab& vocab = impl_->need_vocab();
  // Text over 64 bytes a token allowed is refused before tokenizing (which costs ~250 bytes of
  // memory a byte): no token takes that many bytes.
  const size_t max_bytes = static_cast<size_t>(options.max_input_tokens) * 64;
  std::vector<std::vector<int32_t>> ids;
  std::vector<Repairs> repairs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    CleanText clean = clean_input(prompts[i]);
    if (clean.text.size() > max_bytes)
      throw SentenceError(static_cast<long long>(i),
                          cat("the prompt has ", clean.text.size(), " bytes, more than the input token limit of ",
                              options.max_input_tokens, " allows (64 bytes a token)"));
    // BOS first, unless the model has none (bos_id −1: Hugging Face's GPT-2 and Qwen2 put none).
    const int32_t bos = impl_->model->config().bos_id;
    std::vector<int32_t> p;
    if (bos >= 0) p.push_back(bos);
    const std::vector<int32_t> encoded = vocab.encode(clean.text, tfm::Side::kTarget);
    p.insert(p.end(), encoded.begin(), encoded.end());
    if (p.empty()) throw SentenceError(static_cast<long long>(i), empty_prompt_without_bos());
    if (static_cast<int64_t>(p.size()) > options.max_input_tokens)
      throw SentenceError(static_cast<long long>(i), cat("the prompt has ", p.size(), " tokens with BOS, more than "
                                                         "the input token limit of ", options.max_input_tokens));
    ids.push_back(std::move(p));
    repairs.push_back(clean.repairs);
  }
  std::vector<Generation> out = impl_->run(ids, options, true, on_token);
  for (size_t i = 0; i < out.size(); ++i) out[i].repairs = repairs[i];
  return out;
}

std::vector<Generation> Generator::generate_batch_ids(const std::vector<std::vector<int32_t>>& prompts,
                                                      const GenerationOptions& options,
                                                      const TokenCallback& on_token) const {
  options.validate();
  const tfm::ModelConfig& c = impl_->model->config();
  std::vector<std::vector<int32_t>> ids(prompts);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty() && c.bos_id < 0) throw SentenceError(static_cast<long long>(i), empty_prompt_without_bos());
    if (ids[i].empty()) ids[i].push_back(c.bos_id);
    if (static_cast<int64_t>(ids[i].size()) > options.max_input_tokens)
      throw SentenceError(static_cast<long long>(i), cat("the prompt has ", ids[i].size(),
                                                         " tokens, more than the input token limit of ",
                                                         options.max_input_tokens));
    for (int32_t v : ids[i])
      if (v < 0 || v >= c.vocab_size)
        throw SentenceError(static_cast<long long>(i),
                            cat("token id ", v, " is outside the vocabulary [0, ", c.vocab_size, ")"));
  }
  return impl_->run(ids, options, false, on_token);
}

Generation Generator::generate(const std::string& prompt, const GenerationOptions& options,
                               const TokenCallback& on_token) const {
  return generate_batch({prompt}, options, on_token).front();
}

std::vector<Score> Generator::score(const std::vector<std::string>& texts, const ScoreOptions& options) const {
  options.validate();
  const tfm::Vocab& vocab = impl_->need_vocab();
  // No token takes 64 bytes: text beyond that many bytes a token allowed is cut before tokenizing.
  const auto max_bytes = static_cast<size_t>(options.max_input_tokens) * 64;
  std::vector<std::vector<int32_t>> ids;
  std::vector<Repairs> repairs;
  std::vector<bool> cut;
  for (const std::string& text : texts) {
    CleanText clean = clean_input(text);
    size_t end = clean.text.size();
    if (end > max_bytes) {
      end = max_bytes;
      while (end > 0 && (static_cast<unsigned char>(clean.text[end]) & 0xC0) == 0x80) --end;  // a character's start
    }
    ids.push_back(vocab.encode(clean.text.substr(0, end), tfm::Side::kTarget));
    cut.push_back(end < clean.text.size());
    repairs.push_back(clean.repairs);
  }
  std::vector<Score> out = score_ids(ids, options);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].truncated = out[i].truncated || cut[i];
    out[i].target_repairs = repairs[i];
  }
  return out;
}

std::vector<Score> Generator::score_ids(const std::vector<std::vector<int32_t>>& sequences,
                                        const ScoreOptions& options) const {
  options.validate();
  using W = GeneratorOptions::Weights;
  TFM_CHECK(impl_->options.weights == W::kPlain || impl_->options.weights == W::kBf16,
            "scoring runs the model's teacher-forced forward pass, which needs the float32 weights as trained: load "
            "the Generator with weights = plain or bf16");
  const tfm::Transformer& model = *impl_->model;
  const tfm::ModelConfig& c = model.config();
  const int64_t V = c.vocab_size;
  // A learned position table also bounds the tokens scored: BOS and the tokens must fit in it.
  int64_t limit = options.max_input_tokens;
  if (c.max_positions > 0) limit = std::min(limit, c.max_positions - c.position_offset - 1);
  tfm::ScopedThreads threads(impl_->options.threads);
  std::vector<Score> out(sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) {
    std::vector<int32_t> seq = sequences[i];
    for (int32_t v : seq)
      if (v < 0 || v >= V)
        throw SentenceError(static_cast<long long>(i), cat("token id ", v, " is outside the vocabulary [0, ", V, ")"));
    if (static_cast<int64_t>(seq.size()) > limit) {
      seq.resize(static_cast<size_t>(std::max<int64_t>(limit, 0)));
      out[i].truncated = true;
    }
    // Each alone, a batch of one without padding: its score does not depend on the others.
    const tfm::Batch batch = tfm::make_lm_batch({seq}, model.config());
    const tfm::ScoredBatch scored = tfm::score_batch(model, model.context(), batch, 0.0, nullptr);
    out[i].total = tfm::sentence_log_probs(batch, scored)[0];
    out[i].tokens = batch.tgt_lengths.data<int32_t>()[0];
    out[i].per_token = out[i].total / static_cast<double>(out[i].tokens);
  }
  return out;
}

std::vector<int32_t> Generator::encode(std::string_view text) const {
  return impl_->need_vocab().encode(clean_input(text).text, tfm::Side::kTarget);
}
std::string Generator::decode(const std::vector<int32_t>& ids) const {
  const tfm::Vocab& vocab = impl_->need_vocab();
  for (size_t i = 0; i < ids.size(); ++i)
    TFM_CHECK(ids[i] >= 0 && ids[i] < vocab.size(), "decode: token id ", ids[i], " (at ", i,
              ") is outside the vocabulary [0, ", vocab.size(), ")");
  return vocab.decode(ids);
}
bool Generator::has_vocab() const { return impl_->has_vocab; }
int64_t Generator::vocab_size() const { return impl_->model->config().vocab_size; }
int32_t Generator::bos_id() const { return impl_->model->config().bos_id; }
const LoadNotes& Generator::load_notes() const { return impl_->notes; }

std::vector<int32_t> Generator::parse_ids(std::string_view line, int64_t line_number) const {
  const int64_t V = vocab_size();
  return api::parse_id_line(line, line_number, [&](long long id, const std::string& word) {
    TFM_CHECK(id >= 0 && id < V, "line ", line_number, ": token id ", word, " is outside the vocabulary [0, ", V, ")");
  });
}

}  // namespace transformer
