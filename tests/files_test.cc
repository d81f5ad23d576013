// The files a training writes and reads beside its model: the run folder's lock, the temporary
// files of interrupted saves, the metrics log (checked appends, torn lines, line numbers) and the
// pictures drawn from it and from attention weights, on input that went wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "io/atomic_file.h"
#include "io/file_lock.h"
#include "testing/errors.h"
#include "testing/fixture.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "viz/heatmap.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// flock locks belong to an open file: a second lock on the same file fails even in the same
// process, naming the holder's pid, and that it is this process; the first one's end releases it.
TEST(FileLock, SecondLockFailsNamingTheHolderUntilTheFirstEnds) {
  const std::string path = testing::temp_path("run.lock");
  {
    const FileLock first(path);
    EXPECT_EQ(read_text(path), std::to_string(::getpid()));
    const std::string where = "'" + path + "' is locked by this process", pid = "pid " + std::to_string(::getpid());
    testing::expect_error([&] { FileLock second(path); }, {where.c_str(), pid.c_str()});
  }
  EXPECT_NO_THROW(FileLock again(path));
  fs::remove(path);
}

TEST(AtomicFile, StaleTemporariesAreRemovedAndNothingElse) {
  const fs::path dir = testing::temp_path("stale");
  fs::create_directories(dir);
  const std::vector<std::string> stale = {".checkpoint-00000010.safetensors.tmp-Ab12Cd", ".metrics.jsonl.tmp-000000"};
  const std::vector<std::string> kept = {"checkpoint-00000010.safetensors", ".tmp-Ab12Cd", "notes.tmp-Ab12Cd",
                                         ".x.tmp-short", ".x.tmp-toolong1"};
  for (const auto& n : stale) std::ofstream(dir / n) << "x";
  for (const auto& n : kept) std::ofstream(dir / n) << "x";
  std::vector<std::string> removed = remove_stale_temporaries(dir.string());
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, stale);
  for (const auto& n : stale) EXPECT_FALSE(fs::exists(dir / n)) << n;
  for (const auto& n : kept) EXPECT_TRUE(fs::exists(dir / n)) << n;
  // A file write_file_atomic is still writing is not stale: it is gone once the write commits.
  write_file_atomic((dir / "done.txt").string(), [](std::ostream& out) { out << "done"; });
  EXPECT_TRUE(remove_stale_temporaries(dir.string()).empty());
  fs::remove_all(dir);
}

// A folder is refused by name, with nothing created in its parent; a device is written in place and
// stays a device (a temporary file renamed over /dev/null would replace it, as root, with a plain
// file); a failed write to a device names it and the reason.
TEST(AtomicFile, FoldersAreRefusedAndDevicesWrittenInPlace) {
  const fs::path dir = testing::temp_path("atomic_target");
  fs::create_directories(dir / "sub");
  testing::expect_error([&] { write_file_atomic((dir / "sub").string(), [](std::ostream& out) { out << "x"; }); },
                        {"sub': it is a folder"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // only sub
  write_file_atomic("/dev/null", [](std::ostream& out) { out << "into the device"; });
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  testing::expect_error([] { write_file_atomic("/dev/full", [](std::ostream& out) { out << std::string(1 << 17, 'x'); }); },
                        {"cannot write '/dev/full'", "No space left on device"});
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  fs::remove_all(dir);
}

// A failed append is an error naming the file (here /dev/full: no space), not a lost record.
TEST(MetricsLog, FailedAppendIsAnError) {
  const MetricsLog full("/dev/full");
  testing::expect_error([&] { full.append({{"step", 1}, {"loss", 2.5}}); },
                        {"cannot write to the metrics file '/dev/full'", "No space left on device"});
}

// Torn lines (a kill or a full disk mid-write) are skipped and counted; records keep their line
// numbers; truncate_after drops records past a step and the torn lines.
TEST(MetricsLog, TornLinesAreCountedAndDropped) {
  const std::string path = testing::temp_path("metrics.jsonl");
  std::ofstream(path) << "{\"step\": 1, \"loss\": 3.0}\n{\"step\": 2, \"lo\n\n{\"step\": 3, \"loss\": 2.0}\n"
                         "{\"step\": 4, \"loss\": 1.0}\n{\"step\"";
  const MetricsLog log(path);
  int64_t unreadable = -1;
  const std::vector<MetricsLog::Record> records = log.read(&unreadable);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(unreadable, 2);
  EXPECT_EQ(records[1].line, 4);  // the empty line 3 is neither a record nor torn
  EXPECT_EQ(records[1].fields["step"], 3);
  EXPECT_EQ(log.truncate_after(3), 2);
  EXPECT_EQ(read_text(path), "{\"loss\":3.0,\"step\":1}\n{\"loss\":2.0,\"step\":3}\n");
  log.append({{"step", 4}, {"loss", 1.5}});
  EXPECT_EQ(log.read(&unreadable).size(), 3u);
  EXPECT_EQ(unreadable, 0);
  fs::remove(path);
}

// A record whose plotted field is not a finite number names the file and line; values near the
// ends of the double range (a diverged run) still give finite coordinates.
TEST(TrainingPlot, BadRecordsAreNamedAndHugeValuesStayFinite) {
  const std::string metrics = testing::temp_path("plot.jsonl"), svg = testing::temp_path("plot.svg");
  std::ofstream(metrics) << "{\"step\": 1, \"loss\": 1.5}\n{\"step\": 2, \"loss\": \"abc\"}\n";
  const std::string line2 = metrics + " line 2";
  testing::expect_error([&] { write_training_plot(MetricsLog(metrics), svg); },
                        {line2.c_str(), "'loss' is \"abc\", not a finite number"});
  EXPECT_FALSE(fs::exists(svg));
  std::ofstream(metrics) << "{\"step\": 1, \"loss\": 1.5}\n{\"step\": 2, \"valid_bleu\": null}\n";
  testing::expect_error([&] { write_training_plot(MetricsLog(metrics), svg); }, {"line 2", "'valid_bleu' is null"});
  std::ofstream(metrics) << "{\"step\": 1, \"loss\": 1e308}\n{\"step\": 2, \"loss\": -1e308}\n{\"step\": 3, \"loss\": 2}\n";
  ASSERT_TRUE(write_training_plot(MetricsLog(metrics), svg));
  const std::string picture = read_text(svg);
  EXPECT_EQ(picture.find("nan"), std::string::npos);
  EXPECT_EQ(picture.find("inf"), std::string::npos);
  EXPECT_NE(picture.find("<polyline"), std::string::npos);
  fs::remove(metrics);
  fs::remove(svg);
}

// NaN weights (a model gone wrong) are drawn as 0, not cast to int (undefined behaviour); their
// tooltips still say nan.
TEST(Heatmap, NanWeightsAreDrawnAsZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string svg = heatmaps_svg({{"head 0", {{nan, 1.0f}, {0.0f, nan}}}}, {"a", "b"}, {"x", "y"}, 1);
  const std::string zeros = heatmaps_svg({{"head 0", {{0.0f, 1.0f}, {0.0f, 0.0f}}}}, {"a", "b"}, {"x", "y"}, 1);
  int tooltips = 0;
  for (size_t at; (at = svg.find(": nan<")) != std::string::npos; ++tooltips) svg.replace(at, 6, ": 0<");
  EXPECT_EQ(tooltips, 2);
  EXPECT_EQ(svg, zeros);
}

}  // namespace
}  // namespace tfm
