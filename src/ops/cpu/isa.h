#pragma once
// The CPU's instruction-set level: which SIMD build of the project's own kernels runs
// (ops/cpu/simd/target.h) and how far oneDNN may go. Detected once, at run time, so one binary
// serves every x86-64 CPU from the baseline up. The environment variable TFM_CPU_ISA forces a lower
// level: to run and test every path a machine has, or to reproduce another CPU family's results.
//
//   TFM_CPU_ISA=generic|avx2|avx512|avx512_vnni|avx512_bf16|amx   (unset or "native": detected)
//
// A forced level caps oneDNN too (dnnl_set_max_cpu_isa). OpenBLAS picks its kernels when it is
// loaded, before any of this runs: OPENBLAS_CORETYPE (e.g. Haswell, SkylakeX) forces its choice.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm::cpu {

// Ordered: each level has every feature of the ones before it.
enum class Isa {
  kGeneric,     // plain C++ at the build's baseline (SSE2 on x86-64; NEON on aarch64, its only level)
  kAvx2,        // x86-64-v3: AVX2, FMA, F16C, BMI2
  kAvx512,      // x86-64-v4: AVX-512 F, BW, DQ, VL, CD
  kAvx512Vnni,  // + AVX-512 VNNI: 8-bit dot products summed in 32 bits
  kAvx512Bf16,  // + AVX-512 BF16: bfloat16 dot products
  kAmx,         // + AMX tiles for bfloat16 and int8
};

const char* name(Isa isa);  // as TFM_CPU_ISA takes it: "generic", "avx2", ...
std::vector<Isa> all_isas();  // the levels this build knows, lowest first (generic alone off x86-64)
std::optional<Isa> parse_isa(std::string_view name);  // one of all_isas() by name

Isa detected_isa();  // the highest level this CPU and its operating system support
// The level in use: detected_isa(), or TFM_CPU_ISA's. Settled at the first call, before oneDNN runs
// anything; throws Error (at that call and every later one) for an unknown name or a level this CPU
// lacks, naming both.
Isa isa();

// The SIMD build of ops/cpu/simd that runs at a level (simd/target.h).
enum class SimdBuild { kGeneric, kAvx2, kAvx512 };
SimdBuild simd_build(Isa isa);
const char* name(SimdBuild build);  // "generic", "avx2", "avx512"

// What runs where, for `transformer info --cpu` and the top of `make bench`: the CPU, its level and
// features, the SIMD build, oneDNN's ISA, OpenBLAS's core, and how int8, bf16 and packed products run.
std::string cpu_report();

}  // namespace tfm::cpu
