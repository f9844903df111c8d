/* libinfrabench_mpi.so: the MPI communicator (harness/src/comm_mpi.cpp) and the benchmarks that
 * call MPI themselves (collectives/mpi_*, collectives/pairwise, and collectives/nccl_* which
 * exchange NCCL's id over MPI). Unlike the reference-library modules this one is part of the same
 * build as the executable: its benchmarks register into the executable's registry when it is
 * loaded, and it resolves the harness from the executable's exported symbols. So C++ objects and
 * exceptions may cross this table; the abi version and id still refuse a module of another build.
 */
#ifndef INFRABENCH_MODULES_MPI_API_H
#define INFRABENCH_MODULES_MPI_API_H

#include "infrabench/module_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INFRABENCH_MPI_ABI_VERSION 1u

typedef struct infrabench_mpi_api {
  infrabench_module_header header; /* version: MPI_Get_library_version's first line */
  /* Initialises MPI and returns a new infrabench::communicator (the caller owns it). Throws
   * (a std::exception) when MPI cannot start. */
  void* (*make_communicator)(int* argc, char*** argv);
  /* MPI_VERSION.MPI_SUBVERSION of the headers the module was built with. */
  int mpi_version, mpi_subversion;
} infrabench_mpi_api;

#ifdef __cplusplus
}
#endif

#endif /* INFRABENCH_MODULES_MPI_API_H */
