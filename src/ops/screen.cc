#include "ops/screen.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "ops/cpu/kernels.h"

namespace tfm::ops {
namespace {

constexpr double kUnit = 0x1p-24;  // float32's unit roundoff

// x rounded up a little: norms and bounds computed in double stay above their exact values.
double up(double x) { return x * (1 + 1e-12) + 1e-300; }

// ‖x − x̂‖₂ for one row, x̂ = s · q as quantize_activations (ops/cpu/simd/quantize.cc) makes it: the
// scale max |x| / L in float32, q = x · (1 / s) rounded half away from zero. Where x / s lies within
// 10⁻⁴ of a half-integer the kernel's float32 rounding may take the other neighbour (its own
// evaluation order, a fused multiply-add): the error there is counted as s · (½ + 10⁻⁴), which
// bounds both. A row the kernel does not scale (all zeros, denormals) is quantized to zeros.
double activation_error_norm(const float* x, int64_t D, float max, int levels) {
  const auto top = static_cast<float>(levels);
  if (!(max >= top * std::numeric_limits<float>::min())) {
    double sum = 0;
    for (int64_t i = 0; i < D; ++i) sum += double(x[i]) * double(x[i]);
    return up(std::sqrt(sum));
  }
  const float s = max / top;
  const double sd = s;
  double sum = 0;
  for (int64_t i = 0; i < D; ++i) {
    const double v = double(x[i]) / sd, a = std::abs(v), frac = a - std::floor(a);
    double e;
    if (std::abs(frac - 0.5) < 1e-4) {
      e = sd * (0.5 + 1e-4);
    } else {
      const double q = std::copysign(std::floor(a + 0.5), v);
      e = std::abs(double(x[i]) - sd * q);
    }
    sum += e * e;
  }
  return up(std::sqrt(sum));
}

}  // namespace

ScreenedProjection screen_projection(const Tensor& weight, const Tensor& bias) {
  check_rank("screen_projection", "weight", weight, 2);
  check_dtype("screen_projection", "weight", weight, DType::F32);
  TFM_CHECK(weight.device() == Device::CPU, "screen_projection: no kernel for device '", name(weight.device()), "'");
  const int64_t V = weight.size(0), D = weight.size(1);
  if (bias.defined()) {
    check_dtype("screen_projection", "bias", bias, DType::F32);
    TFM_CHECK(bias.numel() == V && bias.device() == Device::CPU, "screen_projection: bias ", bias.shape(),
              " for a weight of ", V, " rows");
  }
  ScreenedProjection p{quantize_rows(weight), weight, bias};
  const float* w = weight.data<float>();
  const int8_t* q = p.q.q.data<int8_t>();
  const float* scale = p.q.scale.data<float>();
  double err = 0, quantized = 0, norm = 0;
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(max : err, quantized, norm) reduction(&& : finite)
  for (int64_t k = 0; k < V; ++k) {
    double e2 = 0, q2 = 0, w2 = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double wi = w[k * D + i], qi = double(scale[k]) * q[k * D + i];
      e2 += (wi - qi) * (wi - qi);
      q2 += qi * qi;
      w2 += wi * wi;
    }
    finite = finite && std::isfinite(w2);
    err = std::max(err, std::sqrt(e2));
    quantized = std::max(quantized, std::sqrt(q2));
    norm = std::max(norm, std::sqrt(w2));
  }
  p.max_error_norm = up(err);
  p.max_quantized_norm = up(quantized);
  p.max_norm = up(norm);
  if (bias.defined())
    for (int64_t k = 0; k < V; ++k) {
      const double bk = bias.data<float>()[k];
      finite = finite && std::isfinite(bk);
      p.max_bias = std::max(p.max_bias, std::abs(bk));
    }
  p.finite = finite;
  p.max_bias = up(p.max_bias);
  release_unpacked(p.q);
  return p;
}

