// Built without MPI: every run is a single process, even under mpirun (each rank then writes its
// own report, which the README warns about).
#include "infrabench/communicator.h"

namespace infrabench {

std::unique_ptr<communicator> make_communicator(int*, char***) {
  return make_single_communicator();
}

}  // namespace infrabench
