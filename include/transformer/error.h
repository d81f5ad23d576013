#pragma once
// The one exception type of the library: every error a caller can cause (a missing or damaged
// file, an option out of range, text that cannot be read) throws transformer::Error with a message
// that names the problem and the value. Nothing else is thrown on purpose; std::bad_alloc may be. OutOfMemory, below, is
// the one subclass.
#include <stdexcept>

namespace transformer {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Memory that could not be had (a tensor's allocation on the host), with the bytes asked for; an
// Error, so that catching Error catches it too. Python raises it as MemoryError.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

}  // namespace transformer
