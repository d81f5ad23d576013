#include "ops/cpu/isa.h"

#include <cblas.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace {
struct Level {
  Isa isa;
  const char* name;
  dnnl_cpu_isa_t onednn;     // oneDNN's cap when the level is forced
  const char* openblas;      // the OpenBLAS core of that family (OPENBLAS_CORETYPE), for the report
  const char* features;      // what the level adds, as /proc/cpuinfo names them (for the report)
};
// The same OpenBLAS cores are forced per level in tests/CMakeLists.txt and scripts/bench.sh.
constexpr std::array<Level, 6> kLevels = {{
    {Isa::kGeneric, "generic", dnnl_cpu_isa_sse41, "Prescott", ""},
    {Isa::kAvx2, "avx2", dnnl_cpu_isa_avx2, "Haswell", "avx2 fma f16c bmi2"},
    {Isa::kAvx512, "avx512", dnnl_cpu_isa_avx512_core, "SkylakeX", "avx512f avx512bw avx512dq avx512vl avx512cd"},
    {Isa::kAvx512Vnni, "avx512_vnni", dnnl_cpu_isa_avx512_core_vnni, "SkylakeX", "avx512_vnni"},
    {Isa::kAvx512Bf16, "avx512_bf16", dnnl_cpu_isa_avx512_core_bf16, "Cooperlake", "avx512_bf16"},
    {Isa::kAmx, "amx", dnnl_cpu_isa_avx512_core_amx, "Cooperlake", "amx_tile amx_int8 amx_bf16"},
}};
const Level& level(Isa isa) { return kLevels[static_cast<size_t>(isa)]; }

bool x86() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

// The first value of a /proc/cpuinfo field ("model name"), or empty.
std::string cpuinfo_field(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string onednn_isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_all: return x86() ? "all" : "(not x86: its own choice)";
    default: return cat("0x", std::hex, static_cast<int>(isa));
  }
}
}  // namespace

const char* name(Isa isa) { return level(isa).name; }

std::vector<Isa> all_isas() {
  std::vector<Isa> out;
  for (const Level& l : kLevels)
    if (x86() || l.isa == Isa::kGeneric) out.push_back(l.isa);
  return out;
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa l : all_isas())
    if (name == level(l).name) return l;
  return std::nullopt;
}

#if defined(__x86_64__)
namespace {
bool bit(unsigned reg, int i) { return (reg >> i) & 1u; }

// Which register files the operating system saves (XCR0, read by XGETBV; needs OSXSAVE).
struct SavedRegisters {
  bool ymm, zmm, tiles;
};
SavedRegisters saved_registers() {
  uint32_t xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const uint64_t xcr0 = (static_cast<uint64_t>(xcr0_hi) << 32) | xcr0_lo;
  return {(xcr0 & 0x6) == 0x6, (xcr0 & 0xe6) == 0xe6, (xcr0 & 0x60000) == 0x60000};
}

// The feature registers of CPUID leaves 1 (ecx), 7 (sub-leaves 0 and 1) and 0x80000001 (ecx).
struct Features {
  unsigned c1 = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0, c_ext = 0;
};

// GCC's x86-64-v3 (v2's SSE3..POPCNT, then AVX, AVX2, FMA, F16C, MOVBE, BMI1, BMI2, LZCNT), its
// YMM registers saved.
bool has_v3(const Features& f, const SavedRegisters& saved) {
  const bool fma = bit(f.c1, 12), movbe = bit(f.c1, 22), avx = bit(f.c1, 28), f16c = bit(f.c1, 29);
  const bool v2 = bit(f.c1, 0) && bit(f.c1, 9) && bit(f.c1, 13) && bit(f.c1, 19) && bit(f.c1, 20) &&
                  bit(f.c1, 23);  // SSE3..POPCNT
  const bool avx2 = bit(f.b7, 5), bmi1 = bit(f.b7, 3), bmi2 = bit(f.b7, 8), lzcnt = bit(f.c_ext, 5);
  return v2 && avx && avx2 && fma && f16c && movbe && bmi1 && bmi2 && lzcnt && saved.ymm;
}

// The level of a CPU that has x86-64-v3: v4 (AVX-512), then VNNI, BF16 and AMX.
Isa level_above_v3(const Features& f, const SavedRegisters& saved) {
  // AVX-512 F, DQ, CD, BW and VL
  const bool avx512 = bit(f.b7, 16) && bit(f.b7, 17) && bit(f.b7, 28) && bit(f.b7, 30) && bit(f.b7, 31);
  if (!(avx512 && saved.zmm)) return Isa::kAvx2;
  if (!bit(f.c7, 11)) return Isa::kAvx512;      // AVX512_VNNI
  if (!bit(f.a71, 5)) return Isa::kAvx512Vnni;  // AVX512_BF16
  const bool amx = bit(f.d7, 22) && bit(f.d7, 24) && bit(f.d7, 25);  // AMX BF16, TILE, INT8
  if (!(amx && saved.tiles)) return Isa::kAvx512Bf16;
  return Isa::kAmx;
}
}  // namespace
#endif

