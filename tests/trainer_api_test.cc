// The training API (include/transformer/trainer.h): step by step trains exactly as run(); a stop
// requested from a callback ends after that step with a checkpoint that resumes byte for byte;
// the callbacks get the log lines and every metrics.jsonl record; the library writes nothing to
// stderr; the checkpoint's training state is one JSON record, and checkpoints of the earlier
// format (one metadata key per field) still resume byte for byte.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/number_words.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "testing/errors.h"
#include "testing/tiny_training.h"
#include "train/options.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_error;
using transformer::MetricsRecord;
using transformer::Progress;
using transformer::StepResult;
using transformer::TrainCallbacks;
using transformer::Trainer;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tfm-trainer-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// A tiny model on 300 pairs of the demo task: a step takes milliseconds.
class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { write_number_dataset(dir_ / "data", 3, 300, 20, 0); }

  TrainOptions options(const std::string& run, int64_t max_steps) const {
    TrainOptions o = testing::tiny_training(dir_ / "data", dir_ / run, max_steps);
    o.warmup_steps = 10;
    o.seed = 5;
    o.save_every = 4;
    o.log_every = 2;
    return o;
  }
  TrainOptions with_validation(TrainOptions o, int64_t every) const {
    o.valid_source = dir_ / "data/valid.en";
    o.valid_target = dir_ / "data/valid.de";
    o.valid_every = every;
    o.best_metric = "loss";
    return o;
  }
  std::string path(const std::string& name) const { return dir_ / name; }

  TempDir dir_;
};

std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The records without their timings (which differ between runs).
std::vector<nlohmann::json> without_timings(std::vector<nlohmann::json> records) {
  for (auto& r : records) {
    r.erase("tokens_per_s");
    r.erase("elapsed_s");
  }
  return records;
}

void expect_same_file(const std::string& a, const std::string& b) {
  ASSERT_TRUE(fs::exists(a)) << a;
  ASSERT_TRUE(fs::exists(b)) << b;
  EXPECT_TRUE(read_file(a) == read_file(b)) << a << " and " << b << " differ";
}

// The same tensors (weights and Adam's moments) and training state, the time and the options
// (whose run_dir differs) aside.
void expect_same_checkpoint(const std::string& a, const std::string& b) {
  const SafetensorsFile fa = SafetensorsFile::read(a), fb = SafetensorsFile::read(b);
  ASSERT_EQ(fa.names(), fb.names());
  for (const std::string& name : fa.names()) {
    const Tensor ta = fa.tensor(name), tb = fb.tensor(name);
    ASSERT_EQ(ta.bytes(), tb.bytes()) << name;
    EXPECT_EQ(std::memcmp(ta.raw(), tb.raw(), ta.bytes()), 0) << name << " differs";
  }
  auto state = [](const SafetensorsFile& f) {
    nlohmann::json s = nlohmann::json::parse(f.metadata().at(kTrainStateKey));
    s.erase("elapsed_s");
    s.erase("options");
    return s;
  };
  EXPECT_EQ(state(fa), state(fb));
  EXPECT_EQ(state(fa)["step"], 8);
}

TEST_F(TrainerTest, StepByStepTrainsExactlyAsRun) {
  Trainer whole(options("whole", 10));
  const transformer::TrainResult r = whole.run();
  EXPECT_EQ(r.steps, 10);
  EXPECT_EQ(r.stop_reason, "reached max_steps 10");
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.final_model, path("whole/model.safetensors"));
  EXPECT_TRUE(whole.finished());

  Trainer steps(options("steps", 10));
  EXPECT_FALSE(steps.finished());
  EXPECT_EQ(steps.model_config().d_model, 16);
  EXPECT_EQ(steps.model_config().vocab_size, 80);
  for (int64_t i = 1; i <= 10; ++i) {
    const StepResult s = steps.step();
    EXPECT_EQ(s.step, i);
    EXPECT_TRUE(s.stepped);
    EXPECT_GT(s.tokens, 0);
    EXPECT_GT(s.loss, 0);
    EXPECT_GT(s.learning_rate, 0);
    EXPECT_EQ(s.finished, i == 10) << "at step " << i;
  }
  const StepResult after = steps.step();  // finished: nothing more happens
  EXPECT_TRUE(after.finished);
  EXPECT_FALSE(after.stepped);
  EXPECT_EQ(after.step, 10);
  EXPECT_EQ(steps.result().last_loss, r.last_loss);
  expect_same_file(path("whole/model.safetensors"), path("steps/model.safetensors"));
  expect_same_checkpoint(path("whole/checkpoint-00000008.safetensors"), path("steps/checkpoint-00000008.safetensors"));
  EXPECT_EQ(without_timings(read_metrics(path("whole"))), without_timings(read_metrics(path("steps"))));
}

