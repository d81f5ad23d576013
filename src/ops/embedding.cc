#include "ops/embedding.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
// Returns the ids as the host reads them.
HostInts check_args(const char* op, const Tensor& ids, const Tensor& table, const Tensor& rows) {
  check_dtype(op, "ids", ids, DType::I32);
  check_rank(op, "table", table, 2);
  const int64_t n = ids.numel(), v = table.size(0), d = table.size(1);
  TFM_CHECK(rows.numel() == n * d && rows.size(-1) == d, op, ": output has shape ", rows.shape(), ", expected ", n,
            " rows of ", d, " for ", ids.shape(), " ids and a table of shape ", table.shape());
  HostInts p(ids);
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(p[i] >= -1 && p[i] < v, op, ": token id ", p[i], " at position ", i, " is outside the vocabulary [0, ",
              v, ") and is not -1 (a zero row)");
  return p;
}
}  // namespace

void embedding(const Tensor& ids, const Tensor& table, double scale, const Tensor& out) {
  check_args("embedding", ids, table, out);
  check_all("embedding", table.dtype(), table.device(), {{"out", &out}});
  dispatch("embedding", table.dtype(), table.device(), [&](auto t) {
    using T = decltype(t);
    cpu::embedding<T>(ids.numel(), table.size(1), ids.data<int32_t>(), table.data<T>(), scale, out.data<T>());
  }, [&](cuda::Kernels& k) {
    k.embedding(ids.numel(), table.size(1), on_device(ids, Device::CUDA).data<int32_t>(), table.data<float>(), scale,
                out.data<float>());
  });
}

void embedding_backward(const Tensor& ids, const Tensor& dout, double scale, const Tensor& dtable) {
  const HostInts host_ids = check_args("embedding_backward", ids, dtable, dout);
  check_all("embedding_backward", dtable.dtype(), dtable.device(), {{"dout", &dout}});
  dispatch("embedding_backward", dtable.dtype(), dtable.device(), [&](auto t) {
    using T = decltype(t);
    cpu::embedding_backward<T>(ids.numel(), dtable.size(1), ids.data<int32_t>(), dout.data<T>(), scale,
                               dtable.data<T>());
  }, [&](cuda::Kernels& k) {
    k.embedding_backward(ids.numel(), dtable.size(1), host_ids.data(), dout.data<float>(), scale, dtable.data<float>());
  });
}

}  // namespace tfm::ops
