#include "ops/embedding.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

namespace {
void check_args(const char* op, const Tensor& ids, const Tensor& table, const Tensor& rows) {
  check_dtype(op, "ids", ids, DType::I32);
  check_rank(op, "table", table, 2);
  const int64_t n = ids.numel(), v = table.size(0), d = table.size(1);
  TFM_CHECK(rows.numel() == n * d && rows.size(-1) == d, op, ": output has shape ", rows.shape(), ", expected ", n,
            " rows of ", d, " for ", ids.shape(), " ids and a table of shape ", table.shape());
  const int32_t* p = ids.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(p[i] >= -1 && p[i] < v, op, ": token id ", p[i], " at position ", i, " is outside the vocabulary [0, ",
              v, ") and is not -1 (a zero row)");
}
}  // namespace

void embedding(const Tensor& ids, const Tensor& table, double scale, const Tensor& out) {
  check_args("embedding", ids, table, out);
  check_all("embedding", table.dtype(), table.device(), {{"out", &out}});
  dispatch("embedding", table.dtype(), table.device(), [&](auto t) {
    using T = decltype(t);
    cpu::embedding<T>(ids.numel(), table.size(1), ids.data<int32_t>(), table.data<T>(), scale, out.data<T>());
  });
}

void embedding_backward(const Tensor& ids, const Tensor& dout, double scale, const Tensor& dtable) {
  check_args("embedding_backward", ids, dtable, dout);
  check_all("embedding_backward", dtable.dtype(), dtable.device(), {{"dout", &dout}});
  dispatch("embedding_backward", dtable.dtype(), dtable.device(), [&](auto t) {
    using T = decltype(t);
    cpu::embedding_backward<T>(ids.numel(), dtable.size(1), ids.data<int32_t>(), dout.data<T>(), scale,
                               dtable.data<T>());
  });
}

}  // namespace tfm::ops