TEST_F(TrainerTest, StopRequestedFromProgressEndsAfterThatStepAndResumesExactly) {
  Trainer reference(options("reference", 16));
  reference.run();

  Trainer* trainer = nullptr;
  int64_t last_progress = 0;
  TrainCallbacks callbacks;
  callbacks.on_progress = [&](const Progress& p) {
    last_progress = p.step;
    if (p.step == 7) trainer->request_stop();
  };
  {
    Trainer stopped(options("stopped", 16), callbacks);
    trainer = &stopped;
    const transformer::TrainResult r = stopped.run();
    EXPECT_EQ(r.steps, 7);
    EXPECT_EQ(last_progress, 7);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.stop_reason, "interrupted");
  }
  EXPECT_TRUE(fs::exists(path("stopped/checkpoint-00000007.safetensors")));
  EXPECT_FALSE(fs::exists(path("stopped/checkpoint-00000008.safetensors")));
  EXPECT_TRUE(fs::exists(path("stopped/model.safetensors")));

  TrainOptions o = options("stopped", 16);
  o.resume = true;
  std::vector<std::string> messages;
  TrainCallbacks log;
  log.on_message = [&](const std::string& line) { messages.push_back(line); };
  Trainer resumed(o, log);
  const transformer::TrainResult r = resumed.run();
  EXPECT_EQ(r.steps, 16);
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(std::find(messages.begin(), messages.end(),
                      "resumed from " + path("stopped/checkpoint-00000007.safetensors") + " at step 7, epoch 0"),
            messages.end());
  expect_same_file(path("reference/model.safetensors"), path("stopped/model.safetensors"));
  EXPECT_EQ(without_timings(read_metrics(path("reference"))), without_timings(read_metrics(path("stopped"))));
}

