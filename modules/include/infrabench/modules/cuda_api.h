/* libinfrabench_cuda.so and libinfrabench_nccl.so: the GPU benchmarks, and the NCCL collectives.
 * Like the MPI module (mpi_api.h) they are part of the same build as the executable: their
 * benchmarks register into the executable's registry when they load, and they resolve the harness
 * from the executable's exported symbols. Their own symbols are hidden, so the core's `_none`
 * answers (probe_cuda_none.cpp, gpu_trainer_none.cpp, ...) are never replaced by name: the
 * modules set the core's hooks instead (backend_loader.h: provide), which the `_none` answers
 * call when set. Their table is the header alone: its version names the libraries
 * ("cudart 13.0, cuBLAS 13.1.0"; "NCCL 2.28.9").
 *
 * The CUDA module links cudart, cuBLAS and cuBLASLt; the NCCL module links NCCL, cudart and MPI
 * and is loaded only once the MPI and CUDA modules have (its collectives exchange NCCL's id with
 * MPI_Bcast). Neither depends on a Debian package: the toolkit's libraries are found by the
 * dynamic loader (ld.so.conf, LD_LIBRARY_PATH, or the toolkit's directory as a run path).
 */
#ifndef INFRABENCH_MODULES_CUDA_API_H
#define INFRABENCH_MODULES_CUDA_API_H

#include "infrabench/module_abi.h"

#define INFRABENCH_CUDA_ABI_VERSION 1u
#define INFRABENCH_NCCL_ABI_VERSION 1u

#endif /* INFRABENCH_MODULES_CUDA_API_H */
