#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <memory>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/threads.h"
#include "data/batcher.h"
#include "data/parallel_corpus.h"
#include "decode/translator.h"
#include "eval/bleu.h"
#include "io/atomic_file.h"
#include "io/file_lock.h"
#include "model/checkpoint.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "train/state.h"

namespace tfm {

namespace fs = std::filesystem;

namespace {

// Ctrl-C / SIGTERM: finish the current step, save a checkpoint, stop.
volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

std::string hms(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

struct ValidData {
  std::vector<Example> examples;          // for the loss
  std::vector<std::vector<int32_t>> src;  // for translation
  std::vector<std::string> references;
};

struct ValidResult {
  double loss = 0, ppl = 0, bleu = 0, exact = 0;
};

Batch to_batch(const std::vector<Example>& examples, const std::vector<int32_t>& indices, const ModelConfig& c) {
  std::vector<std::vector<int32_t>> src, tgt;
  for (int32_t i : indices) {
    src.push_back(examples[i].src);
    tgt.push_back(examples[i].tgt);
  }
  return make_batch(src, tgt, c);
}

ValidResult validate(const Transformer& model, const Vocab& vocab, const ValidData& data, const TrainOptions& o) {
  ValidResult r;
  // Loss: the plain cross-entropy per target token (no smoothing), so that ppl = exp(loss).
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& indices : plan_batches(data.examples, o.batch_tokens)) {
    const ops::LossSum s = batch_loss(model, model.context(), to_batch(data.examples, indices, model.config()), 0.0, 0, false);
    nll += s.loss;
    tokens += s.tokens;
  }
  r.loss = tokens ? nll / static_cast<double>(tokens) : 0;
  r.ppl = std::exp(r.loss);
  // BLEU and exact match of the translations.
  const size_t n = o.valid_max_sentences > 0 ? std::min(data.src.size(), static_cast<size_t>(o.valid_max_sentences))
                                             : data.src.size();
  TranslateOptions to;
  to.search.beam_size = o.valid_beam;
  // One batch at a time on all threads: no second batch's caches on top of training's memory, and
  // the unpacked model's large products stay on oneDNN with every thread.
  to.parallel_batches = 1;
  const std::vector<std::vector<int32_t>> sources(data.src.begin(), data.src.begin() + static_cast<std::ptrdiff_t>(n));
  const std::vector<Translation> out = translate_ids(model, sources, to);
  std::vector<std::string> hyps, refs;
  int64_t exact = 0;
  for (size_t i = 0; i < n; ++i) {
    hyps.push_back(out[i].hypotheses.empty() ? "" : vocab.decode(out[i].hypotheses[0].tokens));
    refs.push_back(data.references[i]);
    exact += hyps.back() == refs.back();
  }
  if (n > 0) {
    r.bleu = corpus_bleu(hyps, {refs}).score;
    r.exact = static_cast<double>(exact) / static_cast<double>(n);
  }
  return r;
}

// Progress: a line updated in place on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void update(const std::string& line, bool log_line) {
    if (tty_) {
      std::fprintf(stderr, "\r%-100s", line.c_str());
      if (log_line) std::fprintf(stderr, "\n");
    } else if (log_line) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void message(const std::string& line) {
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
    std::fflush(stderr);
  }

 private:
  bool tty_;
};

}  // namespace

ops::LossSum batch_loss(const Transformer& model, const Context& ctx, const Batch& batch, double smoothing,
                        double dloss_scale, bool backward) {
  Transformer::Saved saved;
  const Tensor logits = model.forward(ctx, batch, backward ? &saved : nullptr);
  const int64_t V = model.config().vocab_size;
  const Tensor flat = logits.view({logits.shape().rows(), V});
  const Tensor targets = batch.tgt_out.view({batch.tgt_out.numel()});
  const Tensor lse = Tensor::empty({flat.size(0)}, flat.dtype());
  const ops::LossArgs args{smoothing, model.config().pad_id};
  const ops::LossSum sum = ops::cross_entropy(flat, targets, args, lse);
  if (backward) {
    ops::cross_entropy_backward_in_place(flat, targets, lse, args, dloss_scale);  // logits → dL/dlogits
    model.backward(ctx, batch, saved, logits);
  }
  return sum;
}