TEST_F(TrainerTest, CallbacksGetTheLogLinesAndEveryMetricsRecord) {
  std::vector<std::string> messages;
  std::vector<MetricsRecord> records;
  std::vector<Progress> progress;
  TrainCallbacks callbacks;
  callbacks.on_message = [&](const std::string& line) { messages.push_back(line); };
  callbacks.on_metrics = [&](const MetricsRecord& r) { records.push_back(r); };
  callbacks.on_progress = [&](const Progress& p) { progress.push_back(p); };
  Trainer trainer(with_validation(options("run", 10), 5), callbacks);
  trainer.run();

  auto has_message = [&](const std::string& start) {
    for (const auto& m : messages)
      if (m.starts_with(start)) return true;
    return false;
  };
  EXPECT_TRUE(has_message("training data: 300 pairs, 300 kept"));
  EXPECT_TRUE(has_message("validation data: 20 pairs, 20 kept"));
  EXPECT_TRUE(has_message("vocabulary: 80 bpe pieces, written to " + path("run/vocab.model")));
  EXPECT_TRUE(has_message("validation at step 5: loss "));
  EXPECT_TRUE(has_message("validation at step 10: loss "));
  EXPECT_EQ(messages.back(), "stopped at step 10: reached max_steps 10; model written to " + path("run/model.safetensors"));

  ASSERT_EQ(progress.size(), 10u);
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(progress[i].log_step, (i + 1) % 2 == 0);
    EXPECT_GT(progress[i].learning_rate, 0);
    EXPECT_GE(progress[i].eta_s, 0);
  }

  // Exactly the file's records, in its order: 5 training records (every 2 steps) and 2 validations.
  const std::vector<nlohmann::json> file = read_metrics(path("run"));
  ASSERT_EQ(records.size(), file.size());
  ASSERT_EQ(records.size(), 7u);
  int validations = 0;
  for (size_t i = 0; i < file.size(); ++i) {
    const bool validation = file[i].contains("valid_loss");
    validations += validation;
    EXPECT_EQ(records[i].kind, validation ? MetricsRecord::Kind::kValidation : MetricsRecord::Kind::kTraining);
    EXPECT_EQ(records[i].step, file[i]["step"].get<int64_t>());
    EXPECT_EQ(records[i].values.size() + 1, file[i].size()) << file[i].dump();
    for (const auto& [name, value] : records[i].values) {
      ASSERT_TRUE(file[i].contains(name)) << name;
      EXPECT_EQ(value, file[i][name].get<double>()) << name;
    }
  }
  EXPECT_EQ(validations, 2);
  EXPECT_EQ(records.back().kind, MetricsRecord::Kind::kValidation);
  EXPECT_EQ(records.back().step, 10);
  for (const char* name : {"valid_loss", "valid_ppl", "valid_bleu", "valid_exact"})
    EXPECT_EQ(records.back().values.count(name), 1u) << name;
  // The progress of a log step reports the loss its record holds.
  EXPECT_EQ(progress[1].loss, records[0].values.at("loss"));

  // A validation on demand measures the same model as the scheduled one at this step, and records
  // nothing.
  const transformer::ValidationResult v = trainer.validate();
  EXPECT_EQ(v.loss, records.back().values.at("valid_loss"));
  EXPECT_EQ(v.exact, records.back().values.at("valid_exact"));
  EXPECT_EQ(read_metrics(path("run")).size(), 7u);
}

