#pragma once
// `transformer serve`: an HTTP translation server over the library API (docs/serve.md).
//
//   POST /v1/translate  {"text": ["…", …], "model": "en-de", "beam": 4, "n_best": 1, "scores": true,
//                        "attention": false, "length_penalty": 0.6}
//   POST /v1/score      {"source": ["…"], "target": ["…"], "model": "en-de"}
//   GET  /v1/models, /health, /metrics (Prometheus text), /openapi.json, / (the web page)
//
// Each request's sentences are encoded on its connection's thread and queued in one Batcher
// (serve/batcher.h); the batcher's workers decode batches of sentences of many requests with the
// same model and options, and each request waits for its own results. Every error is a JSON body
// {"error": "…"} with a 4xx or 5xx status naming the problem and the value.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/batcher.h"
#include "transformer/translator.h"

namespace tfm::serve {

struct ModelSpec {
  std::string name;  // the request's "model"
  std::string path;  // the model file; its vocabulary is vocab.model beside it unless `vocab`
  std::string vocab;
};

// Parses -m's value: NAME=PATH, or PATH (named after the file, without its extension).
ModelSpec parse_model_spec(const std::string& text);

struct ServerOptions {
  std::vector<ModelSpec> models;  // at least one; names unique
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (bind() returns it)
  BatcherOptions batching;
  int threads_per_worker = 1;  // each worker's threads (workers × threads ≈ cores)
  transformer::TranslatorOptions::Weights weights = transformer::TranslatorOptions::Weights::kPacked;
  bool verify = true;                    // verify the model files' checksums when loading
  // Connections served at once: each holds a thread while open, and further ones wait for one.
  // Threads are cheap (their stacks are mostly untouched); too few starved clients beyond them for
  // the whole of a 60 s overload test (scripts/serve_load.sh, 256 clients with 128 threads).
  int http_threads = 512;
  int64_t max_body_bytes = 1 << 20;      // a larger request body: 413
  int64_t max_sentences = 256;           // per request
  int64_t max_text_length = 4096;        // characters (Unicode code points) per text
  int64_t max_beam = 16;                 // the largest beam (and n_best) a request may ask for
  // A request asking for attention is refused when its weights could number more than this (each
  // is about 8 bytes of JSON): texts × n_best × layers × heads × source tokens × most output tokens.
  int64_t max_attention_values = 4'000'000;
  int64_t max_input_tokens = 1024;       // longer sentences are truncated ("truncated": true)
  std::string api_key;                   // "": none; else /v1/* and /metrics need it
  double retry_after_seconds = 1;        // Retry-After of a 503 for a full queue

  // Throws Error naming the first option out of range (with its flag's name).
  void validate() const;
};

// Reads --api-key-file: the key is the file's first line, trimmed; an empty key is an error.
std::string read_api_key(const std::string& path);

class Server {
 public:
  // Loads every model (errors name the model's file).
  explicit Server(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The loaders' notes and warnings, one line each ("note: model 'x': …").
  std::vector<std::string> load_messages() const;

  // Binds the listening socket; returns the port (the one chosen when options.port is 0).
  int bind();
  // Serves until stop(); then finishes the requests in flight and returns.
  void listen();
  // From any thread (or the signal-waiting thread): stops accepting connections; listen() returns
  // once the requests in flight are answered.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfm::serve
