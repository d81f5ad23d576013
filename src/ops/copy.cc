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
  const int32_t* idx = indices.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(idx[i] >= 0 && idx[i] < rows, "index_select: index ", idx[i], " at position ", i, " is outside [0, ", rows,
              ")");
  TFM_CHECK(src.device() == Device::CPU, "index_select: no kernel for device '", name(src.device()), "'");
  const int64_t row_bytes = row * static_cast<int64_t>(size_of(src.dtype()));
  int64_t copy_bytes = row_bytes;
  if (prefix >= 0) {
    TFM_CHECK(src.rank() >= 2 && prefix <= src.size(1), "index_select: prefix ", prefix, " is outside dim 1 of ",
              src.shape());
    copy_bytes = row_bytes / src.size(1) * prefix;
  }
  cpu::copy_rows(n, row_bytes, copy_bytes, idx, static_cast<const char*>(src.raw()), static_cast<char*>(dst.raw()));
}

void permute_rows(const Tensor& t, const Tensor& indices, int64_t prefix) {
  TFM_CHECK(t.rank() >= 1, "permute_rows: t must have rank >= 1, got ", t.shape());
  check_dtype("permute_rows", "indices", indices, DType::I32);
  const int64_t n = t.size(0), row = n ? t.numel() / n : 0;
  TFM_CHECK(indices.numel() == n, "permute_rows: ", indices.numel(), " indices for ", n, " rows");
  const int32_t* idx = indices.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(idx[i] >= 0 && idx[i] < n, "permute_rows: index ", idx[i], " at position ", i, " is outside [0, ", n, ")");
  TFM_CHECK(t.device() == Device::CPU, "permute_rows: no kernel for device '", name(t.device()), "'");
  const int64_t row_bytes = row * static_cast<int64_t>(size_of(t.dtype()));
  int64_t copy_bytes = row_bytes;
  if (prefix >= 0) {
    TFM_CHECK(t.rank() >= 2 && prefix <= t.size(1), "permute_rows: prefix ", prefix, " is outside dim 1 of ", t.shape());
    copy_bytes = row_bytes / t.size(1) * prefix;
  }
  cpu::permute_rows_in_place(n, row_bytes, copy_bytes, idx, static_cast<char*>(t.raw()));
}

void write_position(const Tensor& cache, const Tensor& x, int64_t position) {
  check_rank("write_position", "cache", cache, 3);
  check_rank("write_position", "x", x, 3);
  TFM_CHECK(x.size(0) == cache.size(0) && x.size(1) == 1 && x.size(2) == cache.size(2), "write_position: x ",
            x.shape(), " does not fit cache ", cache.shape());
  TFM_CHECK(position >= 0 && position < cache.size(1), "write_position: position ", position,
            " is outside the cache's ", cache.size(1), " positions");
  TFM_CHECK(x.dtype() == cache.dtype() && x.device() == cache.device(), "write_position: x and cache differ in dtype or device");
  TFM_CHECK(x.device() == Device::CPU, "write_position: no kernel for device '", name(x.device()), "'");
  const int64_t width = cache.size(2) * static_cast<int64_t>(size_of(x.dtype()));
  cpu::write_position(cache.size(0), cache.size(1), width, position, static_cast<const char*>(x.raw()),
                      static_cast<char*>(cache.raw()));
}

}  // namespace tfm::ops
