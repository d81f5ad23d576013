// transformer::Translator (include/transformer/translator.h): a model, its vocabulary and its
// inference weights, over decode/ (search and batching) and the model's teacher-forced forward pass.
#include "transformer/translator.h"

#include <algorithm>
#include <filesystem>

#include "api/languages.h"
#include "api/loading.h"
#include "core/device.h"
#include "core/error.h"
#include "core/threads.h"
#include "data/vocab.h"
#include "decode/scorer.h"
#include "decode/shortlist.h"
#include "decode/translator.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "ops/matmul.h"

namespace transformer {

using tfm::cat;
using api::encode_bounded;
using api::kBytesPerToken;
using api::kMaxGrowth;

const Hypothesis& Translation::best() const {
  TFM_CHECK(!hypotheses.empty(), "an empty input has no translation");
  return hypotheses.front();
}

namespace {
// An id input may hold: in the vocabulary, and not padding, BOS or EOS (the model adds those
// itself). `as_written`: the id as the caller gave it; `where`: "line 3", "target prefix", or "".
void check_token_id(const tfm::ModelConfig& c, long long v, const std::string& as_written, const std::string& where) {
  const std::string at = where.empty() ? "" : where + ": ";
  TFM_CHECK(v >= 0 && v < c.vocab_size, at, "token id ", as_written, " is outside the vocabulary [0, ",
            c.vocab_size, ")");
  TFM_CHECK(v != c.pad_id && v != c.bos_id && v != c.eos_id, at, "token id ", v, " is the ",
            v == c.pad_id ? "padding" : v == c.bos_id ? "beginning-of-sentence" : "end-of-sentence",
            " id, which input may not contain");
}
}  // namespace

struct Translator::Impl {
  std::string path;
  TranslatorOptions options;
  std::unique_ptr<tfm::Transformer> model;
  tfm::Vocab vocab;
  bool has_vocab = false;
  std::string fingerprint;  // recorded in the model file
  tfm::Shortlist shortlist;
  bool has_shortlist = false;
  LoadNotes notes;

