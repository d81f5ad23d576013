// How a JSON endpoint is answered: its body read up to --max-body-bytes, the API key checked, and
// the result (or the error, with its status) written as JSON.
#include <strings.h>

#include <cmath>

#include "core/error.h"
#include "serve/http_error.h"
#include "serve/server_impl.h"

namespace tfm::serve {

using json = nlohmann::json;

// Runs a JSON endpoint: errors become their status and a JSON body. `req` given: the endpoint
// needs the API key (the gate checked it before the body was read; checked again here).
void Server::Impl::answer(httplib::Response& res, const std::function<json()>& body, const httplib::Request* req) {
  if (req && !authorized(*req)) {
    unauthorized(res);
    return;
  }
  guarded(res, [&] {
    res.set_content(body().dump() + "\n", "application/json");
    res.status = 200;
  });
}

bool Server::Impl::guarded(httplib::Response& res, const std::function<void()>& work) {
  try {
    work();
    return true;
  } catch (const HttpError& e) {
    res.status = e.status;
    if (e.status == 503) res.set_header("Retry-After", cat(std::ceil(options.retry_after_seconds)));
    res.set_content(error_body(e.message), "application/json");
  } catch (const std::bad_alloc&) {
    res.status = 503;
    res.set_content(error_body("the server ran out of memory for this request; retry later or send less"),
                    "application/json");
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(error_body(e.what()), "application/json");
  }
  return false;
}

// The request with its body, read (and decompressed) up to --max-body-bytes; nullopt with the
// error answered when it cannot be had: 413 over the limit, 415 for multipart form data, 400 when
// it cannot be read. Reading (and inflating) stops as soon as the body is over the limit, and the
// connection is closed after the answer: the rest of the body is never read as a request.
std::optional<httplib::Request> Server::Impl::read_body(const httplib::Request& req, httplib::Response& res,
                                          const httplib::ContentReader& reader) const {
  const auto limit = static_cast<size_t>(options.max_body_bytes);
  std::string body;
  bool over = false;
  auto keep = [&](const char* data, size_t n) {
    over = n > limit - body.size();
    if (!over) body.append(data, n);
    return !over;
  };
  if (req.is_multipart_form_data()) {
    res.status = 415;
    res.set_content(error_body("the request body must be JSON (Content-Type: application/json), not multipart "
                               "form data (curl -F): send it with -H 'Content-Type: application/json' -d"),
                    "application/json");
    close_after_response(res);
    return std::nullopt;
  }
  const bool complete = reader(keep);
  if (complete && !over) {
    httplib::Request full = req;
    full.body = std::move(body);
    return full;
  }
  std::string message;
  if (over || res.status == 413) {  // httplib sets 413 when the declared Content-Length is over it
    res.status = 413;
    message = cat("the request body is over the limit of ", options.max_body_bytes, " bytes (--max-body-bytes)",
                  over && req.has_header("Content-Encoding") ? ", once decompressed" : "");
  } else {
    res.status = 400;
    message = "the request body could not be read whole (cut short, or not valid chunked or compressed data)";
  }
  res.set_content(error_body(message), "application/json");
  close_after_response(res);
  return std::nullopt;
}

void Server::Impl::unauthorized(httplib::Response& res) const {
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(error_body(kNoKey), "application/json");
}

bool Server::Impl::authorized(const httplib::Request& req) const {
  if (options.api_key.empty()) return true;
  std::string given = req.get_header_value("Authorization");
  // The scheme's name is case-insensitive (RFC 9110): "bearer KEY" too.
  if (given.size() > 7 && strncasecmp(given.c_str(), "Bearer ", 7) == 0) given = given.substr(7);
  else given = req.get_header_value("X-API-Key");
  // Compared in time independent of where they differ.
  unsigned char diff = given.size() == options.api_key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ options.api_key[i % options.api_key.size()]);
  return diff == 0;
}

}  // namespace tfm::serve
