#include "ops/cpu/dnnl_engine.h"

#include "ops/cpu/isa.h"

namespace tfm::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine e = [] {
    isa();  // a forced level caps oneDNN before it makes anything
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace tfm::cpu
