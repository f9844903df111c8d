// Our own sum all-reduce algorithms over MPI point-to-point, to compare with MPI_Allreduce (which
// picks among its own by size and rank count): a chunked, pipelined ring (reduce-scatter then
// all-gather, as NCCL does it) and recursive doubling (log2 n exchange-and-reduce rounds).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "cpu/reduce.h"

namespace infrabench::collectives {

// Scratch bytes the algorithms need beyond the two buffers.
[[nodiscard]] std::size_t ring_scratch_bytes(std::size_t count, std::size_t elem, int n);
[[nodiscard]] std::size_t rd_scratch_bytes(std::size_t count, std::size_t elem);

// sendbuf == recvbuf: in place. `chunk_bytes`: pipelining granularity. `scratch` has at least the
// bytes above. Throws std::runtime_error on an MPI error.
void ring_allreduce(const void* sendbuf, void* recvbuf, std::size_t count,
                    kernels::cpu::reduce_dtype t, std::size_t chunk_bytes, void* scratch,
                    MPI_Comm comm);
void recursive_doubling_allreduce(const void* sendbuf, void* recvbuf, std::size_t count,
                                  kernels::cpu::reduce_dtype t, std::size_t chunk_bytes,
                                  void* scratch, MPI_Comm comm);

}  // namespace infrabench::collectives
