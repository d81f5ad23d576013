// The server's life: loading the models, setting up the HTTP server (threads, limits, socket
// options, the OpenAPI document with this server's limits), binding, serving and stopping.
#include "serve/server.h"

#include <sys/socket.h>

#include <algorithm>

#include "core/error.h"
#include "serve/assets.h"
#include "serve/server_impl.h"

namespace tfm::serve {

using json = nlohmann::json;

namespace {

// The OpenAPI document, stating this server's own limits and the program's version (the API's
// version is the program's: the document describes what this build serves).
std::string openapi_document(const ServerOptions& options) {
  json doc = json::parse(kOpenApiJson);
  doc["info"]["version"] = TFM_VERSION;
  json& schemas = doc["components"]["schemas"];
  for (const char* field : {"beam", "n_best"})
    schemas["TranslateRequest"]["properties"][field]["maximum"] = options.max_beam;
  json& texts = schemas["Texts"]["oneOf"];
  for (json* text : {&texts[0], &texts[1]["items"]}) (*text)["maxLength"] = options.max_text_length;
  texts[1]["maxItems"] = options.max_sentences;
  // Generation: the prompts' and options' limits.
  json& prompts = schemas["Prompts"]["oneOf"];
  for (json* prompt : {&prompts[0], &prompts[1]["items"]}) (*prompt)["maxLength"] = options.max_text_length;
  prompts[1]["maxItems"] = options.max_sentences;
  json& generate = schemas["GenerateRequest"]["properties"];
  for (const char* field : {"beam_size", "n_best"}) generate[field]["maximum"] = options.max_beam;
  for (const char* field : {"max_new_tokens", "min_new_tokens"}) generate[field]["maximum"] = options.max_input_tokens;
  return doc.dump(1) + "\n";
}

}  // namespace

Server::Impl::Impl(const ServerOptions& o)
    : options(o), models(o),
      // A client that sends a whole body before reading the answer (httplib's, say) sees a refusal
      // only if the server reads that body: up to 1 MiB or two bodies' limit is read and dropped
      // (for at most a second), then the connection is closed.
      http(HeadLimits{static_cast<size_t>(o.max_headers), static_cast<size_t>(o.max_header_bytes)},
           static_cast<size_t>(std::max<int64_t>(1 << 20, 2 * o.max_body_bytes)),
           [this](const RequestHead& head) { return gate(head); },
           [this](const RequestHead* head, int status) { log_refusal(head, status); }),
      openapi(openapi_document(o)) {
  batcher = std::make_unique<Batcher>(options.batching, [this](const BatchReport& r) {
    metrics.batch(r.sentences, r.tokens, r.seconds);
  });
  const int http_threads = options.http_threads;
  http.new_task_queue = [http_threads] { return new httplib::ThreadPool(static_cast<size_t>(http_threads)); };
  http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  // The listening socket, to widen its backlog once bound: Debian's cpp-httplib listens with a
  // backlog of 5, and more clients connecting at once had their connections dropped and retried
  // after a second, some failing (seen with 64 clients of scripts/serve_load.sh).
  http.set_socket_options([this](socket_t sock) {
    // SO_REUSEADDR (a restarted server binds at once), not httplib's default SO_REUSEPORT, with
    // which a second server on the same port started and shared the connections.
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket = sock;
  });
  http.set_tcp_nodelay(true);  // headers and body go in separate writes: no Nagle delay between them
  // A connection is closed after 100 requests, so that connections waiting for a thread get one.
  http.set_keep_alive_max_count(100);
  http.set_keep_alive_timeout(2);
  http.set_read_timeout(10);
  http.set_write_timeout(10);
  routes();
}

Server::Server(const ServerOptions& options) {
  options.validate();
  impl_ = std::make_unique<Impl>(options);
}

Server::~Server() {
  stop();
  impl_->batcher->stop();
}

std::vector<std::string> Server::load_messages() const { return impl_->models.load_messages(); }

int Server::bind() {
  Impl& s = *impl_;
  const int port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                                        : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  TFM_CHECK(port > 0, "cannot listen on ", s.options.host, ":", s.options.port,
            " (the port is in use, or the host is not an address of this machine)");
  s.port = port;
  if (s.listen_socket != INVALID_SOCKET) ::listen(s.listen_socket, SOMAXCONN);  // Linux: a new backlog
  return port;
}

void Server::listen() {
  // listen_after_bind returns after stop(), once the connections' threads are done; a stop() that
  // came before it started shut the socket down, so that it returns at once.
  if (!impl_->stopping) impl_->http.listen_after_bind();
  impl_->stopping = true;  // the socket is closed now: a later stop() must not touch its number
  impl_->batcher->stop();
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  // The socket is still open here (httplib closes it in its stop()). Shut down, it wakes and ends a
  // listen_after_bind that is running or about to start, which httplib's stop() alone does not do
  // before that has begun.
  if (s.listen_socket != INVALID_SOCKET) ::shutdown(s.listen_socket, SHUT_RDWR);
  s.http.stop();
}

}  // namespace tfm::serve