TrainResult train(const TrainOptions& o) {
  o.validate();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (o.threads > 0) set_num_threads(static_cast<int>(o.threads));
  Progress progress;
  // Settings first, before minutes of reading data and training a vocabulary: the model (with a
  // stand-in vocabulary size), the files, and what --resume needs.
  o.resolved_model(std::max<int64_t>(o.vocab_options.size, 4));
  for (const std::string& f : {o.train_source, o.train_target, o.valid_source, o.valid_target})
    TFM_CHECK(f.empty() || fs::is_regular_file(f), "'", f, "' is not a readable file");
  TFM_CHECK(o.vocab.empty() || fs::is_regular_file(o.vocab), "--vocab '", o.vocab, "' is not a readable file");
  TFM_CHECK(!o.resume || fs::is_directory(o.run_dir), "--resume: no checkpoint in '", o.run_dir, "'");
  fs::create_directories(o.run_dir);
  // One training per run folder at a time, for the whole run: two would mix their vocabularies,
  // checkpoints and metrics. The kernel releases the lock however this process ends.
  std::unique_ptr<FileLock> lock;
  try {
    lock = std::make_unique<FileLock>((fs::path(o.run_dir) / ".lock").string());
  } catch (const Error& e) {
    throw Error(cat("another training is using the run folder '", o.run_dir, "': ", e.what()));
  }
  // A new run in a folder of an earlier one would mix their checkpoints (and --resume or average
  // would pick up the old ones).
  if (o.resume) TFM_CHECK(!newest_checkpoint(o.run_dir).empty(), "--resume: no checkpoint in '", o.run_dir, "'");
  else
    TFM_CHECK(newest_checkpoint(o.run_dir).empty(), "the run folder '", o.run_dir, "' already holds checkpoints of ",
              "an earlier run: continue it with --resume, or give another --run-dir");
  for (const std::string& name : remove_stale_temporaries(o.run_dir))
    progress.message(cat("removed '", name, "', left in the run folder by a save that was interrupted"));

  // Data and vocabulary.
  CorpusStats stats;
  const std::vector<SentencePair> pairs = read_parallel(o.train_source, o.train_target, o.max_chars, &stats);
  progress.message(cat("training data: ", stats.summary()));
  TFM_CHECK(!pairs.empty(), "no usable training pairs in '", o.train_source, "' and '", o.train_target, "'");
  // The validation files too, before minutes of training a vocabulary: a mismatch shows at once.
  std::vector<SentencePair> valid_pairs;
  if (!o.valid_source.empty()) {
    CorpusStats vstats;
    valid_pairs = read_parallel(o.valid_source, o.valid_target, o.max_chars, &vstats);
    progress.message(cat("validation data: ", vstats.summary()));
  }
  const std::string vocab_path = (fs::path(o.run_dir) / "vocab.model").string();
  Vocab vocab;
  if (!o.vocab.empty()) {
    vocab = Vocab::load(o.vocab);
    vocab.save(vocab_path);
  } else if (o.resume && fs::exists(vocab_path)) {
    vocab = Vocab::load(vocab_path);
  } else {
    std::vector<std::string> sentences;
    for (const auto& p : pairs) {
      sentences.push_back(p.source);
      sentences.push_back(p.target);
    }
    VocabOptions vo = o.vocab_options;
    vo.seed = o.seed;
    vocab = Vocab::train(sentences, vo);
    vocab.save(vocab_path);
    progress.message(cat("vocabulary: ", vocab.size(), " ", vo.model_type, " pieces, written to ", vocab_path));
  }
  std::vector<Example> examples;
  int64_t too_long = 0;
  for (const auto& p : pairs) {
    Example e{vocab.encode(p.source), vocab.encode(p.target)};
    if (static_cast<int64_t>(e.src.size()) > o.max_tokens || static_cast<int64_t>(e.tgt.size()) > o.max_tokens) {
      ++too_long;
      continue;
    }
    examples.push_back(std::move(e));
  }
  if (too_long) progress.message(cat("skipped ", too_long, " pairs longer than ", o.max_tokens, " tokens"));
  TFM_CHECK(!examples.empty(), "every training pair is longer than max_tokens ", o.max_tokens);
  ValidData valid;
  for (const auto& p : valid_pairs) {
    valid.examples.push_back({vocab.encode(p.source), vocab.encode(p.target)});
    valid.src.push_back(valid.examples.back().src);
    valid.references.push_back(p.target);
  }

  // Model, optimizer state, batches.
  const ModelConfig config = o.resolved_model(vocab.size());
  {
    nlohmann::json resolved = o;
    resolved["resolved_model"] = config;
    write_file_atomic((fs::path(o.run_dir) / "config.json").string(),
                      [&](std::ostream& out) { out << resolved.dump(2) << '\n'; });
  }
  Transformer model(config);
  model.init_parameters(o.seed);
  const Tensor& values = model.params().values();
  const Tensor m = Tensor::zeros(values.shape(), values.dtype()), v = Tensor::zeros(values.shape(), values.dtype());
  const std::vector<std::vector<int32_t>> batches = plan_batches(examples, o.batch_tokens);
  progress.message(cat("model: ", model.params().parameter_count(), " parameters; ", examples.size(), " pairs in ",
                       batches.size(), " batches of up to ", o.batch_tokens, " tokens"));
  if (o.bf16)
    progress.message(ops::bf16_native()
                         ? "bf16: weight products in bfloat16 with float32 sums"
                         : cat("bf16: weight products in bfloat16 with float32 sums, but this CPU (at its level, "
                               "TFM_CPU_ISA) has no bfloat16 instructions: ", ops::bf16_path(),
                               " (useful to check accuracy, not for speed)"));
  const MetricsLog metrics((fs::path(o.run_dir) / "metrics.jsonl").string());

  TrainState s;
  if (o.resume) {
    // The newest checkpoint that loads: one cut short (a full disk, a file copied in part) or
    // damaged (its checksum) is passed over, saying so, for the one before it.
    const std::vector<std::string> all = checkpoints(o.run_dir);
    TFM_CHECK(!all.empty(), "--resume: no checkpoint in '", o.run_dir, "'");
    std::string changed, path;
    bool verified = false;
    for (auto it = all.rbegin(); it != all.rend() && path.empty(); ++it) {
      try {
        s = resume_from(*it, o, model, m, v, vocab, &changed, &verified);
        path = *it;
      } catch (const Error& e) {
        TFM_CHECK(std::next(it) != all.rend(), "--resume: no checkpoint in '", o.run_dir, "' can be read; the oldest: ",
                  e.what());
        progress.message(cat("warning: cannot resume from ", *it, " (", e.what(), "); trying the one before it"));
      }
    }
    if (const int64_t torn = metrics.truncate_after(s.step))
      progress.message(cat("warning: dropped ", torn, " unreadable line", torn == 1 ? "" : "s", " of ", metrics.path(),
                           " (cut short by an interrupted write)"));
    progress.message(cat("resumed from ", path, " at step ", s.step, ", epoch ", s.epoch,
                         verified ? "" : " (unverified: the checkpoint records no checksum, model format version 1)"));
    if (!changed.empty())
      progress.message(cat("options changed since the checkpoint (the run continues with the new ones): ", changed));
  } else if (fs::exists(metrics.path())) {
    fs::remove(metrics.path());
  }
  Rng rng(o.seed);
  rng.restore(o.seed, s.rng_counter);

  g_interrupted = 0;
  auto old_int = std::signal(SIGINT, on_signal);
  auto old_term = std::signal(SIGTERM, on_signal);
  struct Restore {
    void (*i)(int), (*t)(int);
    ~Restore() {
      std::signal(SIGINT, i);
      std::signal(SIGTERM, t);
    }
  } restore{old_int, old_term};

  std::vector<int32_t> order = epoch_order(static_cast<int64_t>(batches.size()), o.seed, s.epoch);
  TrainResult result;
  double& interval_loss = s.interval_loss;
  int64_t& interval_tokens = s.interval_tokens;
  int64_t interval_src_tokens = 0, last_saved = s.step;
  auto interval_start = Clock::now();
  const double elapsed_before = s.elapsed_s;
  const int64_t first_step = s.step;
  auto elapsed = [&] { return elapsed_before + std::chrono::duration<double>(Clock::now() - start).count(); };
  auto kept = [&] {
    return last_saved > 0 ? cat("the last checkpoint, of step ", last_saved, ", is kept") : std::string("no checkpoint was saved yet");
  };
  // A record that cannot be written (a full disk) stops the run, after a checkpoint of this step
  // if the disk still takes one: the training so far is not lost, nor the metrics silently.
  auto log_metrics = [&](const nlohmann::json& record) {
    try {
      metrics.append(record);
    } catch (const Error& e) {
      std::string saved;
      try {
        s.elapsed_s = elapsed();
        save_checkpoint(model, o, s, m, v, vocab.fingerprint());
        saved = cat("; a checkpoint of step ", s.step, " was saved (continue with --resume once there is room)");
      } catch (const Error& e2) {
        saved = cat("; saving a checkpoint failed too (", e2.what(), "); ", kept());
      }
      throw Error(cat(e.what(), saved));
    }
  };

  while (true) {
    if (o.max_steps > 0 && s.step >= o.max_steps) { result.stop_reason = cat("reached max_steps ", o.max_steps); break; }
    if (o.max_epochs > 0 && s.epoch >= o.max_epochs) { result.stop_reason = cat("reached max_epochs ", o.max_epochs); break; }
    if (o.max_seconds > 0 && elapsed() >= o.max_seconds) { result.stop_reason = cat("reached max_seconds ", o.max_seconds); break; }
    if (g_interrupted) { result.stop_reason = "interrupted"; break; }

    // The step's batches: the next `accumulate` of this epoch's order (an epoch ends between steps).
    std::vector<Batch> step_batches;
    int64_t step_tokens = 0;
    for (int64_t k = 0; k < o.accumulate; ++k) {
      if (s.position >= static_cast<int64_t>(batches.size())) {
        if (k > 0) break;
        ++s.epoch;
        s.position = 0;
        order = epoch_order(static_cast<int64_t>(batches.size()), o.seed, s.epoch);
        if (o.max_epochs > 0 && s.epoch >= o.max_epochs) break;
      }
      step_batches.push_back(to_batch(examples, batches[order[s.position++]], config));
      step_tokens += step_batches.back().target_tokens;
      interval_src_tokens += step_batches.back().source_tokens;
    }
    if (step_batches.empty()) continue;  // the epoch limit is checked at the top

    // Forward and backward; the loss is the mean per target token over the whole step.
    model.params().zero_grad();
    Context ctx = model.context(&rng);
    ctx.products = o.bf16 ? ops::Precision::kBf16 : ops::Precision::kFloat32;
    double step_loss = 0;
    for (const Batch& batch : step_batches)
      step_loss += batch_loss(model, ctx, batch, o.label_smoothing, 1.0 / static_cast<double>(step_tokens), true).loss;
    // A non-finite loss or gradient stops the run before Adam spreads it into the weights, so that
    // nothing saved (checkpoints, model-best) ever holds it.
    result.last_loss = step_loss / static_cast<double>(step_tokens);
    const double norm = std::sqrt(ops::sum_squares(model.params().grads()));
    if (!std::isfinite(result.last_loss) || !std::isfinite(norm))
      throw Error(cat("the training ", std::isfinite(result.last_loss) ? "gradient norm" : "loss", " became ",
                      std::isfinite(result.last_loss) ? norm : result.last_loss, " at step ", s.step + 1,
                      "; stopped before updating the weights; ", kept(), " (try a lower lr_factor, or clip_norm)"));
    if (o.clip_norm > 0 && norm > o.clip_norm) ops::scale(model.params().grads(), o.clip_norm / norm, model.params().grads());
    ++s.step;
    const double lr = learning_rate(o, config.d_model, s.step);
    ops::adam_step(values, model.params().grads(), m, v, {lr, o.adam_beta1, o.adam_beta2, o.adam_eps, s.step});
    s.rng_counter = rng.counter();
    s.tokens_seen += step_tokens;
    interval_loss += step_loss;
    interval_tokens += step_tokens;

    // Progress and metrics.
    const double secs = std::chrono::duration<double>(Clock::now() - interval_start).count();
    const double tok_s = secs > 0 ? static_cast<double>(interval_tokens + interval_src_tokens) / secs : 0;
    const bool log_line = s.step % o.log_every == 0;
    std::string eta;  // from this process's own pace
    if (o.max_steps > 0)
      eta = " | ETA " + hms((elapsed() - elapsed_before) / static_cast<double>(s.step - first_step) *
                            static_cast<double>(o.max_steps - s.step));
    char line[256];
    std::snprintf(line, sizeof line, "step %lld | epoch %lld | %.0f tok/s | loss %.4f | lr %.3g | %s%s",
                  static_cast<long long>(s.step), static_cast<long long>(s.epoch), tok_s,
                  interval_loss / static_cast<double>(std::max<int64_t>(1, interval_tokens)), lr, hms(elapsed()).c_str(),
                  eta.c_str());
    progress.update(line, log_line);
    if (log_line) {
      log_metrics({{"step", s.step}, {"epoch", s.epoch}, {"loss", interval_loss / static_cast<double>(interval_tokens)},
                   {"lr", lr}, {"tokens_per_s", tok_s}, {"elapsed_s", elapsed()}});
      interval_loss = 0;
      interval_tokens = 0;
      interval_src_tokens = 0;
      interval_start = Clock::now();
    }

    // Validation, best model, early stopping.
    if (!valid.src.empty() && s.step % o.valid_every == 0) {
      const ValidResult r = validate(model, vocab, valid, o);
      const double score = o.best_metric == "bleu" ? r.bleu : -r.loss;
      const bool better = !s.has_best || score > s.best;
      if (better) {
        s.has_best = true;
        s.best = score;
        s.bad_validations = 0;
        save_model(model, (fs::path(o.run_dir) / "model-best.safetensors").string(),
                   {{kVocabFingerprintKey, vocab.fingerprint()}});
      } else {
        ++s.bad_validations;
      }
      log_metrics({{"step", s.step}, {"valid_loss", r.loss}, {"valid_ppl", r.ppl}, {"valid_bleu", r.bleu},
                   {"valid_exact", r.exact}});
      char vline[256];
      std::snprintf(vline, sizeof vline, "validation at step %lld: loss %.4f | ppl %.2f | BLEU %.2f | exact %.1f%%%s",
                    static_cast<long long>(s.step), r.loss, r.ppl, r.bleu, 100 * r.exact, better ? " (best)" : "");
      progress.message(vline);
      if (o.patience > 0 && s.bad_validations >= o.patience) {
        result.stop_reason = cat("no improvement in ", o.patience, " validations");
        s.elapsed_s = elapsed();
        save_checkpoint(model, o, s, m, v, vocab.fingerprint());
        last_saved = s.step;
        break;
      }
    }
    if (s.step % o.save_every == 0) {
      s.elapsed_s = elapsed();
      save_checkpoint(model, o, s, m, v, vocab.fingerprint());
      last_saved = s.step;
    }
  }
  s.elapsed_s = elapsed();
  if (last_saved != s.step) save_checkpoint(model, o, s, m, v, vocab.fingerprint());
  result.final_model = (fs::path(o.run_dir) / "model.safetensors").string();
  save_model(model, result.final_model, {{kVocabFingerprintKey, vocab.fingerprint()}});
  write_training_plot(metrics, (fs::path(o.run_dir) / "training.svg").string());
  result.steps = s.step;
  result.epochs = s.epoch;
  result.best_score = s.has_best ? s.best : 0;
  progress.message(cat("stopped at step ", s.step, ": ", result.stop_reason, "; model written to ", result.final_model));
  return result;
}

}  // namespace tfm
