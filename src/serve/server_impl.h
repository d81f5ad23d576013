#pragma once
// The server's state, shared by its parts: the options, models, metrics, batcher and HTTP server,
// with the handlers of the routes (handlers.cc), the answering of JSON endpoints (answer.cc) and
// the route table (routes.cc).
#include <httplib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/batcher.h"
#include "serve/guarded_server.h"
#include "serve/metrics.h"
#include "serve/models.h"
#include "serve/server.h"

namespace tfm::serve {

// The message of a 401.
inline constexpr const char* kNoKey =
    "this server needs an API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'";

struct Server::Impl {
  // Loads the models and sets up the HTTP server; `options` are valid.
  explicit Impl(const ServerOptions& options);

  ServerOptions options;
  Models models;
  Metrics metrics;
  std::unique_ptr<Batcher> batcher;
  GuardedServer http;
  std::string openapi;  // the OpenAPI document with this server's limits
  int port = -1;
  socket_t listen_socket = INVALID_SOCKET;
  std::atomic<bool> stopping{false};

  // The JSON endpoints' work (handlers.cc), each the body of a 200; errors are thrown as HttpError.
  nlohmann::json translate(const httplib::Request& req);
  nlohmann::json score(const httplib::Request& req);
  nlohmann::json embed(const httplib::Request& req);
  nlohmann::json list_models() const;
  nlohmann::json health() const;
  // Queues a job and waits for it; a full queue is a 503.
  void submit(const std::shared_ptr<Job>& job);
  // Generation (generate.cc): POST /v1/generate, answered as JSON or, with "stream", as
  // server-sent events; its job queued without waiting for it (a full queue is a 503).
  void generate(const httplib::Request& req, httplib::Response& res);
  void enqueue(const std::shared_ptr<Job>& job);

  // The answering of JSON endpoints (answer.cc): the result or the error as JSON; the body read
  // whole up to --max-body-bytes (nullopt: the error is answered); the API key.
  void answer(httplib::Response& res, const std::function<nlohmann::json()>& body,
              const httplib::Request* req = nullptr);
  // Runs `work`; an error becomes its status and JSON body (false).
  bool guarded(httplib::Response& res, const std::function<void()>& work);
  std::optional<httplib::Request> read_body(const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) const;
  void unauthorized(httplib::Response& res) const;
  bool authorized(const httplib::Request& req) const;

  // The routes (routes.cc): the metrics of each request, the errors httplib answers, the
  // endpoints; and the gate of each request head before its body is read (the 404s and 405s of
  // other paths and methods, the API key, a declared length over the limit), with its metrics.
  void routes();
  void log_requests();
  void handle_errors();
  void route_endpoints();
  std::optional<Refusal> gate(const RequestHead& head) const;
  void log_refusal(const RequestHead* head, int status);
  // The body of an error httplib answered by itself (404, 413, bad HTTP).
  void error_response(const httplib::Request& req, httplib::Response& res) const;
};

}  // namespace tfm::serve
