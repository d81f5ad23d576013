#pragma once
// Ctrl-C (SIGINT) or SIGTERM while translating: the lines already read are translated and written,
// no more input is read, translate says which line to go on from, and then it ends by the signal.
#include <csignal>
#include <cstdint>
#include <string>

namespace tfm::cli {

// The signal that stopped this run (SIGINT or SIGTERM), or 0.
int stop_signal();

// The handlers for one run, for the input on descriptor `input_fd`; the previous ones come back
// after it, however it ends.
class StopOnSignals {
 public:
  explicit StopOnSignals(int input_fd);
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Where a stopped run was, for the message saying how to go on.
struct StoppedRun {
  int64_t lines = 0;            // the lines translated and written
  std::string input;            // --input ("": standard input)
  bool input_is_file = false;
  std::string prefix_path;      // --target-prefix, or ""
  std::string attention_path;   // --attention, or ""
  bool n_best = false;          // the output is n-best lists
};

// Says what was done and how to go on, then ends the process by `signal`, as the shell expects of a
// program that Ctrl-C stopped (status 130 or 143); returns only where raising it did not end it.
int end_by_signal(int signal, const StoppedRun& run);

}  // namespace tfm::cli