Isa detected_isa() {
#if defined(__x86_64__)
  // From CPUID and XGETBV directly (GCC and clang alike): each level needs its instructions and an
  // operating system that saves their registers (XCR0). The levels are GCC's x86-64-v3 and -v4,
  // which the SIMD builds are compiled for (simd/target.h), then VNNI, BF16 and AMX.
  unsigned a, b, c, d;
  Features f;
  if (!__get_cpuid(1, &a, &b, &f.c1, &d)) return Isa::kGeneric;
  if (!bit(f.c1, 27)) return Isa::kGeneric;  // OSXSAVE: XGETBV is there
  const SavedRegisters saved = saved_registers();
  if (!__get_cpuid_count(7, 0, &a, &f.b7, &f.c7, &f.d7)) return Isa::kGeneric;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.a71 = a;
  if (__get_cpuid(0x80000001, &a, &b, &c, &d)) f.c_ext = c;
  if (!has_v3(f, saved)) return Isa::kGeneric;
  return level_above_v3(f, saved);
#else
  return Isa::kGeneric;
#endif
}

Isa isa() {
  // A throwing initializer leaves the static uninitialized: every later call throws the same error.
  static const Isa current = [] {
    const Isa detected = detected_isa();
    const char* env = std::getenv("TFM_CPU_ISA");
    const std::string_view forced = env ? env : "";
    if (forced.empty() || forced == "native") return detected;
    const std::optional<Isa> wanted = parse_isa(forced);
    if (!wanted) {
      std::string known = "native";
      for (Isa l : all_isas()) known += cat(", ", name(l));
      throw Error(cat("TFM_CPU_ISA='", forced, "' is not a level this build knows (", known, ")"));
    }
    TFM_CHECK(*wanted <= detected, "TFM_CPU_ISA=", forced, ": this CPU (",
              cpuinfo_field("model name").empty() ? "unknown model" : cpuinfo_field("model name"),
              ") does not have it; its highest level is ", name(detected));
    if (x86()) {
      const dnnl_status_t status = dnnl_set_max_cpu_isa(level(*wanted).onednn);
      TFM_CHECK(status == dnnl_success, "TFM_CPU_ISA=", forced, ": oneDNN refused the limit ",
                onednn_isa_name(level(*wanted).onednn), " (status ", static_cast<int>(status), ": ",
                status == dnnl_invalid_arguments ? "it ran before the level was settled"
                                                 : "this oneDNN build cannot limit its ISA",
                ")");
    }
    return *wanted;
  }();
  return current;
}

SimdBuild simd_build(Isa isa) {
#if defined(TFM_SIMD_X86)
  if (isa >= Isa::kAvx512) return SimdBuild::kAvx512;
  if (isa >= Isa::kAvx2) return SimdBuild::kAvx2;
#endif
  return SimdBuild::kGeneric;
}

const char* name(SimdBuild build) {
  switch (build) {
    case SimdBuild::kAvx512: return "avx512";
    case SimdBuild::kAvx2: return "avx2";
    case SimdBuild::kGeneric: break;
  }
  return "generic";
}

std::string cpu_report() {
  const Isa current = isa(), detected = detected_isa();
  std::string model = cpuinfo_field("model name");
  if (model.empty()) model = x86() ? "unknown" : cat("CPU part ", cpuinfo_field("CPU part"));
  std::string features;
  for (const Level& l : kLevels)
    if (l.isa != Isa::kGeneric && l.isa <= detected) features += cat(features.empty() ? "" : " ", l.features);
  const char* env = std::getenv("TFM_CPU_ISA");
  const dnnl_version_t* v = dnnl_version();
  std::string out;
  out += cat("cpu        ", model, " (", x86() ? "x86-64" : "not x86-64", ", ", omp_get_num_procs(),
             " logical CPUs)\n");
  out += cat("features   ", features.empty() ? "baseline only" : features, "\n");
  out += cat("level      ", name(current),
             current == detected ? " (detected)" : cat(" (TFM_CPU_ISA=", env, "; detected ", name(detected), ")"),
             "\n");
  out += cat("kernels    ", name(simd_build(current)), " build of ops/cpu/simd\n");
  out += cat("oneDNN     ", v->major, ".", v->minor, ".", v->patch, ", ISA ", onednn_isa_name(dnnl_get_effective_cpu_isa()),
             current == detected ? "" : " (capped by TFM_CPU_ISA)", "\n");
  const char* blas_env = std::getenv("OPENBLAS_CORETYPE");
  const bool blas_forced = blas_env && *blas_env;
  out += cat("OpenBLAS   core ", openblas_get_corename(),
             blas_forced ? cat(" (OPENBLAS_CORETYPE=", blas_env, ")") : std::string(" (its own choice)"), "; ",
             openblas_get_config(), "\n");
  if (current != detected && !blas_forced && x86())
    out += cat("           (OpenBLAS chose its core when it was loaded: OPENBLAS_CORETYPE=", level(current).openblas,
               " gives it the ", name(current), " level's)\n");
  const char* int8 = "8-bit activations: oneDNN's u8 x s8 products sum in 32 bits here";
  if (int8_activation_levels() != 127 && int8_panels_serve(1, 4))
    int8 = "7-bit activations (no AVX-512 VNNI: u8 x s8 pairs add in 16 bits here); weights packed once into the "
           "project's own int8 panels (AVX2), outputs of 8192 columns and more through oneDNN's gemm";
  else if (int8_activation_levels() != 127)
    int8 = "7-bit activations: oneDNN's u8 x s8 products add pairs in 16 bits here (no AVX-512 VNNI)";
  else if (x86())
    int8 = "8-bit activations: oneDNN's u8 x s8 products run on VNNI or AMX (32-bit sums)";
  out += cat("int8       ", int8, "\n");
  out += cat("bf16       ", bf16_path(), "\n");
  out += cat("packed     ", packed_path(), "\n");
  return out;
}

}  // namespace tfm::cpu
