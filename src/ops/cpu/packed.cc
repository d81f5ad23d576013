#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#include "core/error.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace {
using dnnl::memory;
using dt = memory::data_type;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

struct Packed {
  int64_t n = 0, k = 0;
  dnnl::matmul product;
  memory weights;  // in the layout the primitive chose
  memory bias;     // [1, n] over the caller's bias; empty when there is none
};
}  // namespace

std::shared_ptr<const void> pack_weight(int64_t n, int64_t k, const float* w, const float* bias) {
  try {
    auto p = std::make_shared<Packed>();
    p->n = n;
    p->k = k;
    // y [M, N] = x [M, K] · B [K, N] (+ bias [1, N]) with B = wᵀ; M is given at each call.
    const memory::desc src({DNNL_RUNTIME_DIM_VAL, k}, dt::f32, {k, 1});
    const memory::desc dst({DNNL_RUNTIME_DIM_VAL, n}, dt::f32, {n, 1});
    const memory::desc any_weights({k, n}, dt::f32, memory::format_tag::any);
    const memory::desc bias_desc({1, n}, dt::f32, {n, 1});
    const dnnl::matmul::primitive_desc pd(bias ? dnnl::matmul::desc(src, any_weights, bias_desc, dst)
                                               : dnnl::matmul::desc(src, any_weights, dst),
                                          engine());
    if (bias) p->bias = memory(bias_desc, engine(), const_cast<float*>(bias));
    // w [n, k] row-major is B [k, n] in layout "ba".
    memory user(memory::desc({k, n}, dt::f32, memory::format_tag::ba), engine(), const_cast<float*>(w));
    p->weights = memory(pd.weights_desc(), engine());
    dnnl::reorder(user, p->weights).execute(stream(), user, p->weights);
    stream().wait();
    p->product = dnnl::matmul(pd);
    return p;
  } catch (const dnnl::error& e) {
    throw Error(cat("packing a [", n, ", ", k, "] weight matrix failed (oneDNN: ", e.what(), ")"));
  }
}

void matmul_packed(const void* packed, int64_t m, const float* x, float* y) {
  const Packed& p = *static_cast<const Packed*>(packed);
  if (m == 0) return;
  try {
    memory xm(memory::desc({m, p.k}, dt::f32, {p.k, 1}), engine(), const_cast<float*>(x));
    memory ym(memory::desc({m, p.n}, dt::f32, {p.n, 1}), engine(), y);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, ym}};
    if (p.bias) args.emplace(DNNL_ARG_BIAS, p.bias);
    p.product.execute(stream(), args);
    stream().wait();
  } catch (const dnnl::error& e) {
    throw Error(cat("packed matrix product of ", m, " rows failed (oneDNN: ", e.what(), ")"));
  }
}

// BM_DecodeProduct against BM_DecodeProductPacked (2 threads): packed 1.3–1.9× at 64 rows for every
// shape in two sessions; at 256 rows the two sessions disagreed. Whole beam-4 translations of 64
// sentences (256 rows), alternated in one session 8 times each (BM_Translate/beam4 and
// beam4_shortlist3200): packed at 256 rows faster in 14 of 16 pairs, median 1.20×
// (docs/performance.md). From 512 rows ops::matmul runs oneDNN's sgemm.
bool packed_product_wins(int64_t m, int64_t, int64_t) { return m <= 256; }

}  // namespace tfm::cpu
