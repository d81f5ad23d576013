#pragma once
// A step's gradients summed over the batches that make it: within a rank in the fixed order of
// dist/tree_sum.h, and over data-parallel ranks by NCCL between their GPUs or by the communicator's
// reductions, in buckets during the last batch's backward pass (dist/bucket_reducer.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/param_store.h"
#include "dist/bucket_reducer.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"
#include "dist/tree_sum.h"
#include "layers/context.h"
#include "model/transformer.h"
#include "train/options.h"

namespace tfm {

class GradientSync {
 public:
  // Sums over the ranks under several of them, or through NCCL when `over_nccl` (on a GPU, started
  // by an MPI launcher: also with one rank, so that a one-rank run goes through it); says how
  // through `message`.
  GradientSync(dist::Communicator& comm, const Transformer& model, const TrainOptions& o, bool over_nccl,
               const std::function<void(const std::string&)>& message);

  // Around each of a rank's `own` batches of a step (of the step's batches, `contributors` ranks
  // compute some): zeroes the gradients, and before the last batch starts the reduction over the
  // ranks that the backward pass feeds through `ctx`; after each but the last, keeps its gradients.
  void before_batch(ParamStore& params, Context& ctx, bool last, int64_t own, int contributors);
  void after_batch(const ParamStore& params, bool last);
  // After them: the step's gradients summed in the params' gradients, and `losses` (each batch's,
  // on the rank that computed it) summed over the ranks.
  void finish(ParamStore& params, int64_t own, int contributors, std::vector<double>& losses);

 private:
  dist::Communicator& comm_;
  dist::TreeSum grad_sum_;  // a step's batch gradients, when a rank computes more than one
  std::unique_ptr<dist::BucketReducer> reducer_;  // under several ranks or NCCL
  std::unique_ptr<dist::DeviceCommunicator> device_comm_;  // NCCL between the ranks' GPUs
  std::function<void(int, int)> grads_done_;  // the backward pass's report of each layer's gradients
};

}  // namespace tfm
