// transformer::Trainer: from parallel text to a model, as the paper trained it (§5).
#include "transformer/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/device.h"
#include "core/rng.h"
#include "core/threads.h"
#include "data/batcher.h"
#include "data/parallel_corpus.h"
#include "data/vocab.h"
#include "dist/bucket_reducer.h"
#include "dist/device_communicator.h"
#include "dist/communicator.h"
#include "dist/tree_sum.h"
#include "io/checksum.h"
#include "io/atomic_file.h"
#include "io/file_lock.h"
#include "model/checkpoint.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "train/batch_loss.h"
#include "train/metrics.h"
#include "train/options.h"
#include "train/plot.h"
#include "train/state.h"
#include "train/validation.h"

namespace transformer {

namespace fs = std::filesystem;
using tfm::cat;
using Clock = std::chrono::steady_clock;

// Dropout's random streams: batch j of a step (counted over the whole step, every rank's batches)
// draws streams from rng_counter + j·kStreamsPerBatch on, so that its masks do not depend on which
// rank computes it, nor on how many ranks there are (a forward pass draws about 4 per layer).
constexpr uint64_t kStreamsPerBatch = uint64_t{1} << 16;

struct Trainer::Impl {
  Impl(const TrainOptions& options, TrainCallbacks callbacks);

  // Rank 0 alone reports, logs and writes; the other ranks compute their share of each step.
  bool root() const { return comm.is_root(); }
  void message(const std::string& line) const {
    if (root() && callbacks.on_message) callbacks.on_message(line);
  }
  double elapsed() const { return elapsed_before + std::chrono::duration<double>(Clock::now() - start).count(); }
  std::string kept() const {
    return last_saved > 0 ? cat("the last checkpoint, of step ", last_saved, ", is kept")
                          : std::string("no checkpoint was saved yet");
  }
  // Whether a limit or a stop request ends the training before another step, and why.
  std::optional<std::string> limit_reached() const;
  // limit_reached() as rank 0 sees it (its clock, its signals), the same on every rank.
  std::optional<std::string> shared_limit_reached() const;
  // This step's batches (indices into `batches`): the next `accumulate` × ranks of this epoch's
  // order (an epoch ends between steps); none when the epoch that just ended was the last.
  std::vector<int32_t> next_batches();
  // Forward and backward over this rank's share of the batches (a run of `accumulate`), the
  // gradients summed over the ranks, then Adam; returns the step's loss sum over all ranks.
  double optimize(const std::vector<int32_t>& step_batches, int64_t tokens, double lr);
  void report_progress(double lr);
  // A scheduled validation: best model, metrics, patience; true when patience ends the training.
  bool scheduled_validation();
  void log_metrics(const nlohmann::json& record, MetricsRecord::Kind kind);
  // Under several ranks (collectives: every rank calls them): ends the job with an error on each
  // rank whose `difference` from rank 0 is not empty, naming `what` and the difference.
  void agree_with_root(const std::string& difference, const std::string& what) const;
  // The same for a checksum of `what`.
  void check_same_as_root(uint64_t mine, const std::string& what) const;
  // That every rank holds rank 0's weights.
  void check_ranks_agree() const;
  // Whether the gradients go through NCCL: on a GPU, started by an MPI launcher.
  bool over_nccl() const {
    return device != tfm::Device::CPU && (comm.size() > 1 || tfm::dist::started_by_launcher());
  }
  // Rank 0 writes a checkpoint of this step; "" on the other ranks.
  std::string checkpoint();
  void finish(const std::string& reason);
  StepResult step();
  TrainResult current_result() const;

