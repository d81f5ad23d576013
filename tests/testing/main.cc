// The test programs' main: GoogleTest's, plus one rule for forced levels. ctest runs every program
// once per instruction-set level (TFM_CPU_ISA, tests/CMakeLists.txt); at a level this CPU lacks,
// the program runs nothing and exits with 77, which ctest reports as skipped (SKIP_RETURN_CODE); so
// it does at the CPU's own level, which the program's unforced run tests, and at a level that the
// CPU's own level and the ones below it cover (TFM_TEST_COVERED_FROM, tests/CMakeLists.txt).
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
  // A forced level whose products the CPU's own run and the lower levels' runs cover for this program
  // (tests/CMakeLists.txt sets from which level that is so): skipped where the CPU is that high.
  const char* covered = std::getenv("TFM_TEST_COVERED_FROM");
  const auto covered_from = covered ? tfm::cpu::parse_isa(covered) : std::nullopt;
  if (level && covered_from && tfm::cpu::detected_isa() >= *covered_from && !::testing::GTEST_FLAG(list_tests)) {
    std::printf("skipped: TFM_CPU_ISA=%s, covered here by this CPU's own level (%s) and the levels below\n", forced,
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
