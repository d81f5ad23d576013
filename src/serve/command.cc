// transformer serve -m MODEL [-m NAME=MODEL …]: the HTTP translation server (serve/server.h,
// docs/serve.md). SIGTERM or SIGINT stops accepting connections, answers the requests in flight,
// and exits with status 0.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "core/error.h"
#include "core/threads.h"
#include "serve/server.h"

namespace tfm::cli {

namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

struct Options {
  std::vector<std::string> models;
  std::string vocab, api_key_file;
  bool int8 = false, bf16 = false, packed = true, no_verify = false;
  int workers = 0;
  int drain_seconds = 30;
  serve::ServerOptions server;
};

// The flags read into the server's options, checked.
const serve::ServerOptions& server_options(Options& o) {
  serve::ServerOptions& s = o.server;
  for (const std::string& m : o.models) s.models.push_back(serve::parse_model_spec(m));
  if (!o.vocab.empty()) {
    TFM_CHECK(s.models.size() == 1, "--vocab applies to one model; with several, put each one's vocabulary beside it");
    s.models[0].vocab = o.vocab;
  }
  TFM_CHECK(o.packed || (!o.int8 && !o.bf16), "--no-packed-weights is about float32 weights; ",
            o.int8 ? "--int8" : "--bf16", " holds its own (leave out one of the two)");
  using W = transformer::TranslatorOptions::Weights;
  s.weights = o.int8 ? W::kInt8 : o.bf16 ? W::kBf16 : o.packed ? W::kPacked : W::kPlain;
  s.verify = !o.no_verify;
  TFM_CHECK(o.workers >= 0, "--workers must be >= 0 (0: one per core), got ", o.workers);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.batching.workers = o.workers > 0 ? o.workers : std::max(1, cores / std::max(1, s.threads_per_worker));
  if (!o.api_key_file.empty()) s.api_key = serve::read_api_key(o.api_key_file);
  s.validate();
  return s;
}

// SIGTERM and SIGINT write their number into a pipe (all a handler may safely do), from before
// the models load; a thread reading it stops the server, whose listen() then returns once the
// requests in flight are answered. A signal while loading ends the command once loading is done;
// a second signal, or connections still open drain_seconds after the first, end it at once.
class SignalStop {
 public:
  explicit SignalStop(int drain_seconds) : drain_seconds_(drain_seconds) {
    TFM_CHECK(pipe(g_signal_pipe) == 0, "serve: cannot create a pipe for the signals");
    struct sigaction action = {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    waiter_ = std::thread([this] { wait_for_signals(); });
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;

  // The server a signal stops from now on (at once when one already came).
  void attach(serve::Server& server) {
    std::lock_guard lock(mutex_);
    serving_ = &server;
    if (stop_requested_) server.stop();  // listen() then returns at once
  }

  // Gives the signals their default action back and ends the thread waiting for them.
  void end() {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    close(g_signal_pipe[1]);  // ends the waiter if no signal came
    waiter_.join();
  }

 private:
  void wait_for_signals() {
    for (int signals = 0;; ++signals) {
      unsigned char signal = 0;
      ssize_t n;
      while ((n = read(g_signal_pipe[0], &signal, 1)) < 0 && errno == EINTR) {
      }
      if (n <= 0) return;  // the pipe was closed: the server ended
      const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
      if (signals > 0) {
        std::fprintf(stderr, "serve: a second %s: exiting now\n", name);
        std::_Exit(128 + signal);
      }
      std::fprintf(stderr, "serve: %s: finishing the requests in flight (at most %d s), then exiting\n", name,
                   drain_seconds_);
      std::lock_guard lock(mutex_);
      stop_requested_ = true;
      if (serving_) serving_->stop();
      std::thread([seconds = drain_seconds_] {
        std::this_thread::sleep_for(std::chrono::seconds(seconds));
        std::fprintf(stderr, "serve: connections still open %d s after the signal (slow or idle clients): exiting\n",
                     seconds);
        std::_Exit(1);
      }).detach();
    }
  }

  const int drain_seconds_;
  std::mutex mutex_;
  serve::Server* serving_ = nullptr;  // under mutex_
  bool stop_requested_ = false;       // under mutex_
  std::thread waiter_;
};

int run(Options& o) {
  const serve::ServerOptions& s = server_options(o);
  SignalStop signals(o.drain_seconds);
  std::unique_ptr<serve::Server> server;
  int port = 0;
  try {
    server = std::make_unique<serve::Server>(s);
    for (const std::string& line : server->load_messages()) std::fprintf(stderr, "%s\n", line.c_str());
    port = server->bind();
  } catch (...) {
    signals.end();
    throw;
  }
  signals.attach(*server);
  std::string names;
  for (const auto& m : s.models) names += (names.empty() ? "" : ", ") + m.name;
  const int workers = s.batching.workers, threads = s.threads_per_worker;
  std::fprintf(stderr, "serving %s on http://%s:%d/ (%d worker%s of %d thread%s; POST /v1/translate, GET /openapi.json)\n",
               names.c_str(), s.host.c_str(), port, workers, workers == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
  server->listen();
  signals.end();
  std::fprintf(stderr, "serve: stopped\n");
  return 0;
}

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<Options>();
  serve::ServerOptions& s = o->server;
  CLI::App* cmd = app.add_subcommand("serve", "serve translations over HTTP (JSON API, metrics, a web page at /)");
  cmd->add_option("-m,--model", o->models,
                  "a model file to serve, as PATH or NAME=PATH (repeat for several; requests pick one by name, "
                  "the file's stem by default)")
      ->required();
  cmd->add_option("--vocab", o->vocab, "the vocabulary (default: vocab.model, else vocabulary.json, beside the model; one model only)");
  cmd->add_flag("--no-verify", o->no_verify, "skip the model files' checksums when loading");
  cmd->add_option("--host", s.host, "address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0: any free port)")->capture_default_str();
  auto* int8 = cmd->add_flag("--int8", o->int8, "int8 weight products (faster, slightly less exact)");
  cmd->add_flag("--bf16", o->bf16,
                "bfloat16 products, as translate --bf16 (on a CPU faster than the float32 default with AVX-512 "
                "BF16, slower without)")
      ->excludes(int8);
  cmd->add_flag("--packed-weights,!--no-packed-weights", o->packed, "float32 weights packed for decoding (default)");
  cmd->add_option("--workers", o->workers,
                  "batches decoded at the same time, each by one worker (0: cores / --threads)")
      ->capture_default_str();
  cmd->add_option("--threads", s.threads_per_worker, "threads of each worker")->capture_default_str();
  cmd->add_option("--max-batch-tokens", s.batching.max_batch_tokens,
                  "source tokens per batch: a batch goes as soon as it has this many")
      ->capture_default_str();
  cmd->add_option("--max-batch-sentences", s.batching.max_batch_sentences, "sentences per batch")
      ->capture_default_str();
  cmd->add_option("--max-wait-ms", s.batching.max_wait_ms,
                  "how long a sentence waits for its batch to fill before it goes anyway (milliseconds)")
      ->capture_default_str();
  cmd->add_option("--queue-size", s.batching.max_queue_sentences,
                  "sentences waiting for a batch; a request that does not fit gets 503 with Retry-After")
      ->capture_default_str();
  cmd->add_option("--http-threads", s.http_threads, "connections served at once")->capture_default_str();
  cmd->add_option("--max-body-bytes", s.max_body_bytes,
                  "largest request body, as read and decompressed (413 above)")->capture_default_str();
  cmd->add_option("--max-headers", s.max_headers, "most header fields in a request (431 above)")->capture_default_str();
  cmd->add_option("--max-header-bytes", s.max_header_bytes, "largest request head: request line and headers (431 above)")
      ->capture_default_str();
  cmd->add_option("--max-sentences", s.max_sentences, "most texts in one request (400 above)")->capture_default_str();
  cmd->add_option("--max-text-length", s.max_text_length, "longest text, in characters (400 above)")->capture_default_str();
  cmd->add_option("--max-beam", s.max_beam, "largest beam (and n_best) a request may ask for")->capture_default_str();
  cmd->add_option("--max-input-tokens", s.max_input_tokens, "longer texts are truncated (\"truncated\": true)")
      ->capture_default_str();
  cmd->add_option("--max-attention-values", s.max_attention_values,
                  "refuse (400) a request for attention whose weights could number more than this (texts x n_best x "
                  "layers x heads x source x output tokens)")
      ->capture_default_str();
  cmd->add_option("--drain-seconds", o->drain_seconds,
                  "after SIGTERM or SIGINT, how long requests in flight may take before the server exits anyway")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  cmd->add_option("--api-key-file", o->api_key_file,
                  "a file whose first line is the API key that /v1/* and /metrics then require "
                  "('Authorization: Bearer KEY' or 'X-API-Key: KEY')");
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(45, add_serve);

}  // namespace tfm::cli
