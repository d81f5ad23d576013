#pragma once
// The processes of a data-parallel training: each rank computes the gradients of its share
// of a step's batches, and the ranks sum them with one all-reduce, so that every rank applies the
// same update. The training code sees this interface only; which engine carries it is chosen at
// build time by the file that defines world(): dist/world_mpi.cc (MPI, when the build found it:
// TFM_MPI) or dist/world_single.cc (one process).
#include <cstdint>
#include <string>

namespace tfm::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // 0 .. size() - 1
  virtual int size() const = 0;
  // This rank among the ranks on its machine (0 .. local_size() − 1): the GPU it takes.
  virtual int local_rank() const { return 0; }
  virtual int local_size() const { return 1; }
  // What carries the messages: "single process", "MPI (Open MPI 4.1.4)", ...
  virtual std::string backend() const = 0;
  // Sums `data` [n] over the ranks, in place, in an order of the engine's choosing: for sums that
  // are exact whatever the order (counts, flags, values held by one rank only).
  virtual void all_reduce_sum(double* data, int64_t n) = 0;
  // Sums `data` [n] of ranks 0 .. contributors − 1 (the other ranks' data is not read) in place on
  // every rank, in the fixed order of dist/tree_sum.h over rank numbers: the same bits whatever the
  // engine, its algorithm and the message size, and the same as one process summing those terms.
  virtual void all_reduce_tree(float* data, int64_t n, int contributors) = 0;
  virtual void all_reduce_tree(double* data, int64_t n, int contributors) = 0;
  // Rank `root`'s `bytes` bytes at `data` to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  // Whether another thread than the one that started the engine may call it, one thread at a time
  // (MPI_THREAD_SERIALIZED): dist::BucketReducer's thread does while the caller computes.
  virtual bool other_threads_may_call() const = 0;
  // The longest a collective waits for the other ranks, in seconds (0: no limit, the start's).
  // Past it, the engine asks every rank whether it is alive, and ends every rank through abort()
  // with a message naming the ranks that did not answer (stopped, hung, or unreachable): a job
  // whose rank is stopped (SIGSTOP) does not wait forever. One process has nothing to wait for.
  virtual void set_timeout(double seconds) {}
  // Ends every rank of the job at once (a collective that some rank will never join would
  // otherwise wait forever): prints "error: rank R of N: message" to stderr and exits with
  // status 1, this rank and, through the engine, all the others.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // Conveniences over the above.
  void broadcast(std::string& s, int root);  // any length; resized on the receivers
  void broadcast(int64_t& v, int root) { broadcast(&v, sizeof v, root); }
  bool is_root() const { return rank() == 0; }
};

// This process's ranks: MPI's world when the build has MPI and the process was started by an MPI
// launcher (mpirun, srun: its environment says so), else one process of rank 0. MPI is initialized
// on the first call (call it first on the main thread) and finalized at exit.
Communicator& world();

// Whether an MPI launcher (Open MPI's mpirun, MPICH's and Intel MPI's Hydra, Slurm's srun through
// PMI/PMIx) started this process, from the environment it sets; and the number of processes it
// started, where the environment says (else 0).
bool started_by_launcher();
int launcher_size();

// world() once a call of it has returned, else nullptr (it never starts the engine).
Communicator* started_world();
namespace detail {
Communicator& mark_started(Communicator& world);  // world() returns through it
}

// The engine this build trains over several processes with ("Open MPI v4.1.4"), or "" when the
// build has none. Does not start it.
std::string engine();

// The one-process communicator (world() when not started by a launcher).
Communicator& single_process();

}  // namespace tfm::dist
