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
#include <memory>
#include <string>
#include <vector>

#include "serve/options.h"

namespace tfm::serve {

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
