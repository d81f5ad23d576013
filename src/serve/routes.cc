// The server's routes: the gate every request head passes before its body is read (404, 405 with
// Allow, 401, 413 for a declared length), each endpoint's handler, the metrics of every request,
// and the answers to errors httplib finds itself, all as JSON.
#include <algorithm>
#include <chrono>
#include <set>
#include <string_view>

#include "core/error.h"
#include "serve/assets.h"
#include "serve/http_error.h"
#include "serve/server_impl.h"

namespace tfm::serve {

namespace {

using Clock = std::chrono::steady_clock;

const char* const kEndpoints[] = {"/",       "/health",       "/metrics",   "/openapi.json",
                                  "/v1/models", "/v1/translate", "/v1/score", "/v1/embed",
                                  "/v1/generate"};

// The one method an endpoint takes: POST for the JSON work endpoints, GET for the rest.
const char* method_of(std::string_view endpoint) {
  return endpoint == "/v1/translate" || endpoint == "/v1/score" || endpoint == "/v1/embed" ||
                 endpoint == "/v1/generate"
             ? "POST"
             : "GET";
}

// A request's arrival, on its connection's thread; unset (0 latency) for requests httplib
// refuses before routing.
thread_local Clock::time_point arrival{};

// The label of a request's path in the metrics: its endpoint, or "other".
const char* endpoint_label(std::string_view path) {
  for (const char* e : kEndpoints)
    if (path == e) return e;
  return "other";
}

// Another method on a documented path: 405 naming the one allowed.
Refusal not_allowed(const char* path, const std::string& method) {
  const bool post = std::string_view(method_of(path)) == "POST";
  return Refusal{405,
                 cat(method, " ", path, ": this endpoint takes ", post ? "POST with a JSON body" : "GET",
                     " (see /openapi.json)"),
                 {{"Allow", post ? "POST" : "GET"}}};
}

}  // namespace

void Server::Impl::routes() {
  log_requests();
  handle_errors();
  route_endpoints();
}

void Server::Impl::log_requests() {
  http.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    arrival = Clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const Clock::time_point now = Clock::now();
    metrics.request(endpoint_label(req.path), res.status,
                    arrival == Clock::time_point{} ? 0.0 : std::chrono::duration<double>(now - arrival).count());
    arrival = {};
  });
}

void Server::Impl::log_refusal(const RequestHead* head, int status) {
  metrics.request(head ? endpoint_label(head->path) : "other", status, 0.0);
}

std::optional<Refusal> Server::Impl::gate(const RequestHead& head) const {
  static const std::set<std::string> kMethods{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
  const auto* endpoint = std::find(std::begin(kEndpoints), std::end(kEndpoints), head.path);
  const bool known = endpoint != std::end(kEndpoints);
  if (!kMethods.count(head.method))
    return Refusal{405, cat("the method ", head.method, " is not one this server takes (see /openapi.json)"),
                   {{"Allow", known ? method_of(head.path) : "GET, POST"}}};
  if (!known) return Refusal{404, cat("no such endpoint: ", head.method, " ", head.path, " (see /openapi.json)"), {}};
  const bool post = std::string_view(method_of(*endpoint)) == "POST";
  if (post ? head.method != "POST" : head.method != "GET" && head.method != "HEAD")
    return not_allowed(*endpoint, head.method);
  httplib::Request keyed;
  keyed.headers = head.headers;
  if ((head.path.rfind("/v1/", 0) == 0 || head.path == "/metrics") && !authorized(keyed))
    return Refusal{401, kNoKey, {{"WWW-Authenticate", "Bearer"}}};
  if (!post && head.has_body()) return Refusal{400, cat("a ", head.method, " request has no body"), {}};
  if (head.content_length && *head.content_length > static_cast<uint64_t>(options.max_body_bytes))
    return Refusal{413, cat("the request body is over the limit of ", options.max_body_bytes,
                            " bytes (--max-body-bytes): Content-Length ", *head.content_length), {}};
  return std::nullopt;
}

void Server::Impl::error_response(const httplib::Request& req, httplib::Response& res) const {
  std::string message;
  if (res.status == 404) message = cat("no such endpoint: ", req.method, " ", req.path, " (see /openapi.json)");
  else if (res.status == 413)
    message = cat("the request body is over the limit of ", options.max_body_bytes, " bytes (--max-body-bytes)");
  else if (res.status == 400) message = "the request is not valid HTTP";
  else message = cat("HTTP status ", res.status);
  if (res.status == 400 || res.status == 413) close_after_response(res);  // a body may be left unread
  res.set_content(error_body(message), "application/json");
}

void Server::Impl::handle_errors() {
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    error_response(req, res);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content(error_body("internal error"), "application/json");
  });
}

void Server::Impl::route_endpoints() {
  // Every request reaching a handler has passed the gate (route, method, API key, declared length).
  // The JSON endpoints read their bodies themselves (read_body), up to --max-body-bytes as read and
  // decompressed: httplib 0.11 holds its limit against the declared Content-Length only.
  http.Post("/v1/translate", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) answer(res, [&] { return translate(*full); }, &*full);
  });
  http.Post("/v1/score", [this](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) answer(res, [&] { return score(*full); }, &*full);
  });
  http.Post("/v1/embed", [this](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) answer(res, [&] { return embed(*full); }, &*full);
  });
  // Generation: continued prompts, as JSON or server-sent events.
  http.Post("/v1/generate", [this](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) generate(*full, res);
  });
  http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { return list_models(); }, &req);
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    answer(res, [&] { return health(); });
  });
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) return unauthorized(res);
    res.set_content(metrics.render(batcher->queued(), options.batching.max_queue_sentences),
                    "text/plain; version=0.0.4");
  });
  http.Get("/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(openapi, "application/json");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(kIndexHtml), "text/html; charset=utf-8");
  });
}

}  // namespace tfm::serve
