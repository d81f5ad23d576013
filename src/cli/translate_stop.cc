// translate's stop on SIGINT or SIGTERM: the handler that ends the input's reading, and the message
// naming the line to go on from before the process ends by the signal.
#include "cli/translate_stop.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "core/error.h"

namespace tfm::cli {

namespace {

// The signal that came first: without the handler it would end translate at once, losing the
// finished translations of its chunk (up to --chunk-lines lines). A second SIGINT or SIGTERM ends
// it at once: the first gives both their default action back.
std::atomic<int> g_stop_signal{0};
// /dev/null, which the handler puts over the input's descriptor, so that a read waiting there
// (a terminal, a pipe, a FIFO) ends; and which of the two signals the handler was installed for.
volatile sig_atomic_t g_null_fd = -1, g_input_fd = -1, g_caught_int = 0, g_caught_term = 0;

void on_stop_signal(int signal) {
  int none = 0;
  if (!g_stop_signal.compare_exchange_strong(none, signal)) return;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  if (g_caught_int) sigaction(SIGINT, &default_action, nullptr);
  if (g_caught_term) sigaction(SIGTERM, &default_action, nullptr);
  if (g_null_fd >= 0 && g_input_fd >= 0) ::dup2(g_null_fd, g_input_fd);
  static const char kMessage[] =
      "\nstopping: the lines read so far are being translated and written (again to stop at once, losing them)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

int stop_signal() { return g_stop_signal.load(); }

StopOnSignals::StopOnSignals(int input_fd) {
  g_stop_signal = 0;
  g_input_fd = input_fd;
  g_null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  // Neither signal interrupts the handler: one that comes meanwhile waits, then takes the
  // default action the handler gave it back. A write to a full pipe that the signal interrupts
  // goes on (without SA_RESTART it would fail, and the output with it).
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;
  // A signal ignored on entry stays ignored (a job started in the background by a script
  // ignores SIGINT, so that Ctrl-C in the terminal stops the script, not the job).
  sigaction(SIGINT, nullptr, &old_int_);
  sigaction(SIGTERM, nullptr, &old_term_);
  g_caught_int = old_int_.sa_handler != SIG_IGN;
  g_caught_term = old_term_.sa_handler != SIG_IGN;
  if (g_caught_int) sigaction(SIGINT, &action, nullptr);
  if (g_caught_term) sigaction(SIGTERM, &action, nullptr);
}

StopOnSignals::~StopOnSignals() {
  if (g_caught_int) sigaction(SIGINT, &old_int_, nullptr);
  if (g_caught_term) sigaction(SIGTERM, &old_term_, nullptr);
  g_caught_int = 0;
  g_caught_term = 0;
  g_input_fd = -1;
  if (g_null_fd >= 0) ::close(g_null_fd);
  g_null_fd = -1;
}

int end_by_signal(int signal, const StoppedRun& run) {
  const int64_t next = run.lines + 1;
  std::string go_on = cat("translate the input from line ", next,
                          run.input_is_file ? cat(" (tail -n +", next, " '", run.input, "')") : std::string());
  if (!run.prefix_path.empty())
    go_on += cat(" with --target-prefix from line ", next, " (tail -n +", next, " '", run.prefix_path, "')");
  if (!run.attention_path.empty()) go_on += ", and --attention to another file (its line numbers start again at 1)";
  if (run.n_best) go_on += " (the n-best lists' sentence numbers start again at 0)";
  const std::string done = run.lines == 0 ? std::string("no line was translated")
                           : cat("lines 1 to ", run.lines, " were translated and written",
                                 run.attention_path.empty() ? "" : cat(" (their attention to '", run.attention_path, "')"));
  std::fprintf(stderr, "stopped by %s: %s; to go on, %s\n", signal == SIGINT ? "SIGINT" : "SIGTERM", done.c_str(),
               go_on.c_str());
  // End by the signal, as the shell expects of a program that Ctrl-C stopped: a script running
  // this one then stops too (an exit status of 130 would let it go on).
  std::fflush(stdout);
  std::fflush(stderr);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
  return 128 + signal;  // not reached
}

}  // namespace tfm::cli
