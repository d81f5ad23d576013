// world() of a build without MPI (TFM_MPI off, or MPI not found): always one process. Started by
// an MPI launcher with several processes, each would train alone into the same run folder: refused.
#include "core/error.h"
#include "dist/communicator.h"

namespace tfm::dist {

std::string engine() { return {}; }

Communicator& world() {
  const int n = launcher_size();
  TFM_CHECK(n <= 1, "started by an MPI launcher with ", n,
            " processes, but this build has no MPI (it was configured with TFM_MPI=OFF, or without MPI "
            "installed): install Open MPI (scripts/install-deps.sh) and rebuild, or run one process");
  return detail::mark_started(single_process());
}

}  // namespace tfm::dist
