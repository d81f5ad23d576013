#pragma once
// Sums of gradient buffers that live on a GPU, between the ranks' GPUs: NCCL, whose
// communicator is set up over the ranks' host Communicator (MPI): rank 0 makes NCCL's id and
// broadcasts it. The trainer uses it in place of Communicator::all_reduce_tree when the parameters
// are on a GPU; everything else (losses, checks, checkpoints) still goes over the host Communicator.
//
// NCCL is loaded when first needed (dlopen of libnccl.so.2), so that binaries built with it start,
// and train on one GPU or on CPUs, where NCCL is not installed.
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "dist/communicator.h"

namespace tfm::dist {

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  // "NCCL 2.28.9"
  virtual std::string backend() const = 0;
  // As Communicator::all_reduce_tree over `data` ([n], F32 or F64, on the GPU): the sum of ranks
  // 0 .. contributors − 1's data in the fixed order of dist/tree_sum.h, in place on every rank.
  // Each rank sums one slice of every contributor's buffer (NCCL's send/receive, all to all), then
  // every rank gets every slice: the same bits as one process summing the same terms. It runs
  // NCCL's operations even with one rank (they copy the buffer to itself).
  virtual void all_reduce_tree(const Tensor& data, int contributors) = 0;
};

// NCCL's communicator over `host`'s ranks, each on its own GPU (core/device.h's select_device()
// chose it; a collective call: every rank of `host` makes one). Throws when this build has no NCCL
// or libnccl.so.2 cannot be loaded.
std::unique_ptr<DeviceCommunicator> nccl(Communicator& host);

// The NCCL this build can use ("NCCL 2.28 headers; libnccl.so.2 loaded when needed"), or "" when the
// build has none. Loads nothing.
std::string device_engine();

}  // namespace tfm::dist
