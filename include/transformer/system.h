#pragma once
// What this machine offers the library.
#include <string>

namespace transformer {

// The CPU, its features and instruction-set level (TFM_CPU_ISA forces a lower one), which build of
// the project's kernels runs, oneDNN's and OpenBLAS's choices, and how int8 and bfloat16 products
// run: the text of `transformer info --cpu`. Throws Error for a TFM_CPU_ISA this CPU cannot run.
std::string cpu_report();

}  // namespace transformer
