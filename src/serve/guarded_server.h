#pragma once
// The HTTP library's server with the connection loop taken over: each request's head is read and
// checked on the socket (request_head.h) and put to a gate (route, method, API key, declared
// length) before the library parses it or reads a byte of its body; refusals are answered here.
// One buffer per connection keeps pipelined requests, answered in order.
#include <httplib.h>

#include <functional>
#include <optional>

#include "serve/request_head.h"

namespace tfm::serve {

class Connection;

class GuardedServer : public httplib::Server {
 public:
  // Decides on a well-formed head before its body is read: a refusal, or nullopt to serve it.
  using Gate = std::function<std::optional<Refusal>(const RequestHead&)>;
  // Told of every refusal (nullptr: the head was malformed), for the metrics.
  using RefusalLog = std::function<void(const RequestHead*, int status)>;

  GuardedServer(const HeadLimits& limits, size_t linger_bytes, Gate gate, RefusalLog log);

 protected:
  bool process_and_close_socket(socket_t sock) override;

 private:
  enum class Step { kServe, kRefused, kEnd };
  // Waits for the connection's next request (buffered or arriving) for the keep-alive timeout, or
  // until the server stops.
  bool await_request(Connection& conn) const;
  // Reads the next request's head and puts it to the gate; kRefused when it was answered here and
  // the connection may go on, kEnd when the connection must end (`linger`: after an answer).
  Step next_request(Connection& conn, bool& linger);
  // Writes a refusal (with Connection: close unless `keep_alive`).
  void refuse(Connection& conn, const RequestHead* head, const Refusal& refusal, bool keep_alive) const;

  HeadLimits limits_;
  size_t linger_bytes_;
  Gate gate_;
  RefusalLog log_;
};

// From a handler on the connection's thread: the connection ends once this answer is written,
// since the request's body was not read to its end (over the limit, or unreadable).
void close_after_response(httplib::Response& res);

}  // namespace tfm::serve
