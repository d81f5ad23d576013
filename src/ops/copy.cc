#include "ops/copy.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

void index_select(const Tensor& src, const Tensor& indices, const Tensor& dst, int64_t prefix) {
  TFM_CHECK(src.rank() >= 1 && dst.rank() == src.rank(), "index_select: src ", src.shape(), " and dst ", dst.shape(),
            " must have the same rank >= 1");
  check_dtype("index_select", "indices", indices, DType::I32);
  const int64_t n = indices.numel(), rows = src.size(0), row = rows ? src.numel() / rows : 0;
  TFM_CHECK(dst.size(0) == n && dst.numel() == n * row, "index_select: dst has shape ", dst.shape(), ", expected ", n,
            " rows like ", src.shape());
  TFM_CHECK(src.dtype() == dst.dtype() && src.device() == dst.device(), "index_select: src and dst differ in dtype or device");
  const HostInts idx(indices);
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(idx[i] >= 0 && idx[i] < rows, "index_select: index ", idx[i], " at position ", i, " is outside [0, ", rows,
              ")");
  const int64_t row_bytes = row * static_cast<int64_t>(size_of(src.dtype()));
  int64_t copy_bytes = row_bytes;
  if (prefix >= 0) {
    TFM_CHECK(src.rank() >= 2 && prefix <= src.size(1), "index_select: prefix ", prefix, " is outside dim 1 of ",
              src.shape());
    copy_bytes = row_bytes / src.size(1) * prefix;
  }
  const auto* from = static_cast<const char*>(src.raw());
  auto* to = static_cast<char*>(dst.raw());
  if (src.device() == Device::CUDA) {
    // The indices where the kernel reads them (a decoding step's come from the host).
    cuda_kernels("index_select").copy_rows(n, row_bytes, copy_bytes, on_device(indices, src.device()).data<int32_t>(),
                                           from, to);
  } else {
    TFM_CHECK(indices.device() == Device::CPU, "index_select: indices are on ", name(indices.device()),
              ", src on the cpu");
    cpu::copy_rows(n, row_bytes, copy_bytes, idx.data(), from, to);
  }
}

void split_columns(const Tensor& x, const std::vector<Tensor>& parts) {
  TFM_CHECK(x.rank() >= 1, "split_columns: x must have rank >= 1, got ", x.shape());
  const int64_t rows = x.shape().rows(), elem = static_cast<int64_t>(size_of(x.dtype()));
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    TFM_CHECK(p.rank() >= 1 && p.shape().rows() == rows, "split_columns: part ", p.shape(), " does not have the ",
              rows, " rows of x ", x.shape());
    TFM_CHECK(p.dtype() == x.dtype() && p.device() == x.device(), "split_columns: part ", p.shape(), " is ",
              tfm::name(p.dtype()), " on ", name(p.device()), ", x is ", tfm::name(x.dtype()), " on ", name(x.device()));
    offset += p.size(-1);
  }
  TFM_CHECK(offset == x.size(-1), "split_columns: the parts' widths add up to ", offset, ", x ", x.shape(), " has ",
            x.size(-1));
  if (x.device() == Device::CUDA) {  // one kernel for every part
    std::vector<int64_t> widths;
    std::vector<char*> to;
    for (const Tensor& p : parts) {
      widths.push_back(p.size(-1) * elem);
      to.push_back(static_cast<char*>(p.raw()));
    }
    cuda_kernels("split_columns").split_columns(rows, x.size(-1) * elem, widths, to, static_cast<const char*>(x.raw()));
    return;
  }
  offset = 0;
  for (const Tensor& p : parts) {
    cpu::copy_columns(rows, x.size(-1) * elem, offset * elem, p.size(-1) * elem, static_cast<const char*>(x.raw()),
                      static_cast<char*>(p.raw()));
    offset += p.size(-1);
  }
}


}  // namespace tfm::ops
