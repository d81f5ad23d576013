#include "ops/cpu/dnnl_engine.h"

namespace tfm::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace tfm::cpu