ScreenBounds screen_bounds(const float* x, int64_t D, const ScreenedProjection& p) {
  ScreenBounds out;
  double sum2 = 0;
  float max = 0;
  for (int64_t i = 0; i < D; ++i) {
    out.finite = out.finite && std::isfinite(x[i]);
    sum2 += double(x[i]) * double(x[i]);
    max = std::max(max, std::abs(x[i]));
  }
  if (!out.finite || !p.finite) {
    out.finite = false;
    return out;
  }
  const double xn = up(std::sqrt(sum2)), dn = activation_error_norm(x, D, max, int8_activation_levels());
  const double xq = xn + dn;  // ≥ ‖x̂‖
  // |x·w_k − s·scale_k·Σ q̂ q| ≤ ‖x‖ ‖w_k − ŵ_k‖ + ‖x − x̂‖ ‖ŵ_k‖ (Cauchy–Schwarz); the int8 product's
  // dequantization (the int32 sum to float, two float products) adds 3.01 units of |x̂·ŵ_k| ≤
  // ‖x̂‖ ‖ŵ_k‖, and its bias's addition 1 unit of the result, counted as 2.01 units of ‖x̂‖ ‖ŵ_k‖ + |b_k|.
  out.int8 = up(xn * p.max_error_norm + dn * p.max_quantized_norm + 3.01 * kUnit * xq * p.max_quantized_norm +
                2.01 * kUnit * (xq * p.max_quantized_norm * (1 + 4 * kUnit) + p.max_bias));
  // The float32 product: γ_D ‖x‖ ‖w_k‖ in any summation order (fused or not), then 1 unit of the logit
  // for the bias's addition.
  const double gamma = double(D) * kUnit / (1 - double(D) * kUnit);
  out.limit = up(xn * p.max_norm + p.max_bias);
  out.float32 = up(gamma * xn * p.max_norm + 1.01 * kUnit * (out.limit * (1 + gamma)));
  return out;
}

namespace {

// What every row's screening reads: the projection, the int8 logits [R, V] (bias included), and
// as each block of columns is made (in its thread, while in its cache) each row's largest there:
// bmax [R, units of 16 columns], at the unit that starts the block (NaN where the block holds one),
// and the block's width at that unit.
struct Int8Screen {
  const ScreenedProjection& p;
  int64_t R = 0, D = 0, V = 0, units = 0;
  Tensor approx;                // float32 [R, V]
  std::vector<float> bmax;      // [R, units]
  std::vector<int64_t> bwidth;  // [units]
};

// Fills the int8 logits and each block's largest, the banned columns set to −inf first.
void int8_logits(Int8Screen& s, const Tensor& x, const std::vector<int32_t>& banned) {
  const ScreenedProjection& p = s.p;
  const int64_t R = s.R, V = s.V, units = s.units;
  s.approx = Tensor::empty({R, V});
  s.bmax.assign(static_cast<size_t>(R * units), -std::numeric_limits<float>::infinity());
  s.bwidth.assign(static_cast<size_t>(units), 0);
  float* ys = s.approx.data<float>();
  const std::function<void(int64_t, int64_t)> block_max = [&](int64_t c0, int64_t nc) {
    s.bwidth[static_cast<size_t>(c0 / 16)] = nc;
    for (int64_t r = 0; r < R; ++r) {
      float* y = ys + r * V;
      for (int32_t j : banned)
        if (j >= c0 && j < c0 + nc) y[j] = -std::numeric_limits<float>::infinity();
      float m = -std::numeric_limits<float>::infinity();
      int nans = 0;
#pragma omp simd reduction(max : m) reduction(| : nans)
      for (int64_t k = c0; k < c0 + nc; ++k) {
        m = std::max(m, y[k]);
        nans |= y[k] != y[k];
      }
      s.bmax[static_cast<size_t>(r * units + c0 / 16)] = nans ? std::numeric_limits<float>::quiet_NaN() : m;
    }
  };
  cpu::matmul_int8(R, V, s.D, x.data<float>(), p.q.q.defined() ? p.q.q.data<int8_t>() : nullptr,
                   p.q.scale.data<float>(), p.bias.defined() ? p.bias.data<float>() : nullptr, Activation::kNone, ys,
                   p.q.panels.get(), &block_max);
}

// The lowest int8 logit a candidate of row r may have: 2 · total below the row's best (bias
// included); not finite where the row is undecided (a NaN, no finite best).
float candidate_floor(const Int8Screen& s, int64_t r, double total) {
  const float* bm = s.bmax.data() + r * s.units;
  float best = -std::numeric_limits<float>::infinity();
  int nans = 0;
  for (int64_t u = 0; u < s.units; ++u) {
    best = std::max(best, bm[u]);
    nans |= bm[u] != bm[u];
  }
  if (nans || !std::isfinite(best)) return std::numeric_limits<float>::quiet_NaN();
  return std::nextafter(static_cast<float>(double(best) - 2 * total), -std::numeric_limits<float>::infinity());
}

// The columns of row r at or above the floor, in the blocks whose largest reaches it (stopping
// once there are more than kMaxScreenCandidates). A column k outside: its float32 logit is at most
// y_k + total < best − total, at most the float32 logit of the column holding `best`.
void gather_candidates(const Int8Screen& s, int64_t r, float floor, std::vector<int32_t>& cand) {
  const float* bm = s.bmax.data() + r * s.units;
  const float* y = s.approx.data<float>() + r * s.V;
  cand.clear();
  for (int64_t u = 0; u < s.units && static_cast<int64_t>(cand.size()) <= kMaxScreenCandidates; ++u)
    if (s.bwidth[static_cast<size_t>(u)] > 0 && bm[u] >= floor)
      for (int64_t k = 16 * u; k < 16 * u + s.bwidth[static_cast<size_t>(u)]; ++k)
        if (y[k] >= floor) cand.push_back(static_cast<int32_t>(k));
}

// The candidates' logits in double; the best (the lower column on a tie) must beat the runner-up
// by more than both float32 products' rounding could move them. −1 where it does not.
int32_t recompute_best(const Int8Screen& s, const float* xr, const std::vector<int32_t>& cand,
                       const ScreenBounds& bounds) {
  const int64_t D = s.D;
  const float* w = s.p.weight.data<float>();
  const float* b = s.p.bias.defined() ? s.p.bias.data<float>() : nullptr;
  double top = -std::numeric_limits<double>::infinity(), second = top;
  int32_t top_k = -1;
  for (int32_t k : cand) {
    const float* wk = w + int64_t(k) * D;
    double dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < D; ++i) dot += double(xr[i]) * double(wk[i]);
    const double v = dot + (b ? double(b[k]) : 0.0);
    if (v > top) {
      second = top;
      top = v;
      top_k = k;
    } else {
      second = std::max(second, v);
    }
  }
  // The double recomputation's own error is far below this.
  const double own = 1e-12 * (bounds.limit + 1);
  return top_k >= 0 && top - second > 2 * (bounds.float32 + own) ? top_k : -1;
}

