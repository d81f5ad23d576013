#pragma once
// The files of ops/cpu/simd are compiled once per SIMD build, each into its own namespace, and the
// dispatcher (ops/cpu/dispatch.cc) calls the build that matches the CPU at run time (ops/cpu/isa.h):
//
//   build    namespace            compiled for                         runs at levels
//   generic  tfm::cpu::generic    the build's baseline (x86-64: SSE2)   generic (and non-x86 CPUs)
//   avx2     tfm::cpu::avx2       x86-64-v3: AVX2, FMA, F16C, BMI2      avx2
//   avx512   tfm::cpu::avx512     x86-64-v4: + AVX-512 F/BW/DQ/VL/CD   avx512 and above
//
// CMake defines TFM_SIMD_AVX2 or TFM_SIMD_AVX512 for the second and third (GCC on x86-64 only;
// other compilers and CPUs build generic alone, and TFM_SIMD_X86 tells the dispatcher).
//
// Code between TFM_SIMD_BEGIN and TFM_SIMD_END is compiled for the build's target through
// `#pragma GCC target`, not through command-line flags: everything included before the region,
// the standard library and the project's other headers among them, stays at the baseline. That
// matters because inline functions and template instantiations are merged across object files by
// the linker, which keeps one copy: a std::vector<float> member compiled with AVX-512 could
// otherwise become the one every caller uses, and crash a CPU without AVX-512. So a file of this
// folder includes every header it needs first, and defines things only inside the region, where
// they belong to the build's own namespace (tests/cli/simd_objects_test.sh checks the objects).
//
// The targets are GCC's x86-64-v3 and -v4, not a processor (arch=haswell, arch=skylake-avx512):
// GCC inlines a baseline function (std::max, memcpy, RngStream's Philox) into a region only when
// both have the same processor type, which x86-64-v3/v4 share with the baseline's x86-64.
//
// TFM_SIMD_BYTES is the build's vector width, for the code written with GCC's vector types
// (fast_exp.h's f32v): as wide as the build's registers. Wider types are split badly by GCC: a
// 64-byte type compiled for AVX2 became element-by-element code, 4–8× slower than 32-byte ones.
#if defined(TFM_SIMD_AVX512)
#define TFM_SIMD_BYTES 64
#define TFM_SIMD_BEGIN                                  \
  _Pragma("GCC push_options")                           \
  _Pragma("GCC target(\"arch=x86-64-v4\")") namespace tfm::cpu::avx512 {
#define TFM_SIMD_END \
  }                  \
  _Pragma("GCC pop_options")
#elif defined(TFM_SIMD_AVX2)
#define TFM_SIMD_BYTES 32
#define TFM_SIMD_BEGIN                                  \
  _Pragma("GCC push_options")                           \
  _Pragma("GCC target(\"arch=x86-64-v3\")") namespace tfm::cpu::avx2 {
#define TFM_SIMD_END \
  }                  \
  _Pragma("GCC pop_options")
#else
#define TFM_SIMD_BYTES 16  // SSE2 on x86-64, NEON on aarch64
#define TFM_SIMD_BEGIN namespace tfm::cpu::generic {
#define TFM_SIMD_END }
#endif
