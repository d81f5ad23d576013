#pragma once
// A request's head (its request line and header fields) read and checked on the connection before
// the HTTP library parses it: bounded in header count, line length and bytes, with one unambiguous
// body framing (RFC 9112: conflicting Content-Length values, or Content-Length with
// Transfer-Encoding, are refused), so that the library and the server agree on where it ends.
#include <httplib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace tfm::serve {

struct HeadLimits {
  size_t max_headers = 100;       // header fields per request: more is 431
  size_t max_bytes = 32 * 1024;   // the whole head, request line included: more is 431
  size_t max_line = 8 * 1024;     // one line (the library's own limit): longer is 414 or 431
};

// An answer given without the HTTP library: a status, the message of its JSON error body, and any
// further headers (Allow, WWW-Authenticate).
struct Refusal {
  int status = 400;
  std::string message;
  httplib::Headers headers;
};

struct RequestHead {
  std::string method, target, path, version;  // path: the target's path, decoded as the library does
  httplib::Headers headers;                   // values decoded as the library decodes them
  size_t size = 0;                            // bytes of the head, its blank line included
  std::optional<uint64_t> content_length;
  bool chunked = false;  // Transfer-Encoding: chunked
  bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

// Follows a head as its bytes arrive, so that each byte is looked at once: where it ends, or the
// refusal as soon as it is over a limit or has a line that does not end in CRLF.
class HeadScanner {
 public:
  explicit HeadScanner(const HeadLimits& limits) : limits_(limits) {}
  // `bytes` holds the head so far (what was given before and more). The head's size once its blank
  // line has come; 0 while more is needed; a refusal when it can never be a valid head.
  std::variant<size_t, Refusal> scan(std::string_view bytes);

 private:
  HeadLimits limits_;
  size_t scanned_ = 0, line_start_ = 0, lines_ = 0;
};

// Parses a complete head (as HeadScanner found it): the head, or the refusal naming what is wrong.
std::variant<RequestHead, Refusal> parse_head(std::string_view head, const HeadLimits& limits);

}  // namespace tfm::serve