  const tfm::Vocab& need_vocab() const {
    TFM_CHECK(has_vocab, "the translator was loaded without a vocabulary (need_vocab = false): give token ids");
    return vocab;
  }
  Hypothesis convert(tfm::Hypothesis& h, bool text) const {
    Hypothesis out;
    out.ids = std::move(h.tokens);
    if (text) out.text = vocab.decode(out.ids);
    out.score = h.score;
    out.normalized = h.normalized;
    if (h.attention.defined()) {  // [layers, heads, target, source]
      const tfm::Tensor& a = h.attention;
      out.attention.layers = a.size(0);
      out.attention.heads = a.size(1);
      out.attention.target_length = a.size(2);
      out.attention.source_length = a.size(3);
      const float* p = a.data<float>();
      out.attention.weights.assign(p, p + a.numel());
    }
    return out;
  }
  std::vector<Translation> translate(const std::vector<std::vector<int32_t>>& sources, const TranslateOptions& o,
                                     bool text, const std::vector<std::vector<int32_t>>& prefixes) const {
    tfm::ScopedThreads threads(options.threads);
    std::vector<tfm::Translation> done =
        tfm::translate_ids(*model, sources, o, has_shortlist ? &shortlist : nullptr, prefixes);
    std::vector<Translation> out(done.size());
    for (size_t i = 0; i < done.size(); ++i) {
      out[i].source_ids = std::move(done[i].source_ids);
      out[i].target_prefix_ids = std::move(done[i].prefix_ids);
      out[i].truncated = done[i].truncated;
      for (tfm::Hypothesis& h : done[i].hypotheses) out[i].hypotheses.push_back(convert(h, text));
    }
    return out;
  }
  // `what`: "" for a source or a target to score, or "target prefix"; an error is a SentenceError.
  void check_ids(const std::vector<int32_t>& ids, size_t sentence, const char* what = "") const {
    try {
      for (int32_t v : ids) check_token_id(model->config(), v, std::to_string(v), what);
    } catch (const Error& e) {
      throw SentenceError(static_cast<long long>(sentence), e.what());
    }
  }
  void check_prefix_count(size_t sentences, size_t prefixes) const {
    TFM_CHECK(prefixes == 0 || prefixes == sentences, "there are ", sentences, " sentences but ", prefixes,
              " target prefixes (give one per sentence, empty for none, or none at all)");
  }
};

Translator::Translator(const std::string& model_path, const TranslatorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = model_path;
  m.options = options;
  TFM_CHECK(options.threads >= 0 && options.threads <= tfm::kMaxThreads, "threads must be in [0, ", tfm::kMaxThreads,
            "] (0: the process's default), got ", options.threads);
  tfm::ScopedThreads threads(options.threads);
  const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(model_path);
  m.model = api::load_model_noting(file, options.verify, m.notes);
  m.fingerprint = api::vocab_fingerprint(file);
  if (options.need_vocab) {
    m.vocab = api::load_matching_vocab(model_path, options.vocab, *m.model, m.fingerprint, m.notes);
    m.has_vocab = true;
  }
  // Translation never reads the float32 weights again once they have their copies.
  api::prepare_inference_weights(*m.model, options.weights, options.device);
  if (!options.shortlist.empty()) {
    m.shortlist = tfm::Shortlist::load(options.shortlist, m.model->config().vocab_size);
    m.shortlist.check_vocabulary(m.model->config().vocab_size,
                                 m.fingerprint.empty() && m.has_vocab ? m.vocab.fingerprint() : m.fingerprint,
                                 model_path);
    m.has_shortlist = true;
  }
}

Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

std::vector<Translation> Translator::translate(const std::vector<std::string>& lines, const TranslateOptions& options,
                                               const std::vector<std::string>& target_prefixes) const {
  options.validate();  // before any tokenizing
  impl_->check_prefix_count(lines.size(), target_prefixes.size());
  const tfm::Vocab& vocab = impl_->need_vocab();
  std::vector<std::vector<int32_t>> sources, prefixes;
  std::vector<Repairs> repairs, prefix_repairs;
  std::vector<bool> cut;
  sources.reserve(lines.size());
  for (const std::string& line : lines) {
    CleanText clean = clean_input(line);
    bool was_cut = false;
    sources.push_back(encode_bounded(vocab, clean.text, options.max_input_tokens, tfm::Side::kSource, was_cut));
    cut.push_back(was_cut);
    repairs.push_back(clean.repairs);
  }
  for (size_t i = 0; i < target_prefixes.size(); ++i) {
    CleanText clean = clean_input(target_prefixes[i]);
    bool was_cut = false;
    prefixes.push_back(encode_bounded(vocab, clean.text, options.max_input_tokens, tfm::Side::kTarget, was_cut));
    // Over the limit in tokens it is refused when translated; over it in bytes, here.
    if (was_cut && static_cast<int64_t>(prefixes.back().size()) <= options.max_input_tokens)
      throw SentenceError(static_cast<long long>(i),
                          tfm::cat("the target prefix has ", clean.text.size(),
                                   " bytes, more than the input token limit of ", options.max_input_tokens, " allows (",
                                   kBytesPerToken * kMaxGrowth, " bytes a token)"));
    prefix_repairs.push_back(clean.repairs);
  }
  const api::LanguageTokens languages = api::language_tokens(&vocab, options.languages, true);
  api::add_language_tokens(languages, sources, prefixes, options.max_input_tokens, &cut);
  TranslateOptions o = options;
  if (languages.target >= 0) o.search.unscored_prefix = 1;
  std::vector<Translation> out = impl_->translate(sources, o, true, prefixes);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].truncated = out[i].truncated || cut[i];
    out[i].repairs = repairs[i];
    if (!prefix_repairs.empty()) out[i].prefix_repairs = prefix_repairs[i];
  }
  return out;
}

std::vector<Translation> Translator::translate_ids(const std::vector<std::vector<int32_t>>& sources,
                                                   const TranslateOptions& options,
                                                   const std::vector<std::vector<int32_t>>& target_prefixes) const {
  options.validate();
  impl_->check_prefix_count(sources.size(), target_prefixes.size());
  for (size_t i = 0; i < sources.size(); ++i) impl_->check_ids(sources[i], i);
  for (size_t i = 0; i < target_prefixes.size(); ++i) impl_->check_ids(target_prefixes[i], i, "target prefix");
  const api::LanguageTokens languages =
      api::language_tokens(impl_->has_vocab ? &impl_->vocab : nullptr, options.languages, false);
  if (languages.target < 0) return impl_->translate(sources, options, false, target_prefixes);
  std::vector<std::vector<int32_t>> given = sources, prefixes = target_prefixes;
  api::add_language_tokens(languages, given, prefixes, options.max_input_tokens, nullptr);
  TranslateOptions o = options;
  o.search.unscored_prefix = 1;
  return impl_->translate(given, o, false, prefixes);
}

