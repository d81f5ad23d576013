// One Trainer called from several threads: the calls take turns (a lock per Trainer), so two
// threads stepping it train exactly as one thread taking the same number of steps, and a third
// thread reading the result meanwhile sees a consistent step count.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "data/number_words.h"
#include "io/atomic_file.h"
#include "testing/tiny_training.h"
#include "transformer/trainer.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using transformer::TrainOptions;
using transformer::Trainer;

class TrainerThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tfm-trainer-threads-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    write_number_dataset((dir_ / "data").string(), 3, 300, 20, 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A tiny model: a step takes milliseconds.
  TrainOptions options(const std::string& run, int64_t max_steps) const {
    TrainOptions o = testing::tiny_training(dir_ / "data", dir_ / run, max_steps);
    o.warmup_steps = 10;
    o.seed = 5;
    o.save_every = 100;
    o.log_every = 2;
    return o;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(TrainerThreadsTest, TwoThreadsSteppingOneTrainerTrainAsOneThread) {
  constexpr int kSteps = 12;
  Trainer alone(options("alone", 2 * kSteps));
  alone.run();

  Trainer shared(options("shared", 2 * kSteps));
  std::vector<std::string> errors(2);
  std::vector<std::vector<int64_t>> seen(2);
  std::atomic<bool> reading{true};
  auto stepper = [&](int who) {
    try {
      for (int i = 0; i < kSteps; ++i) seen[who].push_back(shared.step().step);
    } catch (const std::exception& e) {
      errors[who] = e.what();
    }
  };
  // A reader meanwhile: the step count it sees never goes down.
  std::thread reader([&] {
    int64_t last = 0;
    while (reading.load()) {
      const int64_t now = shared.result().steps;
      EXPECT_GE(now, last);
      last = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread a(stepper, 0), b(stepper, 1);
  a.join();
  b.join();
  reading.store(false);
  reader.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  // Each call took one whole step: 24 distinct step numbers, each thread's increasing.
  std::vector<int64_t> all;
  for (const auto& s : seen) {
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(2 * kSteps);
  for (int i = 0; i < 2 * kSteps; ++i) expected[static_cast<size_t>(i)] = i + 1;
  EXPECT_EQ(all, expected);
  EXPECT_TRUE(shared.finished());
  EXPECT_EQ(shared.result().steps, 2 * kSteps);
  EXPECT_EQ(shared.result().last_loss, alone.result().last_loss);
  EXPECT_TRUE(read_file(path("alone/model.safetensors")) == read_file(path("shared/model.safetensors")))
      << "the weights trained by two threads differ from one thread's";
}

}  // namespace
}  // namespace tfm
