// Summing a step's batch gradients within a rank and over the data-parallel ranks.
#include "train/gradient_sync.h"

#include <algorithm>

#include "core/error.h"

namespace tfm {

namespace {

// The gradient buffer's ranges in the order a backward pass completes them.
std::vector<dist::Range> completion_plan(const Transformer& model) {
  const ParamStore& params = model.params();
  std::vector<dist::Range> plan;
  for (const auto& [first, end] : model.grads_done_order())
    plan.push_back({params.offset(first), params.offset(end - 1) + params.shape(end - 1).numel()});
  return plan;
}

}  // namespace

GradientSync::GradientSync(dist::Communicator& comm, const Transformer& model, const TrainOptions& o,
                           bool over_nccl, const std::function<void(const std::string&)>& message)
    : comm_(comm) {
  if (over_nccl) {
    // One rank needs no sum: it goes through NCCL where NCCL is there (so that a one-rank run under
    // mpirun checks that path), and trains without it where it is not.
    try {
      device_comm_ = dist::nccl(comm);
      message(cat("gradients summed over the ranks' GPUs by ", device_comm_->backend(), " after the backward pass"));
    } catch (const Error& e) {
      if (comm.size() > 1) throw;
      message(cat("one rank: its gradients are not summed through NCCL (", e.what(), ")"));
    }
  }
  if (comm.size() == 1 && !device_comm_) return;
  const ParamStore& params = model.params();
  const int64_t n = params.grads().numel();
  // (On a GPU the backward's kernels are queued far ahead of the GPU: buckets would gain little.)
  const bool overlap = o.allreduce_bucket_mb > 0 && comm.other_threads_may_call() && !device_comm_;
  const int64_t bucket = overlap ? std::max<int64_t>(1, static_cast<int64_t>(o.allreduce_bucket_mb * 1e6) /
                                                           static_cast<int64_t>(size_of(params.dtype())))
                                 : n;
  reducer_ = std::make_unique<dist::BucketReducer>(comm, completion_plan(model), n, bucket, overlap,
                                                   device_comm_.get());
  grads_done_ = [this, &params](int first, int) { reducer_->ready(params.offset(first)); };
  const size_t buckets = reducer_->buckets().size();
  if (!device_comm_)
    message(overlap ? cat("gradients summed over the ranks in ", buckets, buckets == 1 ? " bucket" : " buckets",
                          " of up to ", o.allreduce_bucket_mb, " MB during the backward pass")
                    : cat("gradients summed over the ranks after the backward pass (",
                          o.allreduce_bucket_mb > 0 ? "this MPI allows no other thread" : "allreduce_bucket_mb 0",
                          ")"));
}

void GradientSync::before_batch(ParamStore& params, Context& ctx, bool last, int64_t own, int contributors) {
  params.zero_grad();
  if (!last || !reducer_) return;
  // The earlier batches' gradients of this rank are added to each bucket before it is summed.
  reducer_->begin(params.grads(), contributors, [this, &params, own](dist::Range r) {
    if (own > 1) grad_sum_.finish_range(params.grads(), r.lo, r.hi);
  });
  ctx.on_grads_done = &grads_done_;
}

void GradientSync::after_batch(const ParamStore& params, bool last) {
  if (!last) grad_sum_.push(params.grads());
}

void GradientSync::finish(ParamStore& params, int64_t own, int contributors, std::vector<double>& losses) {
  if (reducer_) {
    if (own == 0) {  // no batch for this rank in an epoch's last, shorter step: it adds nothing
      params.zero_grad();
      reducer_->begin(params.grads(), contributors);
    }
    reducer_->finish();  // what no backward reported, then waits for every bucket
    grad_sum_.reset();
    comm_.all_reduce_sum(losses.data(), static_cast<int64_t>(losses.size()));  // each held by one rank: exact in any order
  } else if (own > 1) {
    grad_sum_.finish(params.grads());  // the last batch's gradient is in grads
  }
}

}  // namespace tfm
