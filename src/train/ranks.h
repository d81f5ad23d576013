#pragma once
// Data-parallel ranks that must train alike: the checks that every rank holds rank 0's options,
// data and weights, rank 0's resumed state sent to the others (collectives: every rank calls them,
// and they do nothing in one process), and an error on one rank ending them all.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "core/param_store.h"
#include "core/tensor.h"
#include "dist/communicator.h"
#include "train/options.h"
#include "train/state.h"

namespace tfm {

// Ends the job with an error on each rank whose `difference` from rank 0 is not empty, naming
// `what` and the difference.
void agree_with_root(dist::Communicator& comm, const std::string& difference, const std::string& what);
// The same for a checksum of `what`.
void check_same_as_root(dist::Communicator& comm, uint64_t mine, const std::string& what);
// That every rank trains with rank 0's options, but those that are each rank's own.
void check_options_agree(dist::Communicator& comm, const TrainOptions& o);
// That every rank holds rank 0's weights after step `step`.
void check_weights_agree(dist::Communicator& comm, const ParamStore& params, int64_t step);
// Under several ranks an error on one of them ends every rank, naming it (dist::Communicator::abort):
// the others would otherwise wait forever in the next collective. In one process it is thrown.
template <typename F>
auto or_abort_all_ranks(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    // (Not world() again: if starting it was what failed, a second call would start it again.)
    dist::Communicator* comm = dist::started_world();
    if (comm != nullptr && comm->size() > 1) comm->abort(e.what());
    throw;
  }
}

// Rank 0's resumed state and `tensors` (weights, Adam's moments) to every rank.
void share_resumed_state(dist::Communicator& comm, TrainState& s, const std::vector<const Tensor*>& tensors);

}  // namespace tfm
