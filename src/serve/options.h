#pragma once
// The server's options (`transformer serve`'s flags): the models to serve, where to listen, the
// batching, and the limits a request must keep to; with their checks.
#include <cstdint>
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
  int64_t max_headers = 100;             // header fields per request: more is 431
  int64_t max_header_bytes = 32 * 1024;  // a request's head (request line and headers): more is 431
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

}  // namespace tfm::serve
