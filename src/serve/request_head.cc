// A request's head read and checked before the HTTP library parses it: the limits on its size and
// header count, strict header syntax, and one body framing; values decoded as the library decodes
// them, so that both read the same Content-Length, Transfer-Encoding and API key.
#include "serve/request_head.h"

#include <strings.h>

#include <cctype>
#include <vector>

#include "core/error.h"

namespace tfm::serve {

namespace {

// A header name's characters (RFC 9110's tchar).
bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_token_char(c)) return false;
  return true;
}

// A value's characters: visible ones, spaces, tabs and bytes of UTF-8 (no control character).
bool is_field_value(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Up to 80 bytes of a value for a message.
std::string quote(std::string_view s) {
  std::string out = "'";
  out.append(s.substr(0, 80));
  out.append(s.size() > 80 ? "…'" : "'");
  return out;
}

Refusal bad(std::string message) { return Refusal{400, std::move(message), {}}; }

// The request line: METHOD TARGET HTTP/1.x, one space apart.
std::optional<Refusal> parse_request_line(std::string_view line, RequestHead& head) {
  const size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos || !is_token(line.substr(0, a)) ||
      b == a + 1 || !is_field_value(line))
    return bad("the request line " + quote(line) + " is not METHOD TARGET HTTP/1.1");
  head.method = line.substr(0, a);
  head.target = line.substr(a + 1, b - a - 1);
  head.version = line.substr(b + 1);
  if (head.version != "HTTP/1.1" && head.version != "HTTP/1.0")
    return Refusal{505, "the HTTP version " + quote(head.version) + " is not HTTP/1.1 or HTTP/1.0", {}};
  head.path = httplib::detail::decode_url(head.target.substr(0, head.target.find_first_of("?#")), false);
  return std::nullopt;
}

// One header line: NAME: VALUE, the name a token right before the colon, no line folding.
std::optional<Refusal> parse_header_line(std::string_view line, RequestHead& head) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon)) || !is_field_value(line))
    return bad("the header line " + quote(line) + " is not NAME: VALUE (a token, a colon, visible characters)");
  head.headers.emplace(std::string(line.substr(0, colon)),
                       httplib::detail::decode_url(std::string(trim(line.substr(colon + 1))), false));
  return std::nullopt;
}

// Content-Length and Transfer-Encoding: at most one framing of the body, and one length.
std::optional<Refusal> parse_framing(RequestHead& head) {
  for (auto [it, end] = head.headers.equal_range("Content-Length"); it != end; ++it) {
    const std::string& v = it->second;
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
      return bad("Content-Length " + quote(v) + " is not a number of bytes");
    const uint64_t n = std::stoull(v);
    if (head.content_length && *head.content_length != n)
      return bad(cat("conflicting Content-Length headers (", *head.content_length, " and ", n,
                     "): the body's length is ambiguous"));
    head.content_length = n;
  }
  const size_t encodings = head.headers.count("Transfer-Encoding");
  if (encodings == 0) return std::nullopt;
  if (head.content_length)
    return bad("both Content-Length and Transfer-Encoding: the body's length is ambiguous (send one)");
  if (head.version == "HTTP/1.0") return bad("Transfer-Encoding in an HTTP/1.0 request");
  const std::string& coding = head.headers.find("Transfer-Encoding")->second;
  if (encodings > 1 || strcasecmp(coding.c_str(), "chunked") != 0)
    return Refusal{501, "Transfer-Encoding " + quote(coding) + " is not supported: send chunked, or Content-Length",
                   {}};
  head.chunked = true;
  return std::nullopt;
}

}  // namespace

std::variant<size_t, Refusal> HeadScanner::scan(std::string_view bytes) {
  const auto too_long = [&](size_t line) -> std::optional<Refusal> {
    if (line <= limits_.max_line) return std::nullopt;
    if (lines_ == 0) return Refusal{414, cat("the request line is over ", limits_.max_line, " bytes"), {}};
    return Refusal{431, cat("a header line is over ", limits_.max_line, " bytes"), {}};
  };
  for (; scanned_ < bytes.size(); ++scanned_) {
    if (bytes[scanned_] != '\n') continue;
    if (scanned_ == 0 || bytes[scanned_ - 1] != '\r') return bad("a line of the request head ends in LF, not CRLF");
    const size_t line = scanned_ + 1 - line_start_;
    if (line == 2 && lines_ > 0) return scanned_ + 1;  // the blank line: the head ends here
    if (auto refusal = too_long(line)) return *refusal;
    line_start_ = scanned_ + 1;
    if (++lines_ > limits_.max_headers + 1)
      return Refusal{431, cat("the request has more than ", limits_.max_headers, " header fields"), {}};
  }
  if (auto refusal = too_long(bytes.size() - line_start_)) return *refusal;
  if (bytes.size() > limits_.max_bytes)
    return Refusal{431, cat("the request head is over ", limits_.max_bytes, " bytes"), {}};
  return size_t{0};
}

std::variant<RequestHead, Refusal> parse_head(std::string_view text, const HeadLimits& limits) {
  RequestHead head;
  head.size = text.size();
  if (text.size() > limits.max_bytes)
    return Refusal{431, cat("the request head is over ", limits.max_bytes, " bytes"), {}};
  text.remove_suffix(2);  // the blank line's CRLF
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find("\r\n", start);
    lines.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  if (lines.empty()) return bad("the request has no request line");
  if (auto refusal = parse_request_line(lines[0], head)) return *refusal;
  for (size_t i = 1; i < lines.size(); ++i)
    if (auto refusal = parse_header_line(lines[i], head)) return *refusal;
  if (auto refusal = parse_framing(head)) return *refusal;
  return head;
}

}  // namespace tfm::serve
