#include "ops/positional.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace tfm::ops {

namespace {
// The table for positions offset + start … + len − 1, in double, rounded to T.
template <class T>
std::vector<T> table(int64_t len, int64_t d, int64_t start, const PositionEncoding& e) {
  using Layout = PositionEncoding::Layout;
  const int64_t pairs = d / 2;  // an odd D's last dimension is a sine (interleaved)
  auto rate = [&](int64_t i) {
    return e.rates == PositionEncoding::Rates::kPaper
               ? std::exp(-std::log(10000.0) * static_cast<double>(2 * i) / static_cast<double>(d))
               : std::exp(-std::log(10000.0) * static_cast<double>(i) / static_cast<double>(pairs - 1));
  };
  std::vector<T> pe(static_cast<size_t>(len * d));
  for (int64_t t = 0; t < len; ++t) {
    const double pos = static_cast<double>(e.offset + start + t);
    T* row = pe.data() + t * d;
    for (int64_t c = 0; c < d; ++c) {
      const bool sine = e.layout == Layout::kInterleaved ? c % 2 == 0 : c < pairs;
      const int64_t i = e.layout == Layout::kInterleaved ? c / 2 : c % pairs;
      row[c] = static_cast<T>(sine ? std::sin(pos * rate(i)) : std::cos(pos * rate(i)));
    }
  }
  return pe;
}
// The table of positions 0 … rows − 1 (and more: it grows by doubling) on a device, made once per
// encoding and width and kept: computing it on the host and copying it over at every call would
// stall the device's queue at every step of training and decoding.
Tensor device_table(int64_t rows, int64_t d, const PositionEncoding& e, Device device) {
  using Key = std::tuple<int64_t, int, int, int64_t, int>;
  static std::mutex mutex;
  static auto* tables = new std::map<Key, Tensor>;  // never destroyed: the device may be gone at exit
  const std::lock_guard<std::mutex> lock(mutex);
  Tensor& t = (*tables)[Key{d, static_cast<int>(e.layout), static_cast<int>(e.rates), e.offset,
                            static_cast<int>(device)}];
  if (!t.defined() || t.size(0) < rows) {
    const int64_t capacity = std::max<int64_t>({rows, t.defined() ? 2 * t.size(0) : 0, 256});
    std::vector<float> pe = table<float>(capacity, d, 0, e);
    t = Tensor::wrap(pe.data(), {capacity, d}, DType::F32).to_device(device);
  }
  return t;
}
}  // namespace

void positional_encoding(const Tensor& pe, int64_t start, const PositionEncoding& encoding) {
  check_rank("positional_encoding", "pe", pe, 2);
  pe.zero();
  add_positional_encoding(pe.view({1, pe.size(0), pe.size(1)}), start, encoding);
}

void add_positional_encoding(const Tensor& x, int64_t start, const PositionEncoding& encoding) {
  check_rank("add_positional_encoding", "x", x, 3);
  TFM_CHECK(start >= 0 && encoding.offset >= 0, "add_positional_encoding: positions must be >= 0, got start ", start,
            " and offset ", encoding.offset);
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
  TFM_CHECK(encoding.layout == PositionEncoding::Layout::kInterleaved || D % 2 == 0,
            "add_positional_encoding: the sines-then-cosines layout needs an even width, got ", D);
  TFM_CHECK(encoding.rates == PositionEncoding::Rates::kPaper || D >= 4,
            "add_positional_encoding: Marian's rates need a width of at least 4, got ", D);
  // The table, [T·D], computed on the host (on a device: kept there, device_table) and added to each
  // sentence's [T·D] row of x in one pass.
  auto add = [&](auto t) {
    using V = decltype(t);
    std::vector<V> pe = table<V>(T, D, start, encoding);
    const Tensor flat = x.view({B, T * D});
    bias_add(flat, on_device(Tensor::wrap(pe.data(), {T * D}, x.dtype()), x.device()), flat);
  };
  dispatch("add_positional_encoding", x.dtype(), x.device(), add, [&](cuda::Kernels&) {
    const Tensor flat = x.view({B, T * D});
    bias_add(flat, device_table(start + T, D, encoding, x.device()).rows(start, T).view({T * D}), flat);
  });
}

}  // namespace tfm::ops
