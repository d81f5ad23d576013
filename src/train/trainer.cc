// transformer::Trainer: from parallel text to a model, as the paper trained it (§5). The Impl
// runs the steps and their schedule; the run folder, the data, the ranks' agreement, the gradient
// exchange and the optimizer are each in a file of their own beside it.
#include "transformer/trainer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "core/device.h"
#include "core/rng.h"
#include "core/threads.h"
#include "data/batcher.h"
#include "dist/communicator.h"
#include "io/file_lock.h"
#include "model/checkpoint.h"
#include "ops/matmul.h"
#include "train/batch_loss.h"
#include "train/corpus.h"
#include "train/gradient_sync.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/options.h"
#include "train/pace.h"
#include "train/plot.h"
#include "train/ranks.h"
#include "train/run_folder.h"
#include "train/state.h"
#include "train/trainer_impl.h"
#include "train/validation.h"

namespace transformer {

namespace fs = std::filesystem;
using tfm::cat;

// Dropout's random streams: batch j of a step (counted over the whole step, every rank's batches)
// draws streams from rng_counter + j·kStreamsPerBatch on, so that its masks do not depend on which
// rank computes it, nor on how many ranks there are (a forward pass draws about 4 per layer).
constexpr uint64_t kStreamsPerBatch = uint64_t{1} << 16;

static_assert(std::atomic<bool>::is_always_lock_free, "request_stop() must be async-signal-safe");

Trainer::Impl::Impl(const TrainOptions& options, TrainCallbacks cbs) : o(options), callbacks(std::move(cbs)) {
  set_up_process();
  check_run_settings();
  data = tfm::prepare_corpus(o, comm, say);
  build_model();
  sync.emplace(comm, *model, o, over_nccl(), say);
  plan_steps();
  restore_or_start();
  rng.restore(o.seed, s.rng_counter);
  order = tfm::epoch_order(static_cast<int64_t>(batches.size()), o.seed, s.epoch);
  last_saved = s.step;
  pace.begin_steps(s.step, s.elapsed_s, {static_cast<int64_t>(batches.size()), o.accumulate * comm.size()});
  comm.set_timeout(o.rank_timeout);  // from the first step on: rank 0 prepared the data alone
}

void Trainer::Impl::set_up_process() {
  o.validate();
  if (o.threads > 0) tfm::set_num_threads(static_cast<int>(o.threads));
  else tfm::check_default_threads();
  o.resolved_model(std::max<int64_t>(o.vocab_options.size, 4));
  device = tfm::parse_device(o.device, "train: device");
  if (device == tfm::Device::CPU) return;
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

// The input files, the ranks' options and the run folder, before any data is read.
void Trainer::Impl::check_run_settings() {
  tfm::check_input_files(o, root());
  tfm::check_options_agree(comm, o);
  if (root()) lock = tfm::open_run_folder(o, say);
  if (comm.size() == 1) return;
  message(cat("data-parallel training: ", comm.size(), " ranks over ", comm.backend(), ", each step ", o.accumulate,
              " batch", o.accumulate == 1 ? "" : "es", " per rank (", o.accumulate * comm.size(), " in all)"));
  if (o.threads == 0)
    message(cat("note: threads 0 gives each rank all of its machine's cores; with several ranks on one machine, "
                "give threads (--threads): its cores / its ranks"));
}

// The model with its initial weights and Adam's zero moments, where the parameters live.
void Trainer::Impl::build_model() {
  config = o.resolved_model(data.vocab.size());
  model = std::make_unique<tfm::Transformer>(config);
  model->init_parameters(o.seed);
  if (device != tfm::Device::CPU) {  // checked at the start
    model->params().to_device(device);
    message(cat("device: ", tfm::require_device_memory(device, "train").describe()));
  }
  optimizer = tfm::Optimizer(model->params().values());
}

// The batches, said with the model's size and the products' precision; rank 0's metrics log.
void Trainer::Impl::plan_steps() {
  batches = tfm::plan_batches(data.examples, o.batch_tokens);
  // A pair longer than batch_tokens on a side (with its end token) is a batch of its own, over the limit.
  int64_t over = 0;
  for (const tfm::Example& e : data.examples)
    over += static_cast<int64_t>(std::max(e.src.size(), e.tgt.size())) + 1 > o.batch_tokens;
  const bool pairs = data.objective.kind == tfm::Objective::Kind::kTranslation;
  const char* unit = pairs ? " pair" : " sentence";
  message(cat("model: ", model->params().parameter_count(), " parameters; ", data.examples.size(), unit, "s in ",
              batches.size(), " batches of up to ", o.batch_tokens, " tokens",
              over == 0 ? std::string()
                        : cat(" (", over, unit, over == 1 ? " is" : "s are", " longer than that",
                              pairs ? " on a side" : "", ": each is a batch of its own, over the limit)")));
  // (the activations the products read kept in bfloat16: Context::use_bf16_activations)
  const char* bf16_what = "bf16: weight products in bfloat16 with float32 sums, their activations kept in bfloat16";
  if (o.bf16 && device != tfm::Device::CPU)
    message(cat(bf16_what, ", on the GPU's tensor cores"));
  else if (o.bf16)
    message(tfm::ops::bf16_native()
                ? std::string(bf16_what)
                : cat(bf16_what, ", but this CPU (at its level, "
                      "TFM_CPU_ISA) has no bfloat16 instructions: ", tfm::ops::bf16_path(),
                      " (useful to check accuracy, not for speed)"));
  if (root()) metrics = std::make_unique<tfm::MetricsLog>((fs::path(o.run_dir) / "metrics.jsonl").string());
}

void Trainer::Impl::restore_or_start() {
  if (o.resume && root())
    s = tfm::resume_newest(o, *model, optimizer.m, optimizer.v, data.vocab, *metrics, say);
  else if (root() && fs::exists(metrics->path()))
    fs::remove(metrics->path());
  // The options, once a resume has found them fit for its checkpoint: a resume that fails (another
  // model's options, say) leaves the run's record as it was.
  if (root()) tfm::write_run_config(o, config, data.mask_id);
  // Rank 0 read the checkpoint (possibly written by another number of ranks): its state, weights
  // and Adam's moments to every rank.
  if (o.resume) tfm::share_resumed_state(comm, s, {&model->params().values(), &optimizer.m, &optimizer.v});
}

std::optional<std::string> Trainer::Impl::limit_reached() const {
  if (o.max_steps > 0 && s.step >= o.max_steps) return cat("reached max_steps ", o.max_steps);
  if (o.max_epochs > 0 && s.epoch >= o.max_epochs) return cat("reached max_epochs ", o.max_epochs);
  if (o.max_seconds > 0 && pace.elapsed() >= o.max_seconds) return cat("reached max_seconds ", o.max_seconds);
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

int64_t Trainer::Impl::count_tokens(const std::vector<int32_t>& step_batches) {
  int64_t tokens = 0;
  using Kind = tfm::Objective::Kind;
  for (const int32_t b : step_batches)
    for (const int32_t i : batches[static_cast<size_t>(b)]) {
      const tfm::Example& e = data.examples[static_cast<size_t>(i)];
      const int64_t counted = tfm::loss_tokens(data.objective, e);
      tokens += counted;
      // The speed counts every token read: the source's; a masked LM's sentence beside its masked
      // tokens (step() counts those); a causal LM has no source.
      if (data.objective.kind == Kind::kTranslation) pace.count(static_cast<int64_t>(e.src.size()) + 1);
      else if (data.objective.kind == Kind::kMasked) pace.count(static_cast<int64_t>(e.tgt.size()) + 1 - counted);
    }
  return tokens;
}

double Trainer::Impl::optimize(const std::vector<int32_t>& step_batches, int64_t tokens, double lr) {
  // Forward and backward; the loss is the mean per target token over the whole step. This rank
  // takes a run of `accumulate` consecutive batches of the step, from rank × accumulate on; each
  // batch's gradient is computed alone and the gradients are summed in the fixed order of
  // dist/tree_sum.h, within the rank and then over the ranks, so that the sum's bits do not depend
  // on the number of ranks (with accumulate a power of two).
  tfm::ParamStore& params = model->params();
  tfm::Context ctx = model->context(&rng);
  if (o.bf16) ctx.use_bf16_activations();  // this step's bfloat16 copy of the weights
  const uint64_t first_stream = rng.counter();
  const auto n = static_cast<int64_t>(step_batches.size());
  const int64_t begin = std::min(n, comm.rank() * o.accumulate), end = std::min(n, begin + o.accumulate);
  std::vector<double> losses(static_cast<size_t>(n), 0.0);  // each batch's, on the rank that computed it
  const auto contributors = static_cast<int>((n + o.accumulate - 1) / o.accumulate);  // ranks with a batch
  for (int64_t j = begin; j < end; ++j) {
    const bool last = j + 1 == end;
    sync->before_batch(params, ctx, last, end - begin, contributors);
    const uint64_t streams = first_stream + static_cast<uint64_t>(j) * kStreamsPerBatch;
    rng.restore(o.seed, streams);
    losses[static_cast<size_t>(j)] = train_batch(ctx, step_batches[static_cast<size_t>(j)], tokens);
    TFM_CHECK(rng.counter() - streams <= kStreamsPerBatch, "a batch drew ", rng.counter() - streams,
              " random streams, more than the ", kStreamsPerBatch, " kept for each");
    sync->after_batch(params, last);
  }
  rng.restore(o.seed, first_stream + static_cast<uint64_t>(n) * kStreamsPerBatch);
  sync->finish(params, end - begin, contributors, losses);
  double loss = 0;
  for (const double l : losses) loss += l;
  result.last_loss = loss / static_cast<double>(tokens);
  optimizer.update(params, o, result.last_loss, lr, s.step + 1, last_saved);
  return loss;
}

double Trainer::Impl::train_batch(const tfm::Context& ctx, int32_t index, int64_t tokens) const {
  // The batch's ids, lengths and targets stay on the host, where the ops check them; each op copies
  // what its kernel reads to the device without waiting (on a GPU, a copy back for each check
  // would wait for all the work queued before it, some forty times a step).
  // A masked LM masks each sentence anew every epoch.
  const tfm::Batch batch =
      tfm::objective_batch(data.objective, data.examples, batches[static_cast<size_t>(index)], config, s.epoch);
  // Which batch, for one too big for memory (a pair of 100,000 tokens with the limits off, say).
  auto which = [&] {
    const int64_t rows = batch.tgt_out.size(0);
    const bool pairs = batch.src.defined() && batch.tgt_in.defined();
    const std::string sizes = pairs ? cat(batch.src.size(1), " source and ", batch.tgt_in.size(1), " target tokens")
                                    : cat(batch.tgt_out.size(1), " tokens");
    return cat("at step ", s.step + 1, " in a batch of ", rows, pairs ? " pair" : " sentence", rows == 1 ? "" : "s",
               " of up to ", sizes, ": lower max_tokens (", o.max_tokens, ") or batch_tokens (", o.batch_tokens, ")");
  };
  try {
    return tfm::batch_loss(*model, ctx, batch, o.label_smoothing, 1.0 / static_cast<double>(tokens), true).loss;
  } catch (const tfm::OutOfMemory& e) {
    throw Error(cat(e.what(), ", ", which()));
  } catch (const std::bad_alloc&) {
    throw Error(cat("out of memory ", which()));
  }
}

void Trainer::Impl::report_progress(double lr) {
  if (!root()) return;
  const Progress p = pace.progress(s, o, lr);
  if (callbacks.on_progress) callbacks.on_progress(p);
  if (!p.log_step) return;
  log_metrics({{"step", s.step}, {"epoch", s.epoch}, {"loss", s.interval_loss / static_cast<double>(s.interval_tokens)},
               {"lr", lr}, {"tokens_per_s", p.tokens_per_s}, {"elapsed_s", pace.elapsed()}},
              MetricsRecord::Kind::kTraining);
  s.interval_loss = 0;
  s.interval_tokens = 0;
  pace.new_interval();
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
      saved = cat("; saving a checkpoint failed too (", e2.what(), "); ", tfm::kept_checkpoint(last_saved));
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
  const ValidationResult r = tfm::validate(*model, data.vocab, data.valid, o, data.objective);
  const bool better = tfm::record_validation(r, o, s);
  last_validated = s.step;
  if (better)
    tfm::save_model(*model, (fs::path(o.run_dir) / "model-best.safetensors").string(),
                    {{tfm::kVocabFingerprintKey, data.vocab.fingerprint()}});
  const bool translation = data.objective.kind == tfm::Objective::Kind::kTranslation;
  nlohmann::json record = {{"step", s.step}, {"valid_loss", r.loss}, {"valid_ppl", r.ppl}};
  if (translation) record["valid_bleu"] = r.bleu, record["valid_exact"] = r.exact;
  log_metrics(record, MetricsRecord::Kind::kValidation);
  message(tfm::validation_line(s.step, r, better, translation));
  return o.patience > 0 && s.bad_validations >= o.patience;
}

std::string Trainer::Impl::checkpoint() {
  if (!root()) return {};
  s.elapsed_s = pace.elapsed();
  const std::string path = tfm::save_checkpoint(*model, o, s, optimizer.m, optimizer.v, data.vocab.fingerprint());
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
  // A time limit falls between validations: one more covers the last step (metrics, model-best).
  if (data.validates && reason.starts_with("reached max_seconds") && s.step > 0 && last_validated != s.step)
    scheduled_validation();
  if (last_saved != s.step) checkpoint();
  result.final_model = (fs::path(o.run_dir) / "model.safetensors").string();
  tfm::save_model(*model, result.final_model, {{tfm::kVocabFingerprintKey, data.vocab.fingerprint()}});
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
    const int64_t tokens = count_tokens(step_batches);
    const double lr = tfm::learning_rate(o, config.d_model, s.step + 1);
    const double loss = optimize(step_batches, tokens, lr);
    ++s.step;
    s.rng_counter = rng.counter();
    s.tokens_seen += tokens;
    s.interval_loss += loss;
    s.interval_tokens += tokens;
    pace.count(tokens);
    r.stepped = true;
    r.loss = result.last_loss;
    r.tokens = tokens;
    r.learning_rate = lr;
    after_step(lr);
    return finished();
  } catch (const std::exception& e) {
    failure = e.what();
    throw;
  }
}

void Trainer::Impl::after_step(double lr) {
  report_progress(lr);
  // Validation, best model, early stopping.
  if (data.validates && s.step % o.valid_every == 0) {
    // Rank 0 validates, and decides; the others wait for it as long as that takes.
    comm.set_timeout(0);
    int64_t patience_ended = root() && scheduled_validation();
    if (comm.size() > 1) comm.broadcast(patience_ended, 0);
    comm.set_timeout(o.rank_timeout);
    if (patience_ended) {
      checkpoint();
      finish(cat("no improvement in ", o.patience, " validations"));
      return;
    }
  }
  if (s.step % o.save_every == 0) {
    tfm::check_weights_agree(comm, model->params(), s.step);
    checkpoint();
  }
  if (const auto reason = shared_limit_reached()) finish(*reason);
}

TrainResult Trainer::Impl::current_result() const {
  TrainResult r = result;
  r.steps = s.step;
  r.epochs = s.epoch;
  r.best_score = s.has_best ? s.best : 0;
  return r;
}

Trainer::Trainer(const TrainOptions& options, TrainCallbacks callbacks)
    : impl_(tfm::or_abort_all_ranks([&] { return std::make_unique<Impl>(options, std::move(callbacks)); })) {}
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

TrainResult Trainer::run() {
  while (!step().finished) {
  }
  return result();
}

StepResult Trainer::step() {
  const std::lock_guard lock(impl_->busy);
  return tfm::or_abort_all_ranks([&] { return impl_->step(); });
}

ValidationResult Trainer::validate() {
  const std::lock_guard lock(impl_->busy);
  TFM_CHECK(!impl_->data.valid.examples.empty(),
            "no validation data to validate on: set valid_source and valid_target (a language model's valid_text)");
  return tfm::validate(*impl_->model, impl_->data.vocab, impl_->data.valid, impl_->o, impl_->data.objective);
}

std::string Trainer::save_checkpoint() {
  const std::lock_guard lock(impl_->busy);
  return impl_->checkpoint();
}

void Trainer::request_stop() noexcept {
  if (impl_) impl_->stop_requested.store(true, std::memory_order_relaxed);
}

bool Trainer::finished() const {
  const std::lock_guard lock(impl_->busy);
  return impl_->done;
}

TrainResult Trainer::result() const {
  const std::lock_guard lock(impl_->busy);
  return impl_->current_result();
}

const TrainOptions& Trainer::options() const { return impl_->o; }
const ModelConfig& Trainer::model_config() const { return impl_->config; }
void Trainer::set_callbacks(TrainCallbacks callbacks) {
  const std::lock_guard lock(impl_->busy);
  impl_->callbacks = std::move(callbacks);
}

}  // namespace transformer
