#include "train/state.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/json_field.h"
#include "core/json_text.h"
#include "model/checkpoint.h"

namespace tfm {

namespace fs = std::filesystem;

// The fields of the record but "best", which may be null; each JSON name is its C++ name.
#define TFM_STATE_FIELDS(X)                                                                                      \
  X(step) X(epoch) X(position) X(rng_counter) X(bad_validations) X(tokens_seen) X(elapsed_s) X(interval_loss) \
  X(interval_tokens)

void to_json(nlohmann::json& j, const TrainState& s) {
  j = nlohmann::json::object();
#define TFM_WRITE(f) j[#f] = s.f;
  TFM_STATE_FIELDS(TFM_WRITE)
#undef TFM_WRITE
  j["best"] = s.has_best ? nlohmann::json(s.best) : nlohmann::json(nullptr);
}

void from_json(const nlohmann::json& j, TrainState& s) {
  constexpr std::string_view kWhat = "training state field";
  TFM_CHECK(j.is_object(), "the training state must be a JSON object, got ", j.type_name());
  std::set<std::string> seen;
  for (const auto& [key, value] : j.items()) {
    seen.insert(key);
    if (key == "best") {
      s.has_best = !value.is_null();
      if (s.has_best) read_json_field(value, s.best, kWhat, key);
      continue;
    }
#define TFM_READ(f)                            \
  if (key == #f) {                             \
    read_json_field(value, s.f, kWhat, key);   \
    continue;                                  \
  }
    TFM_STATE_FIELDS(TFM_READ)
#undef TFM_READ
    throw Error(cat("unknown training state field '", key, "'"));
  }
#define TFM_REQUIRE(f) TFM_CHECK(seen.count(#f), "the training state has no '", #f, "'");
  TFM_STATE_FIELDS(TFM_REQUIRE)
  TFM_REQUIRE(best)
#undef TFM_REQUIRE
}

std::map<std::string, std::string> checkpoint_metadata(const TrainState& s, const TrainOptions& o,
                                                       const std::string& vocab_fingerprint) {
  nlohmann::json record = s;
  record["options"] = o;
  return {{kVocabFingerprintKey, vocab_fingerprint}, {kTrainStateKey, record.dump()}};
}

namespace {

// The state as checkpoints of earlier versions recorded it: one metadata key per field, integers
// in decimal, numbers as JSON, "none" for no best score, the options as JSON in "train.options".
const std::string& legacy_text(const std::map<std::string, std::string>& meta, const std::string& key,
                               const std::string& path) {
  auto it = meta.find(key);
  TFM_CHECK(it != meta.end(), path, ": not a training checkpoint (no '", key, "' in its metadata)");
  return it->second;
}

int64_t legacy_int(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path) {
  const std::string& text = legacy_text(meta, key, path);
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw Error(cat(path, ": metadata '", key, "' is not an integer: '", text, "'"));
}

double legacy_double(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path) {
  const nlohmann::json j = parse_json_or_discarded(legacy_text(meta, key, path), cat(path, ": metadata '", key, "'"));
  TFM_CHECK(j.is_number(), path, ": metadata '", key, "' is not a number: '", printable(legacy_text(meta, key, path)), "'");
  return j.get<double>();
}

CheckpointState read_legacy_state(const std::map<std::string, std::string>& meta, const std::string& path) {
  CheckpointState c;
  TrainState& s = c.state;
  s.step = legacy_int(meta, "train.step", path);
  s.epoch = legacy_int(meta, "train.epoch", path);
  s.position = legacy_int(meta, "train.position", path);
  s.rng_counter = static_cast<uint64_t>(legacy_int(meta, "train.rng_counter", path));
  s.bad_validations = legacy_int(meta, "train.bad_validations", path);
  s.tokens_seen = legacy_int(meta, "train.tokens_seen", path);
  s.has_best = legacy_text(meta, "train.best", path) != "none";
  if (s.has_best) s.best = legacy_double(meta, "train.best", path);
  s.elapsed_s = legacy_double(meta, "train.elapsed_s", path);
  s.interval_loss = legacy_double(meta, "train.interval_loss", path);
  s.interval_tokens = legacy_int(meta, "train.interval_tokens", path);
  if (const auto it = meta.find("train.options"); it != meta.end())
    c.options = parse_json_or_discarded(it->second, cat(path, ": metadata 'train.options'"));
  if (!c.options.is_object()) c.options = nullptr;
  return c;
}

}  // namespace

CheckpointState read_checkpoint_state(const std::map<std::string, std::string>& meta, const std::string& path) {
  const auto it = meta.find(kTrainStateKey);
  if (it == meta.end() && meta.count("train.step")) return read_legacy_state(meta, path);
  TFM_CHECK(it != meta.end(), path, ": not a training checkpoint (no '", kTrainStateKey, "' in its metadata)");
  nlohmann::json record = parse_json_or_discarded(it->second, cat(path, ": metadata '", kTrainStateKey, "'"));
  TFM_CHECK(record.is_object(), path, ": metadata '", kTrainStateKey, "' is not a JSON object: '", printable(it->second), "'");
  CheckpointState c;
  if (record.contains("options")) {
    c.options = record["options"];
    TFM_CHECK(c.options.is_object(), path, ": the training state's 'options' is not a JSON object: ",
              json_quote(c.options));
    record.erase("options");
  }
  try {
    from_json(record, c.state);
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
  return c;
}

std::string checkpoint_path(const std::string& run_dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%08lld.safetensors", static_cast<long long>(step));
  return (fs::path(run_dir) / name).string();
}

std::vector<std::string> checkpoints(const std::string& run_dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(run_dir)) return out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with("checkpoint-") && n.ends_with(".safetensors")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());  // zero-padded step numbers sort by step
  return out;
}