// fd 2 goes to a file while the object lives.
class CapturedStderr {
 public:
  explicit CapturedStderr(std::string path) : path_(std::move(path)) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::string release() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
    return read_file(path_);
  }
  ~CapturedStderr() {
    if (saved_ >= 0) release();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

TEST_F(TrainerTest, TheLibraryWritesNothingToStderr) {
  {
    CapturedStderr probe(path("probe.txt"));
    std::fprintf(stderr, "probe\n");
    ASSERT_EQ(probe.release(), "probe\n") << "the capture does not work";
  }
  std::vector<std::string> messages;
  int progress = 0, records = 0;
  TrainCallbacks callbacks;
  callbacks.on_message = [&](const std::string& line) { messages.push_back(line); };
  callbacks.on_progress = [&](const Progress&) { ++progress; };
  callbacks.on_metrics = [&](const MetricsRecord&) { ++records; };
  CapturedStderr captured(path("stderr.txt"));
  {
    // A vocabulary trained, validation, checkpoints, the final model: everything a run does.
    Trainer trainer(with_validation(options("run", 6), 3), callbacks);
    trainer.run();
  }
  const std::string written = captured.release();
  EXPECT_EQ(written, "");
  EXPECT_GE(messages.size(), 5u);
  EXPECT_EQ(progress, 6);
  EXPECT_EQ(records, 5);
}

TEST_F(TrainerTest, BadOptionsAndABusyRunFolderAreErrors) {
  TrainOptions o = options("run", 4);
  o.keep_last = 0;
  expect_error([&] { Trainer t(o); }, {"keep_last must be >= 1, got 0"});
  EXPECT_FALSE(fs::exists(path("run")));
  o = options("run", 4);
  o.model.heads = 5;
  expect_error([&] { Trainer t(o); }, {"d_model 16 is not divisible by heads 5"});
  o = options("run", 4);
  o.train_source = path("missing.en");
  expect_error([&] { Trainer t(o); }, {"'", "missing.en' is not a readable file"});

  Trainer first(options("run", 4));
  expect_error([&] { Trainer second(options("run", 4)); }, {"another training is using the run folder"});
  expect_error([&] { first.validate(); }, {"no validation data"});
  // A lock file that cannot be opened (here a folder in its place; a folder that is not writable
  // alike) is not blamed on another training.
  fs::create_directories(path("blocked/.lock"));
  const std::string err = error_of([&] { Trainer t(options("blocked", 4)); });
  EXPECT_NE(err.find("cannot lock the run folder"), std::string::npos) << err;
  EXPECT_NE(err.find("Is a directory"), std::string::npos) << err;
  EXPECT_EQ(err.find("another training"), std::string::npos) << err;
  first.step();
  EXPECT_EQ(first.save_checkpoint(), path("run/checkpoint-00000001.safetensors"));
  EXPECT_TRUE(fs::exists(path("run/checkpoint-00000001.safetensors")));
}

// The library's messages name an option by its field (TrainOptions, Python's keyword, the config
// file) and by the command line's flag: a C++ or Python user has no flags to give.
TEST_F(TrainerTest, MessagesNameTheOptionFieldAndTheFlag) {
  TrainOptions o = options("run", 4);
  o.valid_source = path("data/train.en");  // and no valid_target
  expect_error([&] { Trainer t(o); }, {"valid_source and valid_target (--valid-source, --valid-target)"});
  o = options("run", 4);
  o.resume = true;
  expect_error([&] { Trainer t(o); }, {"resume (--resume): no checkpoint in '", "run'"});
  {
    Trainer first(options("run", 4));
    first.step();
    first.save_checkpoint();
  }
  expect_error([&] { Trainer t(options("run", 4)); },
               {"continue it with resume (--resume), or give another run_dir (--run-dir)"});
}

TEST(TrainState, IsOneJsonRecordWithStrictFields) {
  TrainState s;
  s.step = 800;
  s.epoch = 3;
  s.position = 41;
  s.rng_counter = 1600;
  s.bad_validations = 1;
  s.tokens_seen = 3276800;
  s.elapsed_s = 612.5;
  s.interval_loss = 410.25;
  s.interval_tokens = 81920;
  nlohmann::json j = s;
  EXPECT_TRUE(j["best"].is_null());
  TrainState back;
  from_json(j, back);
  EXPECT_EQ(nlohmann::json(back), j);
  s.has_best = true;
  s.best = -2.3125;
  j = s;
  from_json(j, back);
  EXPECT_TRUE(back.has_best);
  EXPECT_EQ(back.best, -2.3125);
  EXPECT_EQ(back.interval_tokens, 81920);

  nlohmann::json missing = j;
  missing.erase("position");
  expect_error([&] { from_json(missing, back); }, {"the training state has no 'position'"});
  nlohmann::json unknown = j;
  unknown["momentum"] = 1;
  expect_error([&] { from_json(unknown, back); }, {"unknown training state field 'momentum'"});
  nlohmann::json fraction = j;
  fraction["step"] = 1.5;
  expect_error([&] { from_json(fraction, back); }, {"training state field 'step' must be an integer, got 1.5"});

  TrainOptions o;
  o.max_steps = 77;
  const auto meta = checkpoint_metadata(s, o, "0123456789abcdef");
  EXPECT_EQ(meta.size(), 2u);
  const CheckpointState read = read_checkpoint_state(meta, "ckpt");
  EXPECT_EQ(nlohmann::json(read.state), nlohmann::json(s));
  EXPECT_EQ(read.options["max_steps"], 77);
  expect_error([] { read_checkpoint_state({{"format", "x"}}, "ckpt"); },
               {"ckpt: not a training checkpoint (no 'train_state' in its metadata)"});
  expect_error([] { read_checkpoint_state({{kTrainStateKey, "{\"step\": 1}"}}, "ckpt"); },
               {"ckpt: the training state has no"});
}

// Rewrites a checkpoint's training state as the earlier format wrote it: one metadata key per
// field, integers in decimal, numbers as JSON, "none" for no best score, the options in
// "train.options"; `change` edits the keys after that.
void to_legacy_format(const std::string& path,
                      const std::function<void(std::map<std::string, std::string>&)>& change = {}) {
  const SafetensorsFile file = SafetensorsFile::read(path);
  std::map<std::string, std::string> meta = file.metadata();
  const nlohmann::json record = nlohmann::json::parse(meta.at(kTrainStateKey));
  meta.erase(kTrainStateKey);
  meta.erase(kChecksumKey);
  for (const char* f : {"step", "epoch", "position", "rng_counter", "bad_validations", "tokens_seen", "interval_tokens"})
    meta[cat("train.", f)] = std::to_string(record[f].get<int64_t>());
  for (const char* f : {"elapsed_s", "interval_loss"}) meta[cat("train.", f)] = record[f].dump();
  meta["train.best"] = record["best"].is_null() ? "none" : record["best"].dump();
  meta["train.options"] = record["options"].dump();
  if (change) change(meta);
  std::vector<NamedTensor> tensors;
  for (const std::string& name : file.names()) tensors.push_back({name, file.tensor(name)});
  write_safetensors(path, meta, tensors);
}

TEST_F(TrainerTest, ACheckpointOfTheEarlierFormatResumesExactly) {
  Trainer reference(with_validation(options("reference", 12), 3));
  reference.run();

  // Stopped at step 5: between log steps, so the partial log interval matters too.
  Trainer(with_validation(options("old", 5), 3)).run();
  const std::string checkpoint = path("old/checkpoint-00000005.safetensors");
  fs::remove(path("old/checkpoint-00000004.safetensors"));  // no newer-format one to fall back to
  const CheckpointState before = read_checkpoint_state(SafetensorsFile::read(checkpoint).metadata(), checkpoint);
  to_legacy_format(checkpoint);
  const auto meta = SafetensorsFile::read(checkpoint).metadata();
  ASSERT_EQ(meta.count(kTrainStateKey), 0u);
  ASSERT_EQ(meta.count("train.step"), 1u);
  ASSERT_NE(meta.at("train.best"), "none");  // validated at step 3
  // Every field reads back as the record held it.
  const CheckpointState after = read_checkpoint_state(meta, checkpoint);
  EXPECT_EQ(nlohmann::json(after.state), nlohmann::json(before.state));
  EXPECT_EQ(after.options, before.options);
  EXPECT_GT(after.state.interval_tokens, 0);

  TrainOptions o = with_validation(options("old", 12), 3);
  o.resume = true;
  std::vector<std::string> messages;
  TrainCallbacks callbacks;
  callbacks.on_message = [&](const std::string& line) { messages.push_back(line); };
  Trainer resumed(o, callbacks);
  EXPECT_NE(std::find(messages.begin(), messages.end(),
                      "options changed since the checkpoint (the run continues with the new ones): max_steps 5 → 12"),
            messages.end());
  const transformer::TrainResult r = resumed.run();
  EXPECT_EQ(r.steps, 12);
  EXPECT_EQ(r.best_score, reference.result().best_score);
  expect_same_file(path("reference/model.safetensors"), path("old/model.safetensors"));
  EXPECT_EQ(without_timings(read_metrics(path("reference"))), without_timings(read_metrics(path("old"))));
  // The state the checkpoint saved at step 12 is the new record.
  EXPECT_EQ(SafetensorsFile::read(path("old/checkpoint-00000012.safetensors")).metadata().count(kTrainStateKey), 1u);
}

TEST_F(TrainerTest, AMalformedEarlierFormatCheckpointIsNamed) {
  Trainer(options("old", 4)).run();
  to_legacy_format(path("old/checkpoint-00000004.safetensors"),
                   [](std::map<std::string, std::string>& meta) { meta["train.step"] = "four"; });
  TrainOptions o = options("old", 8);
  o.resume = true;
  expect_error([&] { Trainer t(o); }, {"can be read", "checkpoint-00000004.safetensors: metadata 'train.step' is not an "
                                       "integer: 'four'"});
}

}  // namespace
}  // namespace tfm
