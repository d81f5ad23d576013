// world() of a build without MPI (TFM_MPI off, or MPI not found): always one process.
#include "dist/communicator.h"

namespace tfm::dist {

Communicator& world() { return single_process(); }

}  // namespace tfm::dist