std::string newest_checkpoint(const std::string& run_dir) {
  const std::vector<std::string> all = checkpoints(run_dir);
  return all.empty() ? "" : all.back();
}

std::string kept_checkpoint(int64_t last_saved) {
  return last_saved > 0 ? cat("the last checkpoint, of step ", last_saved, ", is kept")
                        : std::string("no checkpoint was saved yet");
}

std::string save_checkpoint(const Transformer& model, const TrainOptions& o, const TrainState& s, const Tensor& m,
                            const Tensor& v, const std::string& vocab_fingerprint) {
  const std::string path = checkpoint_path(o.run_dir, s.step);
  save_model(model, path, checkpoint_metadata(s, o, vocab_fingerprint), {{"optimizer.m", m}, {"optimizer.v", v}});
  for (const std::string& old : expired_checkpoints(checkpoints(o.run_dir), o.save_every, o.keep_last)) fs::remove(old);
  return path;
}

int64_t checkpoint_step(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string prefix = "checkpoint-", suffix = ".safetensors";
  if (!name.starts_with(prefix) || !name.ends_with(suffix) || name.size() == prefix.size() + suffix.size()) return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

std::vector<std::string> expired_checkpoints(const std::vector<std::string>& all, int64_t save_every,
                                             int64_t keep_last) {
  std::vector<std::string> expired;
  int64_t scheduled_kept = 0;
  for (size_t i = all.size(); i-- > 0;) {
    const int64_t step = checkpoint_step(all[i]);
    const bool scheduled = step > 0 && save_every > 0 && step % save_every == 0;
    if (scheduled && scheduled_kept < keep_last) ++scheduled_kept;
    else if (i + 1 != all.size()) expired.push_back(all[i]);  // the newest stays, whatever wrote it
  }
  std::reverse(expired.begin(), expired.end());  // oldest first, as given
  return expired;
}

std::string changed_options(const nlohmann::json& recorded, const TrainOptions& o) {
  if (!recorded.is_object()) return "";
  const nlohmann::json now = o;
  std::string out;
  for (const auto& [field, value] : now.items()) {
    if (field == "resume" || !recorded.contains(field) || recorded[field] == value) continue;
    out += cat(out.empty() ? "" : ", ", field, " ", json_quote(recorded[field]), " → ", json_quote(value));
  }
  return out;
}

TrainState resume_from(const std::string& path, const TrainOptions& o, Transformer& model, const Tensor& m,
                       const Tensor& v, const Vocab& vocab, std::string* changed, bool* verified) {
  const SafetensorsFile file = SafetensorsFile::read(path);
  *verified = file.has_checksum();
  const auto fp = file.metadata().find(kVocabFingerprintKey);  // absent in checkpoints of older versions
  if (fp != file.metadata().end() && fp->second != vocab.fingerprint())
    throw RunMismatch(cat(path, ": the checkpoint was trained with another vocabulary (fingerprint ", fp->second,
                          ", this run's ", vocab.fingerprint(), ")"));
  const ModelConfig saved = read_model_config(file);
  const nlohmann::json was = saved, now = model.config();
  if (was != now) {
    std::string fields;
    for (const auto& [key, value] : was.items())
      if (!now.contains(key) || now[key] != value)
        fields += cat(fields.empty() ? "" : ", ", key, " ", json_quote(value), " vs ",
                      now.contains(key) ? json_quote(now[key]) : std::string("none"));
    throw RunMismatch(cat(path, ": the checkpoint's model is not the one this run's options make (checkpoint vs "
                          "options): ", fields, "; resume with the run's model options, e.g. those of its config file (--config ",
                          (fs::path(path).parent_path() / "config.json").string(), ")"));
  }
  // The state before the weights: a checkpoint without one fails before the model is touched.
  const CheckpointState recorded = read_checkpoint_state(file.metadata(), path);
  const auto loaded = load_model(file, model.params().values().dtype());
  model.params().values().copy_from(loaded->params().values());
  for (const auto& [name, dst] : {std::pair{"optimizer.m", m}, std::pair{"optimizer.v", v}}) {
    TFM_CHECK(file.has(name), path, ": no optimizer state '", name, "'");
    const Tensor t = file.tensor(name);
    TFM_CHECK(t.numel() == dst.numel() && t.dtype() == dst.dtype(), path, ": optimizer state '", name,
              "' has shape ", t.shape(), ", expected [", dst.numel(), "]");
    dst.copy_from(t.view(dst.shape()));
  }
  *changed = changed_options(recorded.options, o);
  return recorded.state;
}

}  // namespace tfm
