// Opening and locking the run folder, writing its config.json, and resuming from its checkpoints.
#include "train/run_folder.h"

#include <filesystem>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/atomic_file.h"

namespace tfm {

namespace fs = std::filesystem;

// A config file of an earlier version may say "resume": true; a new run from it says otherwise.
constexpr const char* kNewRunHint = "; to start a new run there, give --resume=false (or resume: false)";

std::unique_ptr<FileLock> open_run_folder(const TrainOptions& o,
                                          const std::function<void(const std::string&)>& message) {
  TFM_CHECK(!o.resume || fs::is_directory(o.run_dir), "resume (--resume): no checkpoint in '", o.run_dir, "'",
            kNewRunHint);
  std::error_code made;
  fs::create_directories(o.run_dir, made);
  TFM_CHECK(!made, "cannot create the run folder '", o.run_dir, "' (run_dir, --run-dir): ", made.message());
  // One training per run folder at a time, for the whole run: two would mix their vocabularies,
  // checkpoints and metrics. The kernel releases the lock however this process ends.
  std::unique_ptr<FileLock> lock;
  try {
    lock = std::make_unique<FileLock>((fs::path(o.run_dir) / ".lock").string());
  } catch (const FileLock::Held& e) {
    throw Error(cat("another training is using the run folder '", o.run_dir, "': ", e.what()));
  } catch (const Error& e) {
    throw Error(cat("cannot lock the run folder '", o.run_dir, "' for this training: ", e.what()));
  }
  // A new run in a folder of an earlier one would mix their checkpoints (and resume or average
  // would pick up the old ones).
  if (o.resume)
    TFM_CHECK(!newest_checkpoint(o.run_dir).empty(), "resume (--resume): no checkpoint in '", o.run_dir, "'",
              kNewRunHint);
  else
    TFM_CHECK(newest_checkpoint(o.run_dir).empty(), "the run folder '", o.run_dir,
              "' already holds checkpoints of an earlier run: continue it with resume (--resume), or give another run_dir (--run-dir)");
  for (const std::string& name : remove_stale_temporaries(o.run_dir))
    message(cat("removed '", name, "', left in the run folder by a save that was interrupted"));
  return lock;
}

void write_run_config(const TrainOptions& o, const ModelConfig& config, int32_t mask_id) {
  nlohmann::json resolved = o;
  if (mask_id >= 0) resolved["mask_id"] = mask_id;
  // The run's model and training, not how this invocation started: without `resume`, the file
  // starts a new run as well as it resumes this one (with --resume). Files that have it still read.
  resolved.erase("resume");
  resolved["resolved_model"] = config;
  write_file_atomic((fs::path(o.run_dir) / "config.json").string(),
                    [&](std::ostream& out) { out << resolved.dump(2) << '\n'; });
}

TrainState resume_newest(const TrainOptions& o, Transformer& model, const Tensor& m, const Tensor& v,
                         const Vocab& vocab, const MetricsLog& metrics,
                         const std::function<void(const std::string&)>& message) {
  const std::vector<std::string> all = checkpoints(o.run_dir);
  TFM_CHECK(!all.empty(), "resume (--resume): no checkpoint in '", o.run_dir, "'");
  TrainState s;
  std::string changed, path;
  bool verified = false;
  for (auto it = all.rbegin(); it != all.rend() && path.empty(); ++it) {
    try {
      s = resume_from(*it, o, model, m, v, vocab, &changed, &verified);
      path = *it;
    } catch (const RunMismatch& e) {
      throw Error(cat("resume (--resume): ", e.what()));  // the options, not the file: every checkpoint would fail alike
    } catch (const Error& e) {
      TFM_CHECK(std::next(it) != all.rend(), "resume (--resume): no checkpoint in '", o.run_dir,
                "' can be read; the oldest: ", e.what());
      message(cat("warning: cannot resume from ", *it, " (", e.what(), "); trying the one before it"));
    }
  }
  if (const int64_t torn = metrics.truncate_after(s.step))
    message(cat("warning: dropped ", torn, " unreadable line", torn == 1 ? "" : "s", " of ", metrics.path(),
                " (cut short by an interrupted write)"));
  message(cat("resumed from ", path, " at step ", s.step, ", epoch ", s.epoch,
              verified ? "" : " (unverified: the checkpoint records no checksum, model format version 1)"));
  if (!changed.empty())
    message(cat("options changed since the checkpoint (the run continues with the new ones): ", changed));
  return s;
}

}  // namespace tfm
