#include "train/options.h"

#include <algorithm>
#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "core/json_field.h"
#include "core/threads.h"
#include "ops/matmul.h"

namespace transformer {

using tfm::cat;
using tfm::read_json_field;

namespace {

// The data files the architecture trains on: pairs, or monolingual text; never both.
void validate_data(const TrainOptions& o) {
  const std::string architecture = tfm::model_architecture(o);
  if (!tfm::language_model(o)) {
    TFM_CHECK(o.train_text.empty() && o.valid_text.empty(), "train: train_text and valid_text (--train-text, "
              "--valid-text) are a language model's data, but the model is ", architecture, ": give --architecture "
              "decoder-only or encoder-only, or parallel text (--train-source, --train-target)");
    TFM_CHECK(!o.train_source.empty() && !o.train_target.empty(),
              "train: train_source and train_target (--train-source, --train-target) are required");
    TFM_CHECK(o.valid_source.empty() == o.valid_target.empty(),
              "train: give both valid_source and valid_target (--valid-source, --valid-target), or neither");
    return;
  }
  for (const auto& [name, value] : {std::pair{"train_source (--train-source)", &o.train_source},
                                    {"train_target (--train-target)", &o.train_target},
                                    {"valid_source (--valid-source)", &o.valid_source},
                                    {"valid_target (--valid-target)", &o.valid_target}})
    TFM_CHECK(value->empty(), "train: ", name, " is parallel text, but a ", architecture, " model trains on "
              "monolingual text: give train_text (--train-text) and valid_text (--valid-text) instead");
  TFM_CHECK(!o.train_text.empty(), "train: a ", architecture, " model needs train_text (--train-text)");
  TFM_CHECK(o.mask_fraction > 0 && o.mask_fraction <= 1, "train: mask_fraction must be in (0, 1], got ", o.mask_fraction);
}

}  // namespace

ModelConfig TrainOptions::resolved_model(int64_t vocab_size) const {
  ModelConfig c = model.apply_to(model_preset(preset));
  c.vocab_size = vocab_size;
  if (c.positions == "learned" && !model.max_positions) c.max_positions = c.position_offset + max_tokens + 1;
  c.validate();
  return c;
}

void TrainOptions::validate() const {
  validate_data(*this);
  TFM_CHECK(batch_tokens >= 1, "train: batch_tokens must be >= 1, got ", batch_tokens);
  TFM_CHECK(accumulate >= 1, "train: accumulate must be >= 1, got ", accumulate);
  TFM_CHECK(allreduce_bucket_mb >= 0 && allreduce_bucket_mb <= 1e6, "train: allreduce_bucket_mb must be in [0, 1e6], got ",
            allreduce_bucket_mb);
  TFM_CHECK(rank_timeout >= 0, "train: rank_timeout must be >= 0 (0: no limit), got ", rank_timeout);
  TFM_CHECK(max_tokens >= 1, "train: max_tokens must be >= 1, got ", max_tokens);
  TFM_CHECK(lr_factor > 0, "train: lr_factor must be positive, got ", lr_factor);
  TFM_CHECK(warmup_steps >= 1, "train: warmup_steps must be >= 1, got ", warmup_steps);
  TFM_CHECK(label_smoothing >= 0 && label_smoothing < 1, "train: label_smoothing must be in [0, 1), got ",
            label_smoothing);
  TFM_CHECK(clip_norm >= 0, "train: clip_norm must be >= 0, got ", clip_norm);
  tfm::parse_device(device, "train: device");
  // Adam's settings here, not at its first step: by then the vocabulary and run files exist.
  TFM_CHECK(adam_beta1 >= 0 && adam_beta1 < 1, "train: adam_beta1 must be in [0, 1), got ", adam_beta1);
  TFM_CHECK(adam_beta2 >= 0 && adam_beta2 < 1, "train: adam_beta2 must be in [0, 1), got ", adam_beta2);
  TFM_CHECK(adam_eps > 0, "train: adam_eps must be positive, got ", adam_eps);
  TFM_CHECK(max_chars >= 0, "train: max_chars must be >= 0 (0: no limit), got ", max_chars);
  TFM_CHECK(max_steps >= 0, "train: max_steps must be >= 0, got ", max_steps);
  TFM_CHECK(max_epochs >= 0, "train: max_epochs must be >= 0, got ", max_epochs);
  TFM_CHECK(max_seconds >= 0, "train: max_seconds must be >= 0, got ", max_seconds);
  TFM_CHECK(max_steps > 0 || max_epochs > 0 || max_seconds > 0,
            "train: set at least one of max_steps, max_epochs, max_seconds");
  TFM_CHECK(valid_every >= 1, "train: valid_every must be >= 1, got ", valid_every);
  TFM_CHECK(save_every >= 1, "train: save_every must be >= 1, got ", save_every);
  TFM_CHECK(log_every >= 1, "train: log_every must be >= 1, got ", log_every);
  TFM_CHECK(best_metric == "bleu" || best_metric == "loss", "train: best_metric must be bleu or loss, got '",
            best_metric, "'");
  TFM_CHECK(patience >= 0, "train: patience must be >= 0, got ", patience);
  TFM_CHECK(keep_last >= 1, "train: keep_last must be >= 1, got ", keep_last);
  TFM_CHECK(valid_beam >= 1, "train: valid_beam must be >= 1, got ", valid_beam);
  TFM_CHECK(valid_max_sentences >= 0, "train: valid_max_sentences must be >= 0, got ", valid_max_sentences);
  TFM_CHECK(threads >= 0 && threads <= tfm::kMaxThreads, "train: threads must be in [0, ", tfm::kMaxThreads,
            "] (0: all cores), got ", threads);
}


// Each field once: its JSON name is its C++ name.
#define TFM_TRAIN_FIELDS(X)                                                                                 \
  X(train_source) X(train_target) X(valid_source) X(valid_target) X(run_dir) X(vocab) X(max_tokens)          \
  X(max_chars) X(preset) X(batch_tokens) X(accumulate) X(allreduce_bucket_mb) X(rank_timeout) X(lr_factor) X(warmup_steps) X(adam_beta1)           \
  X(adam_beta2) X(adam_eps) X(label_smoothing) X(clip_norm) X(bf16) X(device) X(max_steps) X(max_epochs) X(max_seconds)       \
  X(valid_every) X(best_metric) X(patience) X(valid_beam) X(valid_max_sentences) X(save_every) X(keep_last) \
  X(resume) X(log_every) X(seed) X(threads) X(train_text) X(valid_text) X(mask_fraction)

void to_json(nlohmann::json& j, const TrainOptions& o) {
  j = nlohmann::json::object();
#define TFM_WRITE(f) j[#f] = o.f;
  TFM_TRAIN_FIELDS(TFM_WRITE)
#undef TFM_WRITE
  j["vocab_size"] = o.vocab_options.size;
  j["vocab_type"] = o.vocab_options.model_type;
  j["model"] = o.model;
}

void from_json(const nlohmann::json& j, TrainOptions& o) {
  TFM_CHECK(j.is_object(), "training config must be a JSON object, got ", j.type_name());
  constexpr std::string_view kWhat = "training option";  // from the config file or a flag
  for (const auto& [key, value] : j.items()) {
    if (key == "model") {
      TFM_CHECK(value.is_object(), "training config: 'model' must be an object, got ", value.type_name());
      from_json(value, o.model);  // unknown or mistyped model fields fail here, early
      continue;
    }
    if (key == "vocab_size") { read_json_field(value, o.vocab_options.size, kWhat, key); continue; }
    if (key == "vocab_type") { read_json_field(value, o.vocab_options.model_type, kWhat, key); continue; }
    if (key == "config") continue;           // the file's own path, when given as a flag
    if (key == "resolved_model") continue;   // written into RUN/config.json for the reader; derived
    if (key == "mask_id") continue;          // the same (masked-LM runs: the vocabulary's "<mask>")
#define TFM_READ(f)                            \
  if (key == #f) {                             \
    read_json_field(value, o.f, kWhat, key);   \
    continue;                                  \
  }
    TFM_TRAIN_FIELDS(TFM_READ)
#undef TFM_READ
    throw Error(cat("unknown training option '", key, "'"));
  }
}

}  // namespace transformer

