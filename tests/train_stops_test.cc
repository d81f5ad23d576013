// How a training ends, as its progress and run folder show it: the ETA counts down to the first of
// the limits that apply (steps, epochs, seconds), a checkpoint written by a stop request does not
// push a regular one out of keep_last, and a run stopped by its time limit validates at its last step.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "data/number_words.h"
#include "train/options.h"
#include "train/pace.h"
#include "testing/tiny_training.h"
#include "train/state.h"
#include "transformer/trainer.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using transformer::MetricsRecord;
using transformer::Progress;
using transformer::TrainCallbacks;
using transformer::Trainer;

TrainOptions limits(int64_t max_steps, int64_t max_epochs, double max_seconds) {
  TrainOptions o;
  o.max_steps = max_steps;
  o.max_epochs = max_epochs;
  o.max_seconds = max_seconds;
  return o;
}

TrainState at(int64_t step, int64_t epoch, int64_t position) {
  TrainState s;
  s.step = step;
  s.epoch = epoch;
  s.position = position;
  return s;
}

TEST(Eta, IsTheEarliestOfTheLimitsThatApply) {
  const EpochShape shape{10, 2};  // 10 batches an epoch, 2 a step: 5 steps an epoch
  // Steps alone: 0.5 s a step, 100 steps to go.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(200, 0, 0), at(100, 20, 0), shape, 0.5, 60), 50);
  // max_seconds comes first: 600 s of training, 480 done; the default 100,000 steps do not count.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(100000, 0, 600), at(100, 20, 0), shape, 0.5, 480), 120);
  // Past the time limit: nothing left, not a negative time.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(100000, 0, 600), at(100, 20, 0), shape, 0.5, 700), 0);
  // Epochs: in epoch 1 with 4 of its 10 batches used, max_epochs 3: 3 steps for this epoch's
  // remaining 6 batches, then 5 for epoch 2; 8 steps at 2 s.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(0, 3, 0), at(8, 1, 4), shape, 2, 30), 16);
  EXPECT_DOUBLE_EQ(eta_seconds(limits(1000, 3, 0), at(8, 1, 4), shape, 2, 30), 16);
  EXPECT_DOUBLE_EQ(eta_seconds(limits(10, 3, 0), at(8, 1, 4), shape, 2, 30), 4);  // max_steps first
  // An odd last step: 5 batches left, 2 a step: 3 steps.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(0, 1, 0), at(2, 0, 5), shape, 1, 10), 3);
  // Before a step's pace is known only the time limit can be estimated; without one, none.
  EXPECT_DOUBLE_EQ(eta_seconds(limits(200, 2, 0), at(0, 0, 0), shape, 0, 1), -1);
  EXPECT_DOUBLE_EQ(eta_seconds(limits(200, 2, 60), at(0, 0, 0), shape, 0, 1), 59);
}

std::vector<std::string> named(const std::vector<int64_t>& steps) {
  std::vector<std::string> out;
  for (const int64_t s : steps) out.push_back(checkpoint_path("run", s));
  return out;
}

TEST(CheckpointRetention, AStopsCheckpointKeepsTheRegularOnes) {
  EXPECT_EQ(checkpoint_step(checkpoint_path("run", 1200)), 1200);
  EXPECT_EQ(checkpoint_step("run/checkpoint-12x.safetensors"), -1);
  // save_every 2, keep_last 2: the regular 2, 4 and 6 keep the newest two.
  EXPECT_EQ(expired_checkpoints(named({2, 4, 6}), 2, 2), named({2}));
  // A stop at step 7 writes 7: 4 and 6 stay beside it.
  EXPECT_EQ(expired_checkpoints(named({4, 6, 7}), 2, 2), named({}));
  // Resumed, the next regular one (8) makes 7 and 4 go.
  EXPECT_EQ(expired_checkpoints(named({4, 6, 7, 8}), 2, 2), named({4, 7}));
  // A second stop (9) replaces the first's.
  EXPECT_EQ(expired_checkpoints(named({4, 6, 7, 9}), 2, 2), named({7}));
}

// A tiny model on 300 pairs of the demo task: a step takes milliseconds.
class TrainStopsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tfm-train-stops-test-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    write_number_dataset((dir_ / "data").string(), 3, 300, 20, 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainOptions options(int64_t max_steps) const {
    TrainOptions o = testing::tiny_training(dir_ / "data", dir_ / "run", max_steps);
    o.log_every = 1;
    return o;
  }
  bool saved(int64_t step) const { return fs::exists(checkpoint_path((dir_ / "run").string(), step)); }

  fs::path dir_;
};

TEST_F(TrainStopsTest, AStopRequestKeepsTheRegularCheckpoints) {
  TrainOptions o = options(100);
  o.save_every = 2;
  o.keep_last = 2;
  Trainer* trainer = nullptr;
  TrainCallbacks callbacks;
  callbacks.on_progress = [&](const Progress& p) {
    if (p.step == 7) trainer->request_stop();
  };
  Trainer stopped(o, callbacks);
  trainer = &stopped;
  EXPECT_TRUE(stopped.run().interrupted);
  EXPECT_TRUE(saved(4) && saved(6) && saved(7)) << "the stop's checkpoint pushed out a regular one";
  EXPECT_FALSE(saved(2));
}

TEST_F(TrainStopsTest, ATimeLimitValidatesAtTheLastStepAndTheEtaCountsToIt) {
  TrainOptions o = options(100000);
  o.valid_source = (dir_ / "data/valid.en").string();
  o.valid_target = (dir_ / "data/valid.de").string();
  o.valid_every = 1000000;
  o.max_seconds = 1;
  std::vector<int64_t> validated;
  double worst_eta = -1;
  TrainCallbacks callbacks;
  callbacks.on_metrics = [&](const MetricsRecord& r) {
    if (r.kind == MetricsRecord::Kind::kValidation) validated.push_back(r.step);
  };
  callbacks.on_progress = [&](const Progress& p) { worst_eta = std::max(worst_eta, p.eta_s); };
  Trainer timed(o, callbacks);
  const transformer::TrainResult r = timed.run();
  EXPECT_EQ(r.stop_reason, "reached max_seconds 1");
  ASSERT_GT(r.steps, 0);
  EXPECT_EQ(validated, std::vector<int64_t>{r.steps});
  EXPECT_TRUE(fs::exists(dir_ / "run/model-best.safetensors"));
  EXPECT_GE(worst_eta, 0);
  EXPECT_LE(worst_eta, 1.0) << "the ETA counted to max_steps, not to max_seconds";
}

}  // namespace
}  // namespace tfm
