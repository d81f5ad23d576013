#include "train/options.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tfm {

ModelConfig TrainOptions::resolved_model(int64_t vocab_size) const {
  ModelConfig c = model_preset(preset);
  from_json(model_overrides, c);
  c.vocab_size = vocab_size;
  c.validate();
  return c;
}

void TrainOptions::validate() const {
  TFM_CHECK(!train_source.empty() && !train_target.empty(), "train: --train-source and --train-target are required");
  TFM_CHECK(valid_source.empty() == valid_target.empty(),
            "train: give both --valid-source and --valid-target, or neither");
  TFM_CHECK(batch_tokens >= 1, "train: batch_tokens must be >= 1, got ", batch_tokens);
  TFM_CHECK(accumulate >= 1, "train: accumulate must be >= 1, got ", accumulate);
  TFM_CHECK(max_tokens >= 1, "train: max_tokens must be >= 1, got ", max_tokens);
  TFM_CHECK(lr_factor > 0, "train: lr_factor must be positive, got ", lr_factor);
  TFM_CHECK(warmup_steps >= 1, "train: warmup_steps must be >= 1, got ", warmup_steps);
  TFM_CHECK(label_smoothing >= 0 && label_smoothing < 1, "train: label_smoothing must be in [0, 1), got ",
            label_smoothing);
  TFM_CHECK(clip_norm >= 0, "train: clip_norm must be >= 0, got ", clip_norm);
  TFM_CHECK(max_steps >= 0 && max_epochs >= 0 && max_seconds >= 0, "train: limits must be >= 0");
  TFM_CHECK(max_steps > 0 || max_epochs > 0 || max_seconds > 0,
            "train: set at least one of max_steps, max_epochs, max_seconds");
  TFM_CHECK(valid_every >= 1 && save_every >= 1 && log_every >= 1, "train: valid_every, save_every and log_every must be >= 1");
  TFM_CHECK(best_metric == "bleu" || best_metric == "loss", "train: best_metric must be bleu or loss, got '",
            best_metric, "'");
  TFM_CHECK(patience >= 0 && keep_last >= 1 && valid_beam >= 1 && valid_max_sentences >= 0 && threads >= 0,
            "train: patience, valid_max_sentences and threads must be >= 0; keep_last and valid_beam >= 1");
  TFM_CHECK(model_overrides.is_object(), "train: 'model' must be an object of model fields");
}

double learning_rate(const TrainOptions& o, int64_t d_model, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return o.lr_factor / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(o.warmup_steps), -1.5));
}

// Each field once: its JSON name is its C++ name.
#define TFM_TRAIN_FIELDS(X)                                                                                 \
  X(train_source) X(train_target) X(valid_source) X(valid_target) X(run_dir) X(vocab) X(max_tokens)          \
  X(max_chars) X(preset) X(batch_tokens) X(accumulate) X(lr_factor) X(warmup_steps) X(adam_beta1)           \
  X(adam_beta2) X(adam_eps) X(label_smoothing) X(clip_norm) X(max_steps) X(max_epochs) X(max_seconds)       \
  X(valid_every) X(best_metric) X(patience) X(valid_beam) X(valid_max_sentences) X(save_every) X(keep_last) \
  X(resume) X(log_every) X(seed) X(threads)

void to_json(nlohmann::json& j, const TrainOptions& o) {
  j = nlohmann::json::object();
#define TFM_WRITE(f) j[#f] = o.f;
  TFM_TRAIN_FIELDS(TFM_WRITE)
#undef TFM_WRITE
  j["vocab_size"] = o.vocab_options.size;
  j["vocab_type"] = o.vocab_options.model_type;
  j["model"] = o.model_overrides;
}

void from_json(const nlohmann::json& j, TrainOptions& o) {
  TFM_CHECK(j.is_object(), "training config must be a JSON object, got ", j.type_name());
  for (const auto& [key, value] : j.items()) {
    try {
      if (key == "model") {
        TFM_CHECK(value.is_object(), "training config: 'model' must be an object, got ", value.type_name());
        for (const auto& [mk, mv] : value.items()) o.model_overrides[mk] = mv;
        ModelConfig check;
        from_json(o.model_overrides, check);  // unknown or mistyped model fields fail here, early
        continue;
      }
      if (key == "vocab_size") { value.get_to(o.vocab_options.size); continue; }
      if (key == "vocab_type") { value.get_to(o.vocab_options.model_type); continue; }
      if (key == "config") continue;           // the file's own path, when given as a flag
      if (key == "resolved_model") continue;   // written into RUN/config.json for the reader; derived
#define TFM_READ(f)      \
  if (key == #f) {       \
    value.get_to(o.f);   \
    continue;            \
  }
      TFM_TRAIN_FIELDS(TFM_READ)
#undef TFM_READ
    } catch (const nlohmann::json::exception&) {
      throw Error(cat("training config field '", key, "' has the wrong type: ", value.dump()));
    }
    throw Error(cat("unknown training config field '", key, "'"));
  }
}

}  // namespace tfm
