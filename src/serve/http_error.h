#pragma once
// An error the client caused (or a full queue), as the server answers it: a status and the message
// of the JSON body {"error": "…"}.
#include <string>

namespace tfm::serve {

struct HttpError {
  int status;
  std::string message;
};

// The JSON body of an error; bytes that are not UTF-8 (a parse error quotes the bad input) are
// replaced rather than thrown at.
std::string error_body(const std::string& message);

}  // namespace tfm::serve