  tfm::dist::Communicator& comm = tfm::dist::world();  // first: it starts MPI under mpirun
  const TrainOptions o;
  TrainCallbacks callbacks;
  std::atomic<bool> stop_requested{false};
  const Clock::time_point start = Clock::now();
  std::unique_ptr<tfm::FileLock> lock;
  tfm::Vocab vocab;
  std::vector<tfm::Example> examples;
  tfm::ValidData valid;
  ModelConfig config;
  std::unique_ptr<tfm::Transformer> model;
  tfm::Device device = tfm::Device::CPU;  // where the parameters, gradients and moments live
  tfm::Tensor m, v;  // Adam's moments
  bool scheduled_validations = false;  // whether rank 0 has a validation set
  tfm::dist::TreeSum grad_sum;  // a step's batch gradients, when a rank computes more than one
  std::unique_ptr<tfm::dist::BucketReducer> reducer;  // under several ranks
  // NCCL between the ranks' GPUs: under an MPI launcher with the parameters on a GPU (also with one
  // rank, so that a one-rank run goes through it)
  std::unique_ptr<tfm::dist::DeviceCommunicator> device_comm;
  std::vector<std::vector<int32_t>> batches;
  std::unique_ptr<tfm::MetricsLog> metrics;  // rank 0's
  tfm::TrainState s;
  tfm::Rng rng;
  std::vector<int32_t> order;  // this epoch's batch order
  TrainResult result;
  // The tokens (source and target) this process trained on since the last log line or its start: the
  // speed's numerator. s.interval_tokens, the loss's denominator, is a checkpoint's too (a resumed
  // run logs the loss an uninterrupted one does), so it counts steps from before a resume.
  int64_t interval_speed_tokens = 0, last_saved = 0, first_step = 0;
  double elapsed_before = 0;
  Clock::time_point interval_start;
  Clock::time_point steps_start;  // when this process's first step began: the ETA's pace, without start-up
  bool done = false;
  std::string failure;  // the error that ended the training, if one did
};

static_assert(std::atomic<bool>::is_always_lock_free, "request_stop() must be async-signal-safe");

Trainer::Impl::Impl(const TrainOptions& options, TrainCallbacks cbs) : o(options), callbacks(std::move(cbs)) {
  o.validate();
  if (o.threads > 0) tfm::set_num_threads(static_cast<int>(o.threads));
  else tfm::check_default_threads();
  // Settings first, before minutes of reading data and training a vocabulary: the model (with a
  // stand-in vocabulary size), the files, and what resuming needs.
  o.resolved_model(std::max<int64_t>(o.vocab_options.size, 4));
  device = tfm::parse_device(o.device, "train: device");
  if (device != tfm::Device::CPU) {
    if (over_nccl()) {
      // One GPU per rank: the machine's ranks take the GPUs they see in order (where a launcher
      // shows each rank one GPU, CUDA_VISIBLE_DEVICES or Slurm's --gpus-per-task, each takes its
      // own; two ranks on one GPU are refused by NCCL, saying so).
      const int gpus = tfm::device_count(device);
      TFM_CHECK(gpus > 0, "train: device (--device) ", o.device, " under ", comm.size(), " processes: ",
                tfm::builtin_device_absence(device));
      tfm::select_device(device, comm.local_rank() % gpus);
    }
    tfm::require_device_memory(device, "train --device cuda");
  }
  // Every rank reads the training files; the validation files and --vocab are rank 0's alone.
  for (const std::string& f : {o.train_source, o.train_target})
    TFM_CHECK(fs::is_regular_file(f), "'", f, "' is not a readable file");
  if (root()) {
    for (const std::string& f : {o.valid_source, o.valid_target})
      TFM_CHECK(f.empty() || fs::is_regular_file(f), "'", f, "' is not a readable file");
    TFM_CHECK(o.vocab.empty() || fs::is_regular_file(o.vocab), "vocab (--vocab) '", o.vocab, "' is not a readable file");
  }
  if (comm.size() > 1) {
    // Every rank trains with rank 0's options but those that are each rank's own: where its files
    // are (their text is compared below) and its thread count. (Validation, the vocabulary and the
    // run folder are rank 0's alone.) A rank with another batch size, model or schedule would
    // otherwise exchange buffers of other sizes, or train apart.
    nlohmann::json mine = o;
    for (const char* own : {"train_source", "train_target", "valid_source", "valid_target", "vocab", "run_dir", "threads"})
      mine.erase(own);
    std::string text = root() ? mine.dump() : std::string();
    comm.broadcast(text, 0);
    const nlohmann::json theirs = nlohmann::json::parse(text);
    std::string difference;
    for (const auto& [field, value] : mine.items())
      if (!theirs.contains(field) || theirs[field] != value)
        difference += cat(difference.empty() ? "" : ", ", field, " ", value.dump(), " here, ",
                          theirs.contains(field) ? theirs[field].dump() : "none", " on rank 0");
    agree_with_root(difference, "training options");
  }
  // The run folder is rank 0's (the other ranks may run on machines that do not see it).
  if (root()) {
    TFM_CHECK(!o.resume || fs::is_directory(o.run_dir), "resume (--resume): no checkpoint in '", o.run_dir, "'");
    std::error_code made;
    fs::create_directories(o.run_dir, made);
    TFM_CHECK(!made, "cannot create the run folder '", o.run_dir, "' (run_dir, --run-dir): ", made.message());
    // One training per run folder at a time, for the whole run: two would mix their vocabularies,
    // checkpoints and metrics. The kernel releases the lock however this process ends.
    try {
      lock = std::make_unique<tfm::FileLock>((fs::path(o.run_dir) / ".lock").string());
    } catch (const tfm::FileLock::Held& e) {
      throw Error(cat("another training is using the run folder '", o.run_dir, "': ", e.what()));
    } catch (const Error& e) {
      throw Error(cat("cannot lock the run folder '", o.run_dir, "' for this training: ", e.what()));
    }
    // A new run in a folder of an earlier one would mix their checkpoints (and resume or average
    // would pick up the old ones).
    if (o.resume)
      TFM_CHECK(!tfm::newest_checkpoint(o.run_dir).empty(), "resume (--resume): no checkpoint in '", o.run_dir, "'");
    else
      TFM_CHECK(tfm::newest_checkpoint(o.run_dir).empty(), "the run folder '", o.run_dir,
                "' already holds checkpoints of an earlier run: continue it with resume (--resume), or give another run_dir (--run-dir)");
    for (const std::string& name : tfm::remove_stale_temporaries(o.run_dir))
      message(cat("removed '", name, "', left in the run folder by a save that was interrupted"));
  }
  if (comm.size() > 1) {
    message(cat("data-parallel training: ", comm.size(), " ranks over ", comm.backend(), ", each step ", o.accumulate,
                " batch", o.accumulate == 1 ? "" : "es", " per rank (", o.accumulate * comm.size(), " in all)"));
    if (o.threads == 0)
      message(cat("note: threads 0 gives each rank all of its machine's cores; with several ranks on one machine, "
                  "give threads (--threads): its cores / its ranks"));
  }

  // Data and vocabulary.
  tfm::CorpusStats stats;
  const std::vector<tfm::SentencePair> pairs = tfm::read_parallel(o.train_source, o.train_target, o.max_chars, &stats);
  message(cat("training data: ", stats.summary()));
  TFM_CHECK(!pairs.empty(), "no usable training pairs in '", o.train_source, "' and '", o.train_target, "'");
  if (comm.size() > 1) {
    // Each rank reads its own copy of the training files (machines may not share a disk): they
    // must hold the same text, or the ranks would train on different batches.
    tfm::Checksum text;
    for (const auto& p : pairs) {
      text.update(p.source);
      text.update("\t");
      text.update(p.target);
      text.update("\n");
    }
    check_same_as_root(text.value(), cat("training data ('", o.train_source, "', '", o.train_target, "')"));
  }
  // The validation files too, before minutes of training a vocabulary: a mismatch shows at once.
  std::vector<tfm::SentencePair> valid_pairs;
  if (!o.valid_source.empty() && root()) {
    tfm::CorpusStats vstats;
    valid_pairs = tfm::read_parallel(o.valid_source, o.valid_target, o.max_chars, &vstats);
    message(cat("validation data: ", vstats.summary()));
  }
  const std::string vocab_path = (fs::path(o.run_dir) / "vocab.model").string();
  // Rank 0's vocabulary (--vocab, the run folder's, or trained), sent to the other ranks.
  if (root() && !o.vocab.empty()) {
    vocab = tfm::Vocab::load(o.vocab);
    vocab.save(vocab_path);
  } else if (root() && o.resume && fs::exists(vocab_path)) {
    vocab = tfm::Vocab::load(vocab_path);
  } else if (root()) {
    std::vector<std::string> sentences;
    for (const auto& p : pairs) {
      sentences.push_back(p.source);
      sentences.push_back(p.target);
    }
    VocabOptions vo = o.vocab_options;
    vo.seed = o.seed;
    vocab = tfm::Vocab::train(sentences, vo);
    vocab.save(vocab_path);
    message(cat("vocabulary: ", vocab.size(), " ", vo.model_type, " pieces, written to ", vocab_path));
  }
  if (comm.size() > 1) {
    std::string bytes = root() ? vocab.serialized() : std::string();
    comm.broadcast(bytes, 0);
    if (!root()) vocab = tfm::Vocab::from_serialized(std::move(bytes), "rank 0's vocabulary");
  }
  int64_t too_long = 0;
  for (const auto& p : pairs) {
    tfm::Example e{vocab.encode(p.source), vocab.encode(p.target)};
    if (static_cast<int64_t>(e.src.size()) > o.max_tokens || static_cast<int64_t>(e.tgt.size()) > o.max_tokens) {
      ++too_long;
      continue;
    }
    examples.push_back(std::move(e));
  }
  if (too_long)
    message(cat("skipped ", too_long, too_long == 1 ? " pair" : " pairs", " longer than ", o.max_tokens,
                " tokens (max_tokens) once split into pieces"));
  TFM_CHECK(!examples.empty(), "every training pair is longer than max_tokens ", o.max_tokens);
  for (const auto& p : valid_pairs) {
    valid.examples.push_back({vocab.encode(p.source), vocab.encode(p.target)});
    valid.src.push_back(valid.examples.back().src);
    valid.references.push_back(p.target);
  }
  int64_t validates = !valid.src.empty();  // rank 0's validation set, known to every rank
  if (comm.size() > 1) comm.broadcast(validates, 0);
  scheduled_validations = validates != 0;

  // Model, optimizer state, batches.
  config = o.resolved_model(vocab.size());
  model = std::make_unique<tfm::Transformer>(config);
  model->init_parameters(o.seed);
  if (device != tfm::Device::CPU) {  // checked at the start
    model->params().to_device(device);
    message(cat("device: ", tfm::require_device_memory(device, "train").describe()));
  }
  const tfm::Tensor& values = model->params().values();
  m = tfm::Tensor::zeros(values.shape(), values.dtype(), values.device());  // where the parameters are
  v = tfm::Tensor::zeros(values.shape(), values.dtype(), values.device());
  if (over_nccl()) {
    // One rank needs no sum: it goes through NCCL where NCCL is there (so that a one-rank run under
    // mpirun checks that path), and trains without it where it is not.
    try {
      device_comm = tfm::dist::nccl(comm);
      message(cat("gradients summed over the ranks' GPUs by ", device_comm->backend(), " after the backward pass"));
    } catch (const Error& e) {
      if (comm.size() > 1) throw;
      message(cat("one rank: its gradients are not summed through NCCL (", e.what(), ")"));
    }
  }
  if (comm.size() > 1 || device_comm) {
    // The gradient buffer's ranges in the order a backward pass completes them, in buckets.
    const tfm::ParamStore& params = model->params();
    std::vector<tfm::dist::Range> plan;
    for (const auto& [first, end] : model->grads_done_order())
      plan.push_back({params.offset(first), params.offset(end - 1) + params.shape(end - 1).numel()});
    const int64_t n = params.grads().numel();
    // (On a GPU the backward's kernels are queued far ahead of the GPU: buckets would gain little.)
    const bool overlap = o.allreduce_bucket_mb > 0 && comm.other_threads_may_call() && !device_comm;
    const int64_t bucket = overlap ? std::max<int64_t>(1, static_cast<int64_t>(o.allreduce_bucket_mb * 1e6) /
                                                             static_cast<int64_t>(tfm::size_of(params.dtype())))
                                   : n;
    reducer = std::make_unique<tfm::dist::BucketReducer>(comm, plan, n, bucket, overlap, device_comm.get());
    const size_t buckets = reducer->buckets().size();
    if (!device_comm)
      message(overlap ? cat("gradients summed over the ranks in ", buckets, buckets == 1 ? " bucket" : " buckets", " of up to ",
                          o.allreduce_bucket_mb, " MB during the backward pass")
                    : cat("gradients summed over the ranks after the backward pass (",
                          o.allreduce_bucket_mb > 0 ? "this MPI allows no other thread" : "allreduce_bucket_mb 0", ")"));
  }
  batches = tfm::plan_batches(examples, o.batch_tokens);
  // A pair longer than batch_tokens on a side (with its end token) is a batch of its own, over the limit.
  int64_t over = 0;
  for (const tfm::Example& e : examples)
    over += static_cast<int64_t>(std::max(e.src.size(), e.tgt.size())) + 1 > o.batch_tokens;
  message(cat("model: ", model->params().parameter_count(), " parameters; ", examples.size(), " pairs in ",
              batches.size(), " batches of up to ", o.batch_tokens, " tokens",
              over == 0 ? std::string()
                        : cat(" (", over, over == 1 ? " pair is" : " pairs are",
                              " longer than that on a side: each is a batch of its own, over the limit)")));
  if (o.bf16 && device != tfm::Device::CPU)
    message("bf16: weight products in bfloat16 with float32 sums, on the GPU's tensor cores");
  else if (o.bf16)
    message(tfm::ops::bf16_native()
                ? "bf16: weight products in bfloat16 with float32 sums"
                : cat("bf16: weight products in bfloat16 with float32 sums, but this CPU (at its level, "
                      "TFM_CPU_ISA) has no bfloat16 instructions: ", tfm::ops::bf16_path(),
                      " (useful to check accuracy, not for speed)"));
  if (root()) metrics = std::make_unique<tfm::MetricsLog>((fs::path(o.run_dir) / "metrics.jsonl").string());

  if (o.resume && root()) {
    // The newest checkpoint that loads: one cut short (a full disk, a file copied in part) or
    // damaged (its checksum) is passed over, saying so, for the one before it.
    const std::vector<std::string> all = tfm::checkpoints(o.run_dir);
    TFM_CHECK(!all.empty(), "resume (--resume): no checkpoint in '", o.run_dir, "'");
    std::string changed, path;
    bool verified = false;
    for (auto it = all.rbegin(); it != all.rend() && path.empty(); ++it) {
      try {
        s = tfm::resume_from(*it, o, *model, m, v, vocab, &changed, &verified);
        path = *it;
      } catch (const tfm::RunMismatch& e) {
        throw Error(cat("resume (--resume): ", e.what()));  // the options, not the file: every checkpoint would fail alike
      } catch (const Error& e) {
        TFM_CHECK(std::next(it) != all.rend(), "resume (--resume): no checkpoint in '", o.run_dir,
                  "' can be read; the oldest: ", e.what());
        message(cat("warning: cannot resume from ", *it, " (", e.what(), "); trying the one before it"));
      }
    }
    if (const int64_t torn = metrics->truncate_after(s.step))
      message(cat("warning: dropped ", torn, " unreadable line", torn == 1 ? "" : "s", " of ", metrics->path(),
                  " (cut short by an interrupted write)"));
    message(cat("resumed from ", path, " at step ", s.step, ", epoch ", s.epoch,
                verified ? "" : " (unverified: the checkpoint records no checksum, model format version 1)"));
    if (!changed.empty())
      message(cat("options changed since the checkpoint (the run continues with the new ones): ", changed));
  } else if (root() && fs::exists(metrics->path())) {
    fs::remove(metrics->path());
  }
  // The options, once a resume has found them fit for its checkpoint: a resume that fails (another
  // model's options, say) leaves the run's record as it was.
  if (root()) {
    nlohmann::json resolved = o;
    resolved["resolved_model"] = config;
    tfm::write_file_atomic((fs::path(o.run_dir) / "config.json").string(),
                           [&](std::ostream& out) { out << resolved.dump(2) << '\n'; });
  }
  if (o.resume && comm.size() > 1) {
    // Rank 0 read the checkpoint (possibly written by another number of ranks): its state, weights
    // and Adam's moments to every rank.
    std::string state = root() ? nlohmann::json(s).dump() : std::string();
    comm.broadcast(state, 0);
    if (!root()) s = nlohmann::json::parse(state).get<tfm::TrainState>();
    for (const tfm::Tensor* t : {&model->params().values(), static_cast<const tfm::Tensor*>(&m), static_cast<const tfm::Tensor*>(&v)}) {
      const tfm::Tensor host = t->to_host();
      comm.broadcast(host.raw(), host.numel() * static_cast<int64_t>(tfm::size_of(host.dtype())), 0);
      if (t->device() != tfm::Device::CPU) t->copy_from(host);
    }
  }
  rng.restore(o.seed, s.rng_counter);
  order = tfm::epoch_order(static_cast<int64_t>(batches.size()), o.seed, s.epoch);
  last_saved = first_step = s.step;
  elapsed_before = s.elapsed_s;
  interval_start = steps_start = Clock::now();
}

std::optional<std::string> Trainer::Impl::limit_reached() const {
  if (o.max_steps > 0 && s.step >= o.max_steps) return cat("reached max_steps ", o.max_steps);
  if (o.max_epochs > 0 && s.epoch >= o.max_epochs) return cat("reached max_epochs ", o.max_epochs);
  if (o.max_seconds > 0 && elapsed() >= o.max_seconds) return cat("reached max_seconds ", o.max_seconds);
  if (stop_requested.load(std::memory_order_relaxed)) return std::string("interrupted");
  return std::nullopt;
}

std::optional<std::string> Trainer::Impl::shared_limit_reached() const {
  std::optional<std::string> reason = limit_reached();
  if (comm.size() == 1) return reason;
  // A reduction, not a broadcast from rank 0: a stop request (a signal) reaches any rank, and every
  // rank waits here for all the others, so that none goes on to finish() while another is gone.
  // The limits are rank 0's (its clock).
  double stop = root() ? reason.has_value() : stop_requested.load(std::memory_order_relaxed);
  comm.all_reduce_sum(&stop, 1);
  if (stop == 0) return std::nullopt;
  // Every rank ends with rank 0's reason ("interrupted" when a signal came to another rank only).
  std::string shared = root() ? reason.value_or("interrupted") : std::string();
  comm.broadcast(shared, 0);
  return shared;
}

std::vector<int32_t> Trainer::Impl::next_batches() {
  std::vector<int32_t> out;
  for (int64_t k = 0; k < o.accumulate * comm.size(); ++k) {
    if (s.position >= static_cast<int64_t>(batches.size())) {
      if (k > 0) break;
      ++s.epoch;
      s.position = 0;
      order = tfm::epoch_order(static_cast<int64_t>(batches.size()), o.seed, s.epoch);
      if (o.max_epochs > 0 && s.epoch >= o.max_epochs) break;
    }
    out.push_back(order[s.position++]);
  }
  return out;
}

double Trainer::Impl::optimize(const std::vector<int32_t>& step_batches, int64_t tokens, double lr) {
  // Forward and backward; the loss is the mean per target token over the whole step. This rank
  // takes a run of `accumulate` consecutive batches of the step, from rank × accumulate on; each
  // batch's gradient is computed alone and the gradients are summed in the fixed order of
  // dist/tree_sum.h, within the rank and then over the ranks, so that the sum's bits do not depend
  // on the number of ranks (with accumulate a power of two).
  tfm::ParamStore& params = model->params();
  tfm::Context ctx = model->context(&rng);
  ctx.products = o.bf16 ? tfm::ops::Precision::kBf16 : tfm::ops::Precision::kFloat32;
  const uint64_t first_stream = rng.counter();
  const auto n = static_cast<int64_t>(step_batches.size());
  const int64_t begin = std::min(n, comm.rank() * o.accumulate), end = std::min(n, begin + o.accumulate);
  std::vector<double> losses(static_cast<size_t>(n), 0.0);  // each batch's, on the rank that computed it
  const auto contributors = static_cast<int>((n + o.accumulate - 1) / o.accumulate);  // ranks with a batch
  // Under several ranks the gradients are summed over them in buckets (dist::BucketReducer) as the
  // last batch's backward pass completes each layer's; the earlier batches' gradients of this rank
  // are added to each bucket first.
  const std::function<void(int, int)> grads_done = [&](int first, int) { reducer->ready(params.offset(first)); };
  for (int64_t j = begin; j < end; ++j) {
    params.zero_grad();
    const bool last = j + 1 == end;
    if (last && reducer) {
      reducer->begin(params.grads(), contributors, [&](tfm::dist::Range r) {
        if (end - begin > 1) grad_sum.finish_range(params.grads(), r.lo, r.hi);
      });
      ctx.on_grads_done = &grads_done;
    }
    const uint64_t streams = first_stream + static_cast<uint64_t>(j) * kStreamsPerBatch;
    rng.restore(o.seed, streams);
    // The batch's ids, lengths and targets stay on the host, where the ops check them; each op copies
    // what its kernel reads to the device without waiting (on a GPU, a copy back for each check
    // would wait for all the work queued before it, some forty times a step).
    const tfm::Batch batch =
        tfm::to_batch(examples, batches[static_cast<size_t>(step_batches[static_cast<size_t>(j)])], config);
    // Which batch, for one too big for memory (a pair of 100,000 tokens with the limits off, say).
    auto which = [&] {
      const int64_t pairs = batch.src.size(0);
      return cat("at step ", s.step + 1, " in a batch of ", pairs, pairs == 1 ? " pair" : " pairs", " of up to ",
                 batch.src.size(1), " source and ", batch.tgt_in.size(1), " target tokens: lower max_tokens (",
                 o.max_tokens, ") or batch_tokens (", o.batch_tokens, ")");
    };
    try {
      losses[static_cast<size_t>(j)] =
          tfm::batch_loss(*model, ctx, batch, o.label_smoothing, 1.0 / static_cast<double>(tokens), true).loss;
    } catch (const tfm::OutOfMemory& e) {
      throw Error(cat(e.what(), ", ", which()));
    } catch (const std::bad_alloc&) {
      throw Error(cat("out of memory ", which()));
    }
    TFM_CHECK(rng.counter() - streams <= kStreamsPerBatch, "a batch drew ", rng.counter() - streams,
              " random streams, more than the ", kStreamsPerBatch, " kept for each");
    if (!last) grad_sum.push(params.grads());
  }
  rng.restore(o.seed, first_stream + static_cast<uint64_t>(n) * kStreamsPerBatch);
  if (reducer) {
    if (begin == end) {  // no batch for this rank in an epoch's last, shorter step: it adds nothing
      params.zero_grad();
      reducer->begin(params.grads(), contributors);
    }
    reducer->finish();  // what no backward reported, then waits for every bucket
    grad_sum.reset();
    comm.all_reduce_sum(losses.data(), n);  // each held by one rank: exact in any order
  } else if (end - begin > 1) {
    grad_sum.finish(params.grads());  // the last batch's gradient is in grads
  }
  double loss = 0;
  for (const double l : losses) loss += l;
  // A non-finite loss or gradient stops the run before Adam spreads it into the weights, so that
  // nothing saved (checkpoints, model-best) ever holds it.
  result.last_loss = loss / static_cast<double>(tokens);
  const double norm = std::sqrt(tfm::ops::sum_squares(params.grads()));
  if (!std::isfinite(result.last_loss) || !std::isfinite(norm))
    throw Error(cat("the training ", std::isfinite(result.last_loss) ? "gradient norm" : "loss", " became ",
                    std::isfinite(result.last_loss) ? norm : result.last_loss, " at step ", s.step + 1,
                    "; stopped before updating the weights; ", kept(), " (try a lower lr_factor, or clip_norm)"));
  if (o.clip_norm > 0 && norm > o.clip_norm) tfm::ops::scale(params.grads(), o.clip_norm / norm, params.grads());
  tfm::ops::adam_step(params.values(), params.grads(), m, v,
                      {lr, o.adam_beta1, o.adam_beta2, o.adam_eps, s.step + 1});
  return loss;
}

void Trainer::Impl::report_progress(double lr) {
  if (!root()) return;
  Progress p;
  p.step = s.step;
  p.epoch = s.epoch;
  const double secs = std::chrono::duration<double>(Clock::now() - interval_start).count();
  p.tokens_per_s = secs > 0 ? static_cast<double>(interval_speed_tokens) / secs : 0;
  p.log_step = s.step % o.log_every == 0;
  if (o.max_steps > 0)  // from this process's own pace
    p.eta_s = std::chrono::duration<double>(Clock::now() - steps_start).count() /
              static_cast<double>(s.step - first_step) *
              static_cast<double>(o.max_steps - s.step);
  p.loss = s.interval_loss / static_cast<double>(std::max<int64_t>(1, s.interval_tokens));
  p.learning_rate = lr;
  p.elapsed_s = elapsed();
  if (callbacks.on_progress) callbacks.on_progress(p);
  if (p.log_step) {
    log_metrics({{"step", s.step}, {"epoch", s.epoch}, {"loss", s.interval_loss / static_cast<double>(s.interval_tokens)},
                 {"lr", lr}, {"tokens_per_s", p.tokens_per_s}, {"elapsed_s", elapsed()}},
                MetricsRecord::Kind::kTraining);
    s.interval_loss = 0;
    s.interval_tokens = 0;
    interval_speed_tokens = 0;
    interval_start = Clock::now();
  }
}

// A record that cannot be written (a full disk) stops the run, after a checkpoint of this step if
// the disk still takes one: the training so far is not lost, nor the metrics silently.
void Trainer::Impl::log_metrics(const nlohmann::json& record, MetricsRecord::Kind kind) {
  try {
    metrics->append(record);
  } catch (const Error& e) {
    std::string saved;
    try {
      checkpoint();
      saved = cat("; a checkpoint of step ", s.step, " was saved (continue with resume, --resume, once there is room)");
    } catch (const Error& e2) {
      saved = cat("; saving a checkpoint failed too (", e2.what(), "); ", kept());
    }
    throw Error(cat(e.what(), saved));
  }
  if (!callbacks.on_metrics) return;
  MetricsRecord r;
  r.kind = kind;
  for (const auto& [name, value] : record.items())
    if (name == "step") r.step = value.get<int64_t>();
    else r.values[name] = value.get<double>();
  callbacks.on_metrics(r);
}

bool Trainer::Impl::scheduled_validation() {
  const ValidationResult r = tfm::validate(*model, vocab, valid, o);
  const double score = o.best_metric == "bleu" ? r.bleu : -r.loss;
  const bool better = !s.has_best || score > s.best;
  if (better) {
    s.has_best = true;
    s.best = score;
    s.bad_validations = 0;
    tfm::save_model(*model, (fs::path(o.run_dir) / "model-best.safetensors").string(),
                    {{tfm::kVocabFingerprintKey, vocab.fingerprint()}});
  } else {
    ++s.bad_validations;
  }
  log_metrics({{"step", s.step}, {"valid_loss", r.loss}, {"valid_ppl", r.ppl}, {"valid_bleu", r.bleu},
               {"valid_exact", r.exact}},
              MetricsRecord::Kind::kValidation);
  char line[256];
  std::snprintf(line, sizeof line, "validation at step %lld: loss %.4f | ppl %.2f | BLEU %.2f | exact %.1f%%%s",
                static_cast<long long>(s.step), r.loss, r.ppl, r.bleu, 100 * r.exact, better ? " (best)" : "");
  message(line);
  return o.patience > 0 && s.bad_validations >= o.patience;
}

void Trainer::Impl::agree_with_root(const std::string& difference, const std::string& what) const {
  if (comm.size() == 1) return;
  double differ = difference.empty() ? 0 : 1;
  comm.all_reduce_sum(&differ, 1);
  if (differ == 0) return;
  TFM_CHECK(difference.empty(), "the ", what, " of this rank differ from rank 0's: ", difference);
  // The ranks that agree wait in a reduction the others never join, so that the error that ends
  // the job (MPI_Abort) is the one of a rank that differs, naming it and the difference.
  double never = 0;
  comm.all_reduce_sum(&never, 1);
  throw Error(cat("the ", what, " of ", differ, " rank", differ == 1 ? "" : "s", " differ from rank 0's"));
}

void Trainer::Impl::check_same_as_root(uint64_t mine, const std::string& what) const {
  if (comm.size() == 1) return;
  int64_t root_value = static_cast<int64_t>(mine);
  comm.broadcast(root_value, 0);
  agree_with_root(static_cast<uint64_t>(root_value) == mine
                      ? std::string()
                      : cat("checksum ", tfm::format_checksum(mine), " here, ",
                            tfm::format_checksum(static_cast<uint64_t>(root_value)), " on rank 0"),
                  what);
}

void Trainer::Impl::check_ranks_agree() const {
  if (comm.size() == 1) return;
  const tfm::Tensor& on_device = model->params().values();
  const tfm::Tensor values = on_device.to_host();
  check_same_as_root(tfm::checksum_of({static_cast<const char*>(values.raw()),
                                         static_cast<size_t>(values.numel()) * tfm::size_of(values.dtype())}),
                       cat("weights after step ", s.step));
}

std::string Trainer::Impl::checkpoint() {
  if (!root()) return {};
  s.elapsed_s = elapsed();
  const std::string path = tfm::save_checkpoint(*model, o, s, m, v, vocab.fingerprint());
  last_saved = s.step;
  return path;
}

void Trainer::Impl::finish(const std::string& reason) {
  result.stop_reason = reason;
  result.interrupted = reason == "interrupted";
  if (!root()) {
    done = true;
    return;
  }
  if (last_saved != s.step) checkpoint();
  result.final_model = (fs::path(o.run_dir) / "model.safetensors").string();
  tfm::save_model(*model, result.final_model, {{tfm::kVocabFingerprintKey, vocab.fingerprint()}});
  tfm::write_training_plot(*metrics, (fs::path(o.run_dir) / "training.svg").string());
  done = true;
  message(cat("stopped at step ", s.step, ": ", reason, "; model written to ", result.final_model));
}

StepResult Trainer::Impl::step() {
  StepResult r;
  auto finished = [&] {
    r.step = s.step;
    r.epoch = s.epoch;
    r.finished = done;
    return r;
  };
  if (done) return finished();
  TFM_CHECK(failure.empty(), "the training stopped at an error and cannot go on (resume it with a new Trainer): ",
            failure);
  try {
    if (const auto reason = shared_limit_reached()) {
      finish(*reason);
      return finished();
    }
    const std::vector<int32_t> step_batches = next_batches();
    if (step_batches.empty()) {  // the last epoch ended
      finish(limit_reached().value_or(cat("reached max_epochs ", o.max_epochs)));
      return finished();
    }
    // The step's tokens over all ranks, as tfm::make_batch counts them (each sentence and its end).
    int64_t tokens = 0;
    for (const int32_t b : step_batches)
      for (const int32_t i : batches[static_cast<size_t>(b)]) {
        tokens += static_cast<int64_t>(examples[static_cast<size_t>(i)].tgt.size()) + 1;
        interval_speed_tokens += static_cast<int64_t>(examples[static_cast<size_t>(i)].src.size()) + 1;
      }
    const double lr = tfm::learning_rate(o, config.d_model, s.step + 1);
    const double loss = optimize(step_batches, tokens, lr);
    ++s.step;
    s.rng_counter = rng.counter();
    s.tokens_seen += tokens;
    s.interval_loss += loss;
    s.interval_tokens += tokens;
    interval_speed_tokens += tokens;
    r.stepped = true;
    r.loss = result.last_loss;
    r.tokens = tokens;
    r.learning_rate = lr;

    report_progress(lr);
    // Validation, best model, early stopping.
    if (scheduled_validations && s.step % o.valid_every == 0) {
      int64_t patience_ended = root() && scheduled_validation();  // rank 0 validates, and decides
      if (comm.size() > 1) comm.broadcast(patience_ended, 0);
      if (patience_ended) {
        checkpoint();
        finish(cat("no improvement in ", o.patience, " validations"));
        return finished();
      }
    }
    if (s.step % o.save_every == 0) {
      check_ranks_agree();
      checkpoint();
    }
    if (const auto reason = shared_limit_reached()) finish(*reason);
    return finished();
  } catch (const std::exception& e) {
    failure = e.what();
    throw;
  }
}

TrainResult Trainer::Impl::current_result() const {
  TrainResult r = result;
  r.steps = s.step;
  r.epochs = s.epoch;
  r.best_score = s.has_best ? s.best : 0;
  return r;
}

namespace {
// Under several ranks an error on one of them ends every rank, naming it (dist::Communicator::abort):
// the others would otherwise wait forever in the next collective. In one process it is thrown.
template <typename F>
auto or_abort_all_ranks(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    // (Not world() again: if starting it was what failed, a second call would start it again.)
    tfm::dist::Communicator* comm = tfm::dist::started_world();
    if (comm != nullptr && comm->size() > 1) comm->abort(e.what());
    throw;
  }
}
}  // namespace

Trainer::Trainer(const TrainOptions& options, TrainCallbacks callbacks)
    : impl_(or_abort_all_ranks([&] { return std::make_unique<Impl>(options, std::move(callbacks)); })) {}
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

TrainResult Trainer::run() {
  while (!step().finished) {
  }
  return result();
}

StepResult Trainer::step() {
  return or_abort_all_ranks([&] { return impl_->step(); });
}

ValidationResult Trainer::validate() {
  TFM_CHECK(!impl_->valid.src.empty(), "no validation data to validate on: set valid_source and valid_target");
  return tfm::validate(*impl_->model, impl_->vocab, impl_->valid, impl_->o);
}

std::string Trainer::save_checkpoint() { return impl_->checkpoint(); }

void Trainer::request_stop() noexcept {
  if (impl_) impl_->stop_requested.store(true, std::memory_order_relaxed);
}

bool Trainer::finished() const { return impl_->done; }
TrainResult Trainer::result() const { return impl_->current_result(); }
const TrainOptions& Trainer::options() const { return impl_->o; }
const ModelConfig& Trainer::model_config() const { return impl_->config; }
void Trainer::set_callbacks(TrainCallbacks callbacks) { impl_->callbacks = std::move(callbacks); }

}  // namespace transformer
