#include "ops/cpu/isa.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <array>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

namespace {
struct Level {
  Isa isa;
  const char* name;
  dnnl_cpu_isa_t onednn;  // oneDNN's cap when the level is forced
  const char* features;   // what the level adds, as /proc/cpuinfo names them (for the report)
};
constexpr std::array<Level, 6> kLevels = {{
    {Isa::kGeneric, "generic", dnnl_cpu_isa_sse41, ""},
    {Isa::kAvx2, "avx2", dnnl_cpu_isa_avx2, "avx2 fma f16c bmi2"},
    {Isa::kAvx512, "avx512", dnnl_cpu_isa_avx512_core, "avx512f avx512bw avx512dq avx512vl avx512cd"},
    {Isa::kAvx512Vnni, "avx512_vnni", dnnl_cpu_isa_avx512_core_vnni, "avx512_vnni"},
    {Isa::kAvx512Bf16, "avx512_bf16", dnnl_cpu_isa_avx512_core_bf16, "avx512_bf16"},
    {Isa::kAmx, "amx", dnnl_cpu_isa_avx512_core_amx, "amx_tile amx_int8 amx_bf16"},
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

std::optional<Isa> parse_isa(std::string_view name) {
  for (const Level& l : kLevels)
    if (name == l.name) return l.isa;
  return std::nullopt;
}

std::vector<Isa> all_isas() {
  std::vector<Isa> out;
  for (const Level& l : kLevels)
    if (x86() || l.isa == Isa::kGeneric) out.push_back(l.isa);
  return out;
}

Isa detected_isa() {
#if defined(__x86_64__)
  // __builtin_cpu_supports checks that the operating system saves the AVX and AVX-512 registers.
  if (!__builtin_cpu_supports("x86-64-v3")) return Isa::kGeneric;
  if (!__builtin_cpu_supports("x86-64-v4")) return Isa::kAvx2;
  if (!__builtin_cpu_supports("avx512vnni")) return Isa::kAvx512;
  if (!__builtin_cpu_supports("avx512bf16")) return Isa::kAvx512Vnni;
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-int8") ||
      !__builtin_cpu_supports("amx-bf16"))
    return Isa::kAvx512Bf16;
  return Isa::kAmx;
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
                onednn_isa_name(level(*wanted).onednn), " (status ", static_cast<int>(status),
                "): it was used before the level was settled");
    }
    return *wanted;
  }();
  return current;
}

const char* simd_build(Isa isa) {
#if defined(TFM_SIMD_X86)
  if (isa >= Isa::kAvx512) return "avx512";
  if (isa >= Isa::kAvx2) return "avx2";
#endif
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
  out += cat("kernels    ", simd_build(current), " build of ops/cpu/simd\n");
  out += cat("oneDNN     ", v->major, ".", v->minor, ".", v->patch, ", ISA ",
             onednn_isa_name(dnnl_get_effective_cpu_isa()), current == detected ? "" : " (capped by TFM_CPU_ISA)", "\n");
  const char* blas_env = std::getenv("OPENBLAS_CORETYPE");
  out += cat("OpenBLAS   core ", openblas_get_corename(),
             blas_env && *blas_env ? cat(" (OPENBLAS_CORETYPE=", blas_env, ")") : std::string(" (its own choice)"), "; ",
             openblas_get_config(), "\n");
  out += cat("int8       ", int8_activation_levels() == 127
                                ? "8-bit activations: oneDNN's u8 x s8 products run on VNNI (32-bit sums)"
                                : "7-bit activations: oneDNN's u8 x s8 products add pairs in 16 bits here (no VNNI)",
             "\n");
  out += cat("bf16       ", bf16_path(), "\n");
  return out;
}

}  // namespace tfm::cpu
