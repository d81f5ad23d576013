#pragma once
// The one exception type of the library: every error a caller can cause (a missing or damaged
// file, an option out of range, text that cannot be read) throws transformer::Error with a message
// that names the problem and the value. Nothing else is thrown on purpose; std::bad_alloc may be. OutOfMemory, below, is
// the one subclass.
#include <stdexcept>
#include <string>

namespace transformer {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A problem with one sentence (or pair) of a call: its index in the call's input, counted from 0,
// and the problem. what() is "sentence INDEX: PROBLEM"; a caller that knows the sentence by another
// name (the command line's line numbers) can say it its own way.
class SentenceError : public Error {
 public:
  SentenceError(long long index, const std::string& problem)
      : Error("sentence " + std::to_string(index) + ": " + problem), index_(index), problem_(problem) {}
  long long index() const { return index_; }
  const std::string& problem() const { return problem_; }

 private:
  long long index_;
  std::string problem_;
};
// Memory that could not be had (a tensor's allocation on the host), with the bytes asked for; an
// Error, so that catching Error catches it too. Python raises it as MemoryError.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

}  // namespace transformer
