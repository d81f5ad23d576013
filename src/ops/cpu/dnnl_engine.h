#pragma once
// The process's one oneDNN CPU engine and each thread's stream, shared by the kernels that run
// oneDNN primitives (packed.cc, gemm_bf16.cc).
#include <oneapi/dnnl/dnnl.hpp>

namespace tfm::cpu {

dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();  // this thread's

}  // namespace tfm::cpu
