// The test programs' main: GoogleTest's, plus one rule for forced levels. ctest runs every program
// once per instruction-set level (TFM_CPU_ISA, tests/CMakeLists.txt); at a level this CPU lacks,
// the program runs nothing and exits with 77, which ctest reports as skipped (SKIP_RETURN_CODE); so
// it does at the CPU's own level, which the program's unforced run tests, and at avx512_vnni on a
// CPU with AVX-512 BF16 or AMX, whose own level and the avx512 level cover its products.
// (GoogleTest's own GTEST_SKIP in a global environment reports the tests as passed.)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "ops/cpu/isa.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* forced = std::getenv("TFM_CPU_ISA");
  const auto level = forced ? tfm::cpu::parse_isa(forced) : std::nullopt;
  if (level && *level > tfm::cpu::detected_isa() && !::testing::GTEST_FLAG(list_tests)) {
    std::printf("skipped: TFM_CPU_ISA=%s, and this CPU's highest level is %s\n", forced,
                tfm::cpu::name(tfm::cpu::detected_isa()));
    return 77;
  }
  if (level && *level == tfm::cpu::detected_isa() && !::testing::GTEST_FLAG(list_tests)) {
    // The same tests without TFM_CPU_ISA run at this level already: not twice.
    std::printf("skipped: TFM_CPU_ISA=%s is this CPU's own level, which the unforced run tests\n", forced);
    return 77;
  }
  if (level && *level == tfm::cpu::Isa::kAvx512Vnni && tfm::cpu::detected_isa() >= tfm::cpu::Isa::kAvx512Bf16 &&
      !::testing::GTEST_FLAG(list_tests)) {
    // Its int8 products are the CPU's own level's (VNNI), its bfloat16 ones the avx512 level's
    // (without BF16 instructions): both tested already.
    std::printf("skipped: TFM_CPU_ISA=%s, covered by this CPU's own level (%s) and the avx512 level\n", forced,
                tfm::cpu::name(tfm::cpu::detected_isa()));
    return 77;
  }
  // A forced level whose results a higher level's run reproduces for this program (tests/CMakeLists.txt
  // sets the level from which it is so): covered where the CPU's own level is that high.
  const char* covered = std::getenv("TFM_TEST_COVERED_FROM");
  const auto covered_from = covered ? tfm::cpu::parse_isa(covered) : std::nullopt;
  if (level && covered_from && tfm::cpu::detected_isa() >= *covered_from && !::testing::GTEST_FLAG(list_tests)) {
    std::printf("skipped: TFM_CPU_ISA=%s computes as this CPU's own level (%s) here\n", forced,
                tfm::cpu::name(tfm::cpu::detected_isa()));
    return 77;
  }
  if (!::testing::GTEST_FLAG(list_tests)) {
    try {
      tfm::cpu::isa();  // an unknown TFM_CPU_ISA: one clear error, not a failure in every test
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  return RUN_ALL_TESTS();
}