std::vector<Score> Translator::score(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                                     const ScoreOptions& options) const {
  options.validate();
  TFM_CHECK(sources.size() == targets.size(), "there are ", sources.size(), " sources but ", targets.size(),
            " targets");
  const tfm::Vocab& vocab = impl_->need_vocab();
  TFM_CHECK(vocab.languages().empty(), "scoring text with a multilingual model is not supported (its sides need "
            "their language tokens): score token ids, each side's language token first");
  std::vector<std::vector<int32_t>> src, tgt;
  std::vector<Repairs> src_repairs, tgt_repairs;
  std::vector<bool> cut;
  for (size_t i = 0; i < sources.size(); ++i) {
    CleanText s = clean_input(sources[i]), t = clean_input(targets[i]);
    bool cut_source = false, cut_target = false;
    src.push_back(encode_bounded(vocab, s.text, options.max_input_tokens, tfm::Side::kSource, cut_source));
    tgt.push_back(encode_bounded(vocab, t.text, options.max_input_tokens, tfm::Side::kTarget, cut_target));
    cut.push_back(cut_source || cut_target);
    src_repairs.push_back(s.repairs);
    tgt_repairs.push_back(t.repairs);
  }
  std::vector<Score> out = score_ids(src, tgt, options);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].truncated = out[i].truncated || cut[i];
    out[i].source_repairs = src_repairs[i];
    out[i].target_repairs = tgt_repairs[i];
  }
  return out;
}

std::vector<Score> Translator::score_ids(const std::vector<std::vector<int32_t>>& sources,
                                         const std::vector<std::vector<int32_t>>& targets,
                                         const ScoreOptions& options) const {
  options.validate();
  TFM_CHECK(sources.size() == targets.size(), "there are ", sources.size(), " sources but ", targets.size(),
            " targets");
  TFM_CHECK(impl_->options.weights == TranslatorOptions::Weights::kPlain ||
                impl_->options.weights == TranslatorOptions::Weights::kBf16,
            "scoring runs the model's teacher-forced forward pass, which needs the float32 weights as trained: load "
            "the Translator with weights = plain or bf16 (this one holds ",
            impl_->options.weights == TranslatorOptions::Weights::kInt8 ? "int8" : "packed", " ones)");
  const tfm::Transformer& model = *impl_->model;
  const tfm::ModelConfig& c = model.config();
  std::vector<Score> out(sources.size());
  std::vector<std::vector<int32_t>> src(sources), tgt(targets);
  for (size_t i = 0; i < src.size(); ++i) {
    impl_->check_ids(src[i], i);
    impl_->check_ids(tgt[i], i);
    for (auto* side : {&src[i], &tgt[i]})
      if (static_cast<int64_t>(side->size()) > options.max_input_tokens) {
        side->resize(static_cast<size_t>(options.max_input_tokens));
        out[i].truncated = true;
      }
  }
  tfm::ScopedThreads threads(impl_->options.threads);
  // Each pair alone, a batch of one without padding: its products run on its own rows only, so its
  // score has the same bits whatever the pairs around it (in a padded batch the products' shapes,
  // and with them the kernels' sum orders, depend on the other pairs). docs/api.md gives the cost.
  for (size_t i = 0; i < src.size(); ++i) {
    const tfm::Batch batch = tfm::make_batch({src[i]}, {tgt[i]}, c);
    const tfm::ScoredBatch scored = tfm::score_batch(model, model.context(), batch, 0.0, nullptr);
    Score& s = out[i];
    s.total = tfm::sentence_log_probs(batch, scored)[0];
    s.tokens = batch.tgt_lengths.data<int32_t>()[0];
    s.per_token = s.total / s.tokens;
  }
  return out;
}

std::vector<int32_t> Translator::encode(std::string_view text) const {
  return impl_->need_vocab().encode(clean_input(text).text);  // as translate() encodes a line
}
std::vector<int32_t> Translator::encode_source(std::string_view text, const LanguageOptions& languages) const {
  std::vector<std::vector<int32_t>> ids{encode(text)}, no_prefixes;
  api::add_language_tokens({api::language_tokens(&impl_->need_vocab(), languages, true).source, -1}, ids, no_prefixes,
                           kMaxInputTokens, nullptr);
  return ids[0];
}

std::string Translator::decode(const std::vector<int32_t>& ids) const {
  const tfm::Vocab& vocab = impl_->need_vocab();
  for (size_t i = 0; i < ids.size(); ++i)
    TFM_CHECK(ids[i] >= 0 && ids[i] < vocab.size(), "decode: token id ", ids[i], " (at ", i,
              ") is outside the vocabulary [0, ", vocab.size(), ")");
  return vocab.decode(ids);
}
std::string Translator::piece(int32_t id) const { return impl_->need_vocab().piece(id); }
bool Translator::has_vocab() const { return impl_->has_vocab; }
int64_t Translator::vocab_size() const { return impl_->model->config().vocab_size; }
const std::string& Translator::model_path() const { return impl_->path; }
const std::string& Translator::vocab_fingerprint() const { return impl_->fingerprint; }
const LoadNotes& Translator::load_notes() const { return impl_->notes; }

std::vector<int32_t> Translator::parse_ids(std::string_view line, int64_t line_number) const {
  const tfm::ModelConfig& c = impl_->model->config();
  return api::parse_id_line(line, line_number, [&](long long v, const std::string& word) {
    check_token_id(c, v, word, tfm::cat("line ", line_number));
  });
}

}  // namespace transformer
