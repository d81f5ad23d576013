// The server's routes: each endpoint's handler, the metrics of every request, and the answers to
// what matches no route (404, 405 with Allow, a request that is not valid HTTP), all as JSON.
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
                                  "/v1/models", "/v1/translate", "/v1/score"};

// The one method an endpoint takes: POST for the JSON work endpoints, GET for the rest.
const char* method_of(std::string_view endpoint) {
  return endpoint == "/v1/translate" || endpoint == "/v1/score" ? "POST" : "GET";
}

// A request's arrival, on its connection's thread; unset (0 latency) for requests httplib
// refuses before routing (malformed, or a URI too long).
thread_local Clock::time_point arrival{};

// Another method on a documented path: 405 naming the one allowed.
void not_allowed(const char* path, const httplib::Request& req, httplib::Response& res) {
  const bool post = std::string_view(method_of(path)) == "POST";
  res.status = 405;
  res.set_header("Allow", post ? "POST" : "GET");
  res.set_content(error_body(cat(req.method, " ", path, ": this endpoint takes ", post ? "POST with a JSON body" : "GET",
                                 " (see /openapi.json)")),
                  "application/json");
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
    const char* endpoint = "other";
    for (const char* e : kEndpoints)
      if (req.path == e) endpoint = e;
    const Clock::time_point now = Clock::now();
    metrics.request(endpoint, res.status,
                    arrival == Clock::time_point{} ? 0.0 : std::chrono::duration<double>(now - arrival).count());
    arrival = {};
  });
}

void Server::Impl::error_response(const httplib::Request& req, httplib::Response& res) const {
  std::string message;
  if (res.status == 404) message = cat("no such endpoint: ", req.method, " ", req.path, " (see /openapi.json)");
  else if (res.status == 413)
    message = cat("the request body is over the limit of ", options.max_body_bytes, " bytes (--max-body-bytes)");
  else if (res.status == 400 && !req.method.empty() &&
           !std::set<std::string>{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}.count(req.method)) {
    res.status = 405;  // a method the HTTP library does not parse (TRACE, QUERY, …): 405, not 400
    const bool known = std::find(std::begin(kEndpoints), std::end(kEndpoints), req.path) != std::end(kEndpoints);
    res.set_header("Allow", known ? method_of(req.path) : "GET, POST");
    message = cat("the method ", req.method, " is not one this server takes (see /openapi.json)");
    res.set_header("Connection", "close");  // its body, if any, was not read: the connection cannot go on
  } else if (res.status == 400) {
    message = "the request is not valid HTTP";
    res.set_header("Connection", "close");
  }
  else message = cat("HTTP status ", res.status);
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
  // The JSON endpoints read their bodies themselves (read_body): httplib 0.11 holds its limit
  // against the declared Content-Length only, and a chunked or gzip-compressed body grew without
  // one (100 MB chunked, or 1 MB of gzip expanding to 1 GB, were answered 200).
  http.Post("/v1/translate", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) answer(res, [&] { return translate(*full); }, &*full);
  });
  http.Post("/v1/score", [this](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
    if (const auto full = read_body(req, res, reader)) answer(res, [&] { return score(*full); }, &*full);
  });
  refuse_other_methods();
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

void Server::Impl::refuse_other_methods() {
  for (const char* path : kEndpoints) {
    auto refuse = [path](const httplib::Request& req, httplib::Response& res) { not_allowed(path, req, res); };
    if (std::string_view(method_of(path)) == "POST") http.Get(path, refuse);
    http.Options(path, refuse);
  }
  // Every other request that may carry a body (POST, PUT, PATCH, DELETE, on any path): its body is
  // read to the end and dropped, never held (httplib would read a chunked or compressed one into
  // memory whole: 200 MB of inflated gzip on POST /health did), then 405 or 404.
  auto elsewhere = [](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    read_all(req, reader, [](const char*, size_t) { return true; });
    const auto* known = std::find(std::begin(kEndpoints), std::end(kEndpoints), req.path);
    if (known != std::end(kEndpoints)) return not_allowed(*known, req, res);
    res.status = 404;
    res.set_content(error_body(cat("no such endpoint: ", req.method, " ", req.path, " (see /openapi.json)")),
                    "application/json");
  };
  http.Post(".*", elsewhere);
  http.Put(".*", elsewhere);
  http.Patch(".*", elsewhere);
  http.Delete(".*", elsewhere);
}

}  // namespace tfm::serve
