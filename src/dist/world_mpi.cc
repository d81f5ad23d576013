// world() of a build with MPI (TFM_MPI): MPI_COMM_WORLD when an MPI launcher started this process,
// one process otherwise (a plain `transformer train` never initializes MPI).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "dist/communicator.h"
#include "dist/tree_sum.h"

namespace tfm::dist {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(cat(what, " failed: ", std::string(text, static_cast<size_t>(len))));
}

class Mpi final : public Communicator {
 public:
  Mpi() {
    int provided = 0;
    // Serialized: OpenMP threads compute; the main thread talks to MPI, and between the start and
    // the end of a step's reduction dist::BucketReducer's thread does instead.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    serialized_ = provided >= MPI_THREAD_SERIALIZED;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // The ranks that share this machine's memory: those on this machine.
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    MPI_Comm_free(&node);
    // The liveness questions of a timed-out collective travel apart from the training's messages.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &pings_), "MPI_Comm_dup");
    library_ = engine();
  }
  ~Mpi() override {
    MPI_Comm_free(&pings_);
    MPI_Finalize();
  }
  void set_timeout(double seconds) override { timeout_ = seconds; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string backend() const override { return cat("MPI (", library_, ")"); }
  bool other_threads_may_call() const override { return serialized_; }
  void all_reduce_sum(double* data, int64_t n) override { reduce(data, n, MPI_DOUBLE); }
  void all_reduce_tree(float* data, int64_t n, int contributors) override { tree(data, n, contributors, MPI_FLOAT); }
  void all_reduce_tree(double* data, int64_t n, int contributors) override {
    tree(data, n, contributors, MPI_DOUBLE);
  }
  void broadcast(void* data, int64_t bytes, int root) override {
    auto* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes;) {
      const int chunk = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Ibcast(p + done, chunk, MPI_BYTE, root, MPI_COMM_WORLD, &request), "MPI_Ibcast");
      wait(request, "a broadcast");
      done += chunk;
    }
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "error: rank %d of %d: %s\n", rank_, size_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);  // MPI_Abort does not return; in case an implementation's does
  }

 private:
  template <typename T>
  void reduce(T* data, int64_t n, MPI_Datatype type) {
    for (int64_t done = 0; done < n;) {
      const int chunk = static_cast<int>(std::min<int64_t>(n - done, INT_MAX));
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Iallreduce(MPI_IN_PLACE, data + done, chunk, type, MPI_SUM, MPI_COMM_WORLD, &request),
            "MPI_Iallreduce");
      wait(request, "a sum over the ranks");
      done += chunk;
    }
  }
  // MPI's own all-reduce sums in an order of its choosing (by message size, rank count, network).
  // Here each rank sums one slice of the buffer instead: every contributor's copy of that slice comes
  // to it (all-to-all), it adds them in the tree's order, and the sums go to every rank (all-gather):
  // as many bytes through each rank as a ring all-reduce, 2·(N − 1)/N of the buffer.
  template <typename T>
  void tree(T* data, int64_t n, int contributors, MPI_Datatype type) {
    TFM_CHECK(contributors >= 1 && contributors <= size_, "all_reduce_tree: ", contributors,
              " contributors among ", size_, " ranks");
    if (size_ == 1) return;
    constexpr int64_t kRound = int64_t{1} << 28;  // elements per round: every count fits an int
    std::vector<int> counts(static_cast<size_t>(size_)), displs(counts.size());
    std::vector<int> send_counts(counts.size()), recv_counts(counts.size()), recv_displs(counts.size());
    for (int64_t start = 0; start < n; start += kRound) {
      const int64_t len = std::min(n - start, kRound);
      const int64_t slice = (len + size_ - 1) / size_;
      for (int r = 0; r < size_; ++r) {
        counts[r] = static_cast<int>(std::clamp<int64_t>(len - r * slice, 0, slice));
        displs[r] = static_cast<int>(std::min<int64_t>(r * slice, len));
      }
      const int mine = counts[static_cast<size_t>(rank_)];
      for (int r = 0; r < size_; ++r) {
        send_counts[r] = rank_ < contributors ? counts[r] : 0;
        recv_counts[r] = r < contributors ? mine : 0;
        recv_displs[r] = r < contributors ? r * mine : 0;
      }
      scratch_.resize(static_cast<size_t>(contributors) * static_cast<size_t>(mine) * sizeof(T));
      T* recv = reinterpret_cast<T*>(scratch_.data());
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Ialltoallv(data + start, send_counts.data(), displs.data(), type, recv, recv_counts.data(),
                           recv_displs.data(), type, MPI_COMM_WORLD, &request),
            "MPI_Ialltoallv");
      wait(request, "the gradients' exchange");
      std::vector<T*> terms;
      for (int r = 0; r < contributors; ++r) terms.push_back(recv + static_cast<int64_t>(r) * mine);
      tree_sum(terms.data(), contributors, mine);
      check(MPI_Iallgatherv(recv, mine, type, data + start, counts.data(), displs.data(), type, MPI_COMM_WORLD,
                            &request),
            "MPI_Iallgatherv");
      wait(request, "the gradients' exchange");
    }
  }

  // Waits for a collective started without blocking, at most timeout_ seconds (the collectives are
  // started so for this: MPI's blocking ones wait forever for a rank that never comes). Meanwhile
  // it answers the other ranks' liveness questions.
  void wait(MPI_Request& request, const char* what) {
    const auto start = Clock::now();
    for (int64_t spins = 0;; ++spins) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      if (spins % 1024 != 0) continue;  // the clock and the questions now and then
      answer_pings();
      if (timeout_ > 0 && seconds_since(start) > timeout_) time_out(what);
    }
  }
  // Answers each question waiting for this rank ("alive?") at once.
  void answer_pings() {
    for (;;) {
      int waiting = 0;
      MPI_Status status;
      check(MPI_Iprobe(MPI_ANY_SOURCE, kPing, pings_, &waiting, &status), "MPI_Iprobe");
      if (!waiting) return;
      int question = 0;
      check(MPI_Recv(&question, 1, MPI_INT, status.MPI_SOURCE, kPing, pings_, MPI_STATUS_IGNORE), "MPI_Recv");
      send_small(status.MPI_SOURCE, kPong);
    }
  }
  // A one-int message not waited for (eager: its buffer, a member, outlives it).
  void send_small(int to, int tag) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(&token_, 1, MPI_INT, to, tag, pings_, &request), "MPI_Isend");
    check(MPI_Request_free(&request), "MPI_Request_free");
  }
  // Asks every other rank whether it is alive, gives them a few seconds to answer, and ends the job
  // naming those that did not.
  [[noreturn]] void time_out(const char* what) {
    for (int r = 0; r < size_; ++r)
      if (r != rank_) send_small(r, kPing);
    std::vector<bool> answered(static_cast<size_t>(size_), false);
    answered[static_cast<size_t>(rank_)] = true;
    const auto asked = Clock::now();
    while (seconds_since(asked) < std::min(timeout_, 5.0) &&
           std::count(answered.begin(), answered.end(), false) > 0) {
      answer_pings();
      int waiting = 0;
      MPI_Status status;
      check(MPI_Iprobe(MPI_ANY_SOURCE, kPong, pings_, &waiting, &status), "MPI_Iprobe");
      if (!waiting) continue;
      int answer = 0;
      check(MPI_Recv(&answer, 1, MPI_INT, status.MPI_SOURCE, kPong, pings_, MPI_STATUS_IGNORE), "MPI_Recv");
      answered[static_cast<size_t>(status.MPI_SOURCE)] = true;
    }
    std::string silent;
    for (int r = 0; r < size_; ++r)
      if (!answered[static_cast<size_t>(r)]) silent += cat(silent.empty() ? "" : ", ", r);
    const std::string waited = cat(what, " waited more than ", timeout_, " s (rank_timeout, --rank-timeout) for ");
    abort(silent.empty() ? cat(waited, "the other ranks, which all answer but do not take part; ending every rank")
                         : cat(waited, silent.find(',') == std::string::npos ? "rank " : "ranks ", silent,
                               ", which did not answer (stopped, hung or unreachable); ending every rank"));
  }
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  static constexpr int kPing = 1, kPong = 2;  // tags on pings_

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool serialized_ = false;
  double timeout_ = 0;  // seconds; 0: none
  MPI_Comm pings_ = MPI_COMM_NULL;
  int token_ = 1;
  std::string library_;
  std::vector<char> scratch_;
};

}  // namespace

std::string engine() {
  // Allowed before MPI_Init (MPI 3).
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  const std::string text(version, static_cast<size_t>(len));
  return text.substr(0, text.find_first_of(",\n"));
}

Communicator& world() {
  static const std::unique_ptr<Mpi> mpi = started_by_launcher() ? std::make_unique<Mpi>() : nullptr;
  if (mpi) return detail::mark_started(*mpi);
  return detail::mark_started(single_process());
}

}  // namespace tfm::dist
