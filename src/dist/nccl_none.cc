// dist::nccl() of a build without CUDA or without NCCL's header: refused, saying why.
#include "core/error.h"
#include "dist/device_communicator.h"

namespace tfm::dist {

std::unique_ptr<DeviceCommunicator> nccl(Communicator&) {
  throw Error(
      "training on several GPUs needs NCCL, and this build has none (configured without CUDA, or without "
      "NCCL's header nccl.h)");
}

std::string device_engine() { return {}; }

}  // namespace tfm::dist
