// The connection loop of the server: each request's head checked and gated before the HTTP library
// sees it, refusals answered without reading a body, and one buffer per connection so that
// pipelined requests are each answered, in order. The library (Debian's cpp-httplib 0.11) bounds
// neither the header count nor a compressed body before its handlers run, and made a new stream,
// losing what it had read ahead, for each request.
#include "serve/guarded_server.h"

#include <strings.h>

#include <chrono>

#include "core/error.h"
#include "serve/connection.h"
#include "serve/http_error.h"

namespace tfm::serve {

namespace {

// Set by close_after_response on the connection's thread, for its loop.
thread_local bool close_requested = false;

int milliseconds(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

// The methods whose requests the library reads a body of (it reads one without a declared length
// to the end of the connection).
bool takes_body(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

}  // namespace

void close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  close_requested = true;
}

GuardedServer::GuardedServer(const HeadLimits& limits, size_t linger_bytes, Gate gate, RefusalLog log)
    : limits_(limits), linger_bytes_(linger_bytes), gate_(std::move(gate)), log_(std::move(log)) {}

bool GuardedServer::await_request(Connection& conn) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  while (conn.buffered().empty()) {
    if (svr_sock_ == INVALID_SOCKET || std::chrono::steady_clock::now() >= until) return false;
    if (!conn.wait(50)) continue;                      // short waits, to see the server stop
    if (conn.receive(16384, 0) <= 0) return false;     // the client closed the connection
  }
  return true;
}

void GuardedServer::refuse(Connection& conn, const RequestHead* head, const Refusal& refusal, bool keep_alive) const {
  const std::string body = error_body(refusal.message);
  std::string out = cat("HTTP/1.1 ", refusal.status, " ", reason(refusal.status), "\r\n");
  for (const auto& [name, value] : refusal.headers) out += cat(name, ": ", value, "\r\n");
  out += cat("Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n",
             keep_alive ? "" : "Connection: close\r\n", "\r\n");
  if (!head || head->method != "HEAD") out += body;
  conn.write_all(out);
  if (log_) log_(head, refusal.status);
}

GuardedServer::Step GuardedServer::next_request(Connection& conn, bool& linger) {
  // Empty lines before a request line are ignored (RFC 9112, 2.2), a few of them.
  for (int i = 0; i < 4 && conn.buffered().substr(0, 2) == "\r\n"; ++i) conn.consume(2);
  HeadScanner scanner(limits_);
  const int read_ms = milliseconds(read_timeout_sec_, read_timeout_usec_);
  size_t size = 0;
  while (size == 0) {
    auto scanned = scanner.scan(conn.buffered());
    if (const Refusal* r = std::get_if<Refusal>(&scanned)) {
      refuse(conn, nullptr, *r, false);
      return linger = true, Step::kEnd;
    }
    size = std::get<size_t>(scanned);
    if (size == 0 && conn.receive(16384, read_ms) <= 0) return Step::kEnd;  // gone, or too slow
  }
  auto parsed = parse_head(conn.buffered().substr(0, size), limits_);
  if (const Refusal* r = std::get_if<Refusal>(&parsed)) {
    refuse(conn, nullptr, *r, false);
    return linger = true, Step::kEnd;
  }
  const RequestHead& head = std::get<RequestHead>(parsed);
  if (const std::optional<Refusal> r = gate_(head)) {
    // The body is never read: the connection goes on only when there is none.
    const auto connection = head.headers.find("Connection");
    const bool keep_alive = !head.has_body() && head.version == "HTTP/1.1" &&
                            (connection == head.headers.end() || strcasecmp(connection->second.c_str(), "close") != 0);
    refuse(conn, &head, *r, keep_alive);
    if (keep_alive) return conn.consume(size), Step::kRefused;
    return linger = true, Step::kEnd;
  }
  // Without a declared length the library would read the body to the end of the connection,
  // taking the next pipelined request for it: such a request has none (RFC 9112, 6.3).
  if (takes_body(head.method) && !head.content_length && !head.chunked) conn.insert(size - 2, "Content-Length: 0\r\n");
  return Step::kServe;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  Connection conn(sock, milliseconds(read_timeout_sec_, read_timeout_usec_),
                  milliseconds(write_timeout_sec_, write_timeout_usec_));
  bool linger = false;
  for (size_t left = keep_alive_max_count_; left > 0 && !linger; --left) {
    if (!await_request(conn)) break;
    const Step step = next_request(conn, linger);
    if (step == Step::kEnd) break;
    if (step == Step::kRefused) continue;
    bool closed = false;
    close_requested = false;
    const bool last = left == 1 || svr_sock_ == INVALID_SOCKET;
    if (!process_request(conn, last, closed, nullptr) || closed || last) break;
    linger = close_requested;
  }
  // Bytes left unread (a body not read to its end, requests after the last answered) would reset
  // the connection when it closes, and could destroy the last answer: read and dropped first.
  if (linger || close_requested || !conn.buffered().empty()) conn.linger_close(linger_bytes_, 1000);
  else conn.close();
  close_requested = false;
  return true;
}

}  // namespace tfm::serve
