#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/signal_shield.h"

namespace tfm::cpu {

namespace {

// Columns [c0, c0 + nc) of the product: acc [m, nc] = (xq − offset) · w[c0 : c0 + nc]ᵀ in int32. Run
// inside a parallel region, oneDNN computes it on the calling thread alone. Returns oneDNN's status
// (no exception may leave a parallel region).
dnnl_status_t product_columns(int64_t m, int64_t c0, int64_t nc, int64_t k, const uint8_t* xq, uint8_t offset,
                              const int8_t* w, int32_t* acc) {
  const int32_t co = 0;
  return dnnl_gemm_u8s8s32('N', 'T', 'F', m, nc, k, 1.0f, xq, k, offset, w + c0 * k, k, 0, 0.0f, acc, nc, &co);
}

void check_product(dnnl_status_t status) {
  TFM_CHECK(status == dnnl_success, "int8 matrix product failed (oneDNN status ", static_cast<int>(status), ")");
}

}  // namespace

int int8_activation_levels() {
#if defined(__x86_64__)
  // VNNI's vpdpbusd sums four u8 × s8 products straight into 32 bits. Without it oneDNN's kernels
  // add pairs of them in 16 bits (vpmaddubsw), which saturate past 32,767: 2 · 255 · 127 can reach
  // 64,770, while with 7-bit activations (u8 ≤ 127) 2 · 127 · 127 = 32,258 cannot overflow.
  // oneDNN's own choice decides (a DNNL_MAX_CPU_ISA or TFM_CPU_ISA cap included).
  static const int levels = [] {
    isa();  // settles oneDNN's cap first
    const dnnl_cpu_isa_t used = dnnl_get_effective_cpu_isa();
    return (used & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ? 127 : 63;
  }();
  return levels;
#else
  return 127;  // oneDNN's int8 products off x86-64 sum in 32 bits
#endif
}

// Where the project's own int8 panels (simd/int8_panels.cc) serve: 7-bit activations (oneDNN's
// products there have no VNNI, and its gemm packs the weight again at every call) in the AVX2 and
// AVX-512 builds, k a multiple of the panels' 4-byte groups. 2 threads, AMD EPYC Zen 4 at the avx2
// level, GOP/s, panels against oneDNN: 64 rows 302–371 / 281–337, 256 rows 318–388 / 323–376; the
// output projection (512 → 32,000, medians of 3) at 64 rows 319 / 263, at 256 rows 368 / 334
// (BM_DecodeProductInt8*, docs/performance.md, "Every CPU family"; outputs of 8,192 columns and
// more stayed with oneDNN until the panels were measured as fast there too).
bool int8_panels_serve(int64_t n, int64_t k) {
  return int8_activation_levels() == 63 && simd_build(isa()) != SimdBuild::kGeneric && k % 4 == 0 && n > 0;
}

std::shared_ptr<const void> pack_int8(int64_t n, int64_t k, const int8_t* w) {
  if (!int8_panels_serve(n, k)) return nullptr;
  const size_t bytes = static_cast<size_t>(int8_panel_bytes(n, k));
  std::shared_ptr<void> out(std::aligned_alloc(64, (std::max<size_t>(bytes, 64) + 63) / 64 * 64), std::free);
  TFM_CHECK(out != nullptr, "packing a [", n, ", ", k, "] int8 weight matrix: out of memory (", bytes, " bytes)");
  pack_int8_panels(n, k, w, int8_activation_levels() + 1, out.get());
  return out;
}

void matmul_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const float* w_scale,
                 const float* bias, ops::Activation act, float* y, const void* panels,
                 const std::function<void(int64_t c0, int64_t nc)>* after_block) {
  // Scratch reused across calls (decoding calls this thousands of times): grown, never cleared.
  if (m == 0 || n == 0) return;
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> x_scale;
  if (xq.size() < static_cast<size_t>(m * k)) xq.resize(static_cast<size_t>(m * k));
  if (x_scale.size() < static_cast<size_t>(m)) x_scale.resize(static_cast<size_t>(m));
  // Pointers, not the thread_local vectors, inside the parallel loops: each worker thread would
  // otherwise see its own (empty) thread_local.
  uint8_t* xq_data = xq.data();
  float* scale_data = x_scale.data();
  const int levels = int8_activation_levels();
  const auto offset = static_cast<uint8_t>(levels + 1);
  quantize_activations(m, k, x, levels, xq_data, scale_data);
  std::optional<SignalShield> shield;  // around oneDNN's kernels (ops/cpu/signal_shield.h); the panels need none
  if (panels == nullptr) shield.emplace();
  if (m <= 256 || panels) {
    // Few rows (decoding): the columns in blocks, each thread computing its blocks' int32 products
    // alone and dequantizing each while it is in its cache (acc ≤ 512 KB). One product over all
    // columns would leave the int32 result (32 MB for 256 × 32,000 logits) in memory for a second
    // pass: 256 × 32,000 × 512 took 11–16 ms blocked against 18–20 ms whole, the output identical
    // (docs/performance.md). Beyond 256 rows (the encoder) oneDNN's whole product was faster; the
    // project's panels take every row count in blocks (at 1,664 rows 330–375 GOP/s against oneDNN's
    // 275–366, AMD EPYC Zen 4 at the avx2 level).
    // Blocks of whole 16-column units, a multiple of the thread count (nearly equal shares).
    const int64_t threads = omp_get_max_threads(), units = (n + 15) / 16;
    int64_t blocks = std::max<int64_t>(1, (m * n + (1 << 17) - 1) >> 17);
    blocks = std::min(units, (blocks + threads - 1) / threads * threads);
    const int64_t nb_max = 16 * ((units + blocks - 1) / blocks);
    dnnl_status_t failed = dnnl_success;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      thread_local std::vector<int32_t> acc;  // this thread's block
      if (acc.size() < static_cast<size_t>(m * nb_max)) acc.resize(static_cast<size_t>(m * nb_max));
      const int64_t c0 = 16 * (units * b / blocks), nc = std::min(n, 16 * (units * (b + 1) / blocks)) - c0;
      if (panels) {
        matmul_int8_panels(m, c0, nc, k, xq_data, panels, n, acc.data());
        dequantize_rows(m, c0, nc, acc.data(), scale_data, w_scale, bias, act, y, n);
        if (after_block) (*after_block)(c0, nc);
        continue;
      }
      const dnnl_status_t status = product_columns(m, c0, nc, k, xq_data, offset, w, acc.data());
      if (status != dnnl_success) {
#pragma omp critical(int8_failure)
        failed = status;
        continue;
      }
      dequantize_rows(m, c0, nc, acc.data(), scale_data, w_scale, bias, act, y, n);
      if (after_block) (*after_block)(c0, nc);
    }
    check_product(failed);
    return;
  }
  thread_local std::vector<int32_t> acc;
  if (acc.size() < static_cast<size_t>(m * n)) acc.resize(static_cast<size_t>(m * n));
  int32_t* acc_data = acc.data();
  check_product(product_columns(m, 0, n, k, xq_data, offset, w, acc_data));
  dequantize_rows(m, 0, n, acc_data, scale_data, w_scale, bias, act, y, n);
  if (after_block) (*after_block)(0, n);
}

}  // namespace tfm::cpu