namespace tfm {

std::string model_architecture(const TrainOptions& o) {
  return o.model.architecture.value_or(transformer::model_preset(o.preset).architecture);
}

bool language_model(const TrainOptions& o) { return model_architecture(o) != "encoder-decoder"; }

double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return o.lr_factor / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(o.warmup_steps), -1.5));
}

const char* train_option_help(std::string_view field) {
  static const std::pair<std::string_view, const char*> kHelp[] = {
      {"train_source", "training source text, one sentence per line (required)"},
      {"train_target", "training target text, line by line parallel to the source (required)"},
      {"valid_source", "validation source text (optional: no validation without it)"},
      {"valid_target", "validation target text (references)"},
      {"train_text", "a language model's training text (--architecture decoder-only or encoder-only), one sentence per line (required for those)"},
      {"valid_text", "a language model's validation text (optional: no validation without it)"},
      {"mask_fraction", "encoder-only: fraction of each sentence's tokens the masked-LM loss predicts (80% masked, 10% random, 10% kept)"},
      {"run_dir", "folder for checkpoints, vocabulary, metrics and plots"},
      {"vocab", "a SentencePiece .model to use; empty: train one on the training text"},
      {"vocab_size", "pieces of the trained vocabulary, specials included"},
      {"vocab_type", "bpe or unigram"},
      {"max_tokens", "skip pairs with more subword tokens than this on a side"},
      {"max_chars", "skip pairs with more characters (code points) than this on a side; 0: no limit"},
      {"preset", "model preset: tiny, small, base or big (model flags below override it)"},
      {"batch_tokens", "tokens per batch and side, padding included"},
      {"accumulate", "batches per optimizer step (gradient accumulation)"},
      {"allreduce_bucket_mb", "under mpirun: sum the gradients over the processes in buckets of this many MB during the backward pass; 0: after it"},
      {"rank_timeout", "under mpirun: seconds a rank waits for the others before ending every rank, naming the silent ones; 0: no limit"},
      {"lr_factor", "lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)"},
      {"warmup_steps", "steps of linear learning-rate warm-up"},
      {"adam_beta1", "Adam beta1"},
      {"adam_beta2", "Adam beta2"},
      {"adam_eps", "Adam epsilon"},
      {"label_smoothing", "label smoothing epsilon"},
      {"clip_norm", "clip the gradient's global L2 norm to this; 0: no clipping"},
      {"device", "where to train: cpu, or cuda (cuda:0), the first NVIDIA GPU, in a build with the CUDA backend"},
      {"bf16", "weight products in bfloat16 with float32 sums and master weights, the activations they read kept in bfloat16 (faster only on CPUs with AVX-512 BF16 or AMX; slower elsewhere)"},
      {"max_steps", "stop after this many steps; 0: no limit"},
      {"max_epochs", "stop after this many epochs; 0: no limit"},
      {"max_seconds", "stop after this many seconds of training; 0: no limit"},
      {"valid_every", "validate every this many steps"},
      {"best_metric", "bleu or loss: what model-best.safetensors is chosen by"},
      {"patience", "stop after this many validations without improvement; 0: never"},
      {"valid_beam", "beam size of the validation translations (1: greedy)"},
      {"valid_max_sentences", "translate at most this many validation sentences; 0: all"},
      {"save_every", "write a checkpoint every this many steps"},
      {"keep_last", "keep this many newest checkpoints"},
      {"resume", "continue from the newest checkpoint in the run folder"},
      {"log_every", "a progress line and a metrics record every this many steps"},
      {"seed", "seed of the parameters, dropout, batch order and vocabulary sampling"},
      {"threads", "threads; 0: all cores"},
  };
  for (const auto& [name, help] : kHelp)
    if (name == field) return help;
  return "";
}

}  // namespace tfm
