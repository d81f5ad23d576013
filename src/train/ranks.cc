// The checks that data-parallel ranks train alike, and rank 0's resumed state sent to every rank.
#include "train/ranks.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/checksum.h"

namespace tfm {

void agree_with_root(dist::Communicator& comm, const std::string& difference, const std::string& what) {
  if (comm.size() == 1) return;
  double differ = difference.empty() ? 0 : 1;
  comm.all_reduce_sum(&differ, 1);
  if (differ == 0) return;
  TFM_CHECK(difference.empty(), "the ", what, " of this rank differ from rank 0's: ", difference);
  // The ranks that agree wait in a reduction the others never join, so that the error that ends
  // the job (MPI_Abort) is the one of a rank that differs, naming it and the difference.
  double never = 0;
  comm.all_reduce_sum(&never, 1);
  throw Error(cat("the ", what, " of ", differ, " rank", differ == 1 ? "" : "s", " differ from rank 0's"));
}

void check_same_as_root(dist::Communicator& comm, uint64_t mine, const std::string& what) {
  if (comm.size() == 1) return;
  int64_t root_value = static_cast<int64_t>(mine);
  comm.broadcast(root_value, 0);
  agree_with_root(comm,
                  static_cast<uint64_t>(root_value) == mine
                      ? std::string()
                      : cat("checksum ", format_checksum(mine), " here, ",
                            format_checksum(static_cast<uint64_t>(root_value)), " on rank 0"),
                  what);
}

void check_options_agree(dist::Communicator& comm, const TrainOptions& o) {
  if (comm.size() == 1) return;
  // Every rank trains with rank 0's options but those that are each rank's own: where its files
  // are (their text is compared later) and its thread count. (Validation, the vocabulary and the
  // run folder are rank 0's alone.) A rank with another batch size, model or schedule would
  // otherwise exchange buffers of other sizes, or train apart.
  nlohmann::json mine = o;
  for (const char* own : {"train_source", "train_target", "valid_source", "valid_target", "vocab", "run_dir", "threads"})
    mine.erase(own);
  std::string text = comm.is_root() ? mine.dump() : std::string();
  comm.broadcast(text, 0);
  const nlohmann::json theirs = nlohmann::json::parse(text);
  std::string difference;
  for (const auto& [field, value] : mine.items())
    if (!theirs.contains(field) || theirs[field] != value)
      difference += cat(difference.empty() ? "" : ", ", field, " ", value.dump(), " here, ",
                        theirs.contains(field) ? theirs[field].dump() : "none", " on rank 0");
  agree_with_root(comm, difference, "training options");
}

void check_weights_agree(dist::Communicator& comm, const ParamStore& params, int64_t step) {
  if (comm.size() == 1) return;
  const Tensor host = params.values().to_host();
  check_same_as_root(comm,
                     checksum_of({static_cast<const char*>(host.raw()),
                                  static_cast<size_t>(host.numel()) * size_of(host.dtype())}),
                     cat("weights after step ", step));
}

void share_resumed_state(dist::Communicator& comm, TrainState& s, const std::vector<const Tensor*>& tensors) {
  if (comm.size() == 1) return;
  std::string state = comm.is_root() ? nlohmann::json(s).dump() : std::string();
  comm.broadcast(state, 0);
  if (!comm.is_root()) s = nlohmann::json::parse(state).get<TrainState>();
  for (const Tensor* t : tensors) {
    const Tensor host = t->to_host();
    comm.broadcast(host.raw(), host.numel() * static_cast<int64_t>(size_of(host.dtype())), 0);
    if (t->device() != Device::CPU) t->copy_from(host);
  }
}

}  // namespace tfm
