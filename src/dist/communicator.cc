#include "dist/communicator.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace tfm::dist {

void Communicator::broadcast(std::string& s, int root) {
  int64_t n = static_cast<int64_t>(s.size());
  broadcast(n, root);
  s.resize(static_cast<size_t>(n));
  if (n > 0) broadcast(s.data(), n, root);
}

int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  // srun --mpi=pmix sets PMIX_RANK but no size; its step's task count is Slurm's. (SLURM_NTASKS
  // alone would also count the tasks of an allocation whose batch script runs one process.)
  if (std::getenv("PMIX_RANK") != nullptr)
    if (const char* v = std::getenv("SLURM_STEP_NUM_TASKS")) return std::atoi(v);
  return 0;
}

bool started_by_launcher() { return launcher_size() > 0 || std::getenv("PMIX_RANK") != nullptr; }

namespace {
std::atomic<Communicator*> started{nullptr};
}  // namespace

Communicator* started_world() { return started.load(); }

Communicator& detail::mark_started(Communicator& world) {
  started.store(&world);
  return world;
}

namespace {
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single process"; }
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_tree(float*, int64_t, int) override {}
  void all_reduce_tree(double*, int64_t, int) override {}
  void broadcast(void*, int64_t, int) override {}
  bool other_threads_may_call() const override { return true; }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::exit(1);
  }
};
}  // namespace

Communicator& single_process() {
  static SingleProcess one;
  return one;
}

}  // namespace tfm::dist