// Row r's column, or −1 where it is undecided; counts the candidates it recomputed.
int32_t screen_row(const Int8Screen& s, const float* xr, int64_t r, std::vector<int32_t>& cand, int64_t& candidates) {
  const ScreenBounds bounds = screen_bounds(xr, s.D, s.p);
  // Logits near float32's range: the float32 product may overflow where this would not.
  if (!bounds.finite || bounds.limit + bounds.int8 + bounds.float32 >= 0.25 * std::numeric_limits<float>::max())
    return -1;
  const double total = up(bounds.int8 + bounds.float32);
  const float floor = candidate_floor(s, r, total);
  if (!std::isfinite(floor)) return -1;
  gather_candidates(s, r, floor, cand);
  candidates += static_cast<int64_t>(cand.size());
  if (static_cast<int64_t>(cand.size()) > kMaxScreenCandidates) return -1;
  return recompute_best(s, xr, cand, bounds);
}

}  // namespace

ScreenStats screened_argmax(const Tensor& x, const ScreenedProjection& p, const std::vector<int32_t>& banned,
                            std::vector<int32_t>& ids) {
  check_rank("screened_argmax", "x", x, 2);
  check_dtype("screened_argmax", "x", x, DType::F32);
  const int64_t R = x.size(0), D = x.size(1), V = p.weight.size(0);
  TFM_CHECK(x.device() == Device::CPU, "screened_argmax: no kernel for device '", name(x.device()), "'");
  TFM_CHECK(D == p.weight.size(1), "screened_argmax: x ", x.shape(), " for a weight ", p.weight.shape());
  for (int32_t b : banned) TFM_CHECK(b >= 0 && b < V, "screened_argmax: banned id ", b, " is outside [0, ", V, ")");
  ids.assign(static_cast<size_t>(R), -1);
  ScreenStats stats;
  if (!p.finite) stats.undecided = R;
  if (R == 0 || !p.finite) return stats;
  Int8Screen s{p, R, D, V, (V + 15) / 16, Tensor(), {}, {}};
  int8_logits(s, x, banned);
  const float* xs = x.data<float>();
  int64_t undecided = 0, candidates = 0;
#pragma omp parallel reduction(+ : undecided, candidates)
  {
    std::vector<int32_t> cand;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
      const int32_t id = screen_row(s, xs + r * D, r, cand, candidates);
      if (id >= 0) ids[static_cast<size_t>(r)] = id;
      else ++undecided;
    }
  }
  stats.undecided = undecided;
  stats.candidates = candidates;
  return stats;
}

}  // namespace tfm::ops
