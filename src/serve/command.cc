// transformer serve -m MODEL [-m NAME=MODEL …]: the HTTP translation server (serve/server.h,
// docs/serve.md). SIGTERM or SIGINT stops accepting connections, answers the requests in flight,
// and exits with status 0.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
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
  bool int8 = false, packed = true, no_verify = false;
  int workers = 0, threads = 1;
  serve::ServerOptions server;
};

int run(Options& o) {
  serve::ServerOptions& s = o.server;
  for (const std::string& m : o.models) s.models.push_back(serve::parse_model_spec(m));
  if (!o.vocab.empty()) {
    TFM_CHECK(s.models.size() == 1, "--vocab applies to one model; with several, put each one's vocab.model beside it");
    s.models[0].vocab = o.vocab;
  }
  using W = transformer::TranslatorOptions::Weights;
  s.weights = o.int8 ? W::kInt8 : o.packed ? W::kPacked : W::kPlain;
  s.verify = !o.no_verify;
  TFM_CHECK(o.workers >= 0, "--workers must be >= 0 (0: one per core), got ", o.workers);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.batching.workers = o.workers > 0 ? o.workers : std::max(1, cores / std::max(1, o.threads));
  s.threads_per_worker = o.threads;
  if (!o.api_key_file.empty()) s.api_key = serve::read_api_key(o.api_key_file);
  s.validate();
  serve::Server server(s);
  for (const std::string& line : server.load_messages()) std::fprintf(stderr, "%s\n", line.c_str());
  const int port = server.bind();
  // SIGTERM and SIGINT write their number into a pipe (all a handler may safely do); a thread
  // reading it stops the server, whose listen() then returns once the requests in flight are answered.
  TFM_CHECK(pipe(g_signal_pipe) == 0, "serve: cannot create a pipe for the signals");
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::thread waiter([&] {
    unsigned char signal = 0;
    while (read(g_signal_pipe[0], &signal, 1) < 0 && errno == EINTR) {
    }
    if (signal == 0) return;  // the pipe was closed: the server ended on its own
    std::fprintf(stderr, "serve: %s: finishing the requests in flight, then exiting\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
  });
  std::string names;
  for (const auto& m : s.models) names += (names.empty() ? "" : ", ") + m.name;
  std::fprintf(stderr, "serving %s on http://%s:%d/ (%d workers of %d threads; POST /v1/translate, GET /openapi.json)\n",
               names.c_str(), s.host.c_str(), port, s.batching.workers, s.threads_per_worker);
  server.listen();
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  close(g_signal_pipe[1]);  // ends the waiter if no signal came
  waiter.join();
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
  cmd->add_option("--vocab", o->vocab, "the SentencePiece model (default: vocab.model beside the model; one model only)");
  cmd->add_flag("--no-verify", o->no_verify, "skip the model files' checksums when loading");
  cmd->add_option("--host", s.host, "address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0: any free port)")->capture_default_str();
  cmd->add_flag("--int8", o->int8, "int8 weight products (faster, slightly less exact)");
  cmd->add_flag("--packed-weights,!--no-packed-weights", o->packed, "float32 weights packed for decoding (default)");
  cmd->add_option("--workers", o->workers,
                  "batches decoded at the same time, each by one worker (0: cores / --threads)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads of each worker")->capture_default_str();
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
  cmd->add_option("--max-body-bytes", s.max_body_bytes, "largest request body (413 above)")->capture_default_str();
  cmd->add_option("--max-sentences", s.max_sentences, "most texts in one request (400 above)")->capture_default_str();
  cmd->add_option("--max-text-length", s.max_text_length, "longest text, in characters (400 above)")->capture_default_str();
  cmd->add_option("--max-beam", s.max_beam, "largest beam (and n_best) a request may ask for")->capture_default_str();
  cmd->add_option("--max-input-tokens", s.max_input_tokens, "longer texts are truncated (\"truncated\": true)")
      ->capture_default_str();
  cmd->add_option("--api-key-file", o->api_key_file,
                  "a file whose first line is the API key that /v1/* and /metrics then require "
                  "('Authorization: Bearer KEY' or 'X-API-Key: KEY')");
  return [cmd, o] { return *cmd ? run(*o) : -1; };
}

}  // namespace

static const Command kCommand(45, add_serve);

}  // namespace tfm::cli
