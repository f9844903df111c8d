// Device side of the NCCL collective benchmarks: fill buffers with the known per-rank inputs and
// count elements that differ from the expected result (kernels/cpu/reduce_pattern.h), so that
// verification never copies a large buffer back to the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/reduce_pattern.h"

namespace infrabench::kernels::cuda {

// buf[i] = rank's input of n ranks, pattern::reduction_input(t, rank, n, index_base + i) (the
// 8-bit floats' owned inputs; pattern::input otherwise), in element type t, on `stream`.
int launch_fill_pattern(void* buf, pattern::elem_type t, std::size_t count, std::size_t index_base,
                        int rank, int ranks, void* stream);
// Counts elements of a receive buffer (element type t) that differ from pattern::expected(rule,
// me, n, block, i, r) by more than the relative `tol` (pattern::tolerance) into *mismatches
// (device memory, zeroed first by the caller) on `stream`. Returns the launch's cudaError_t.
int launch_count_mismatches(const void* buf, pattern::elem_type t, std::size_t count,
                            pattern::result_rule rule, int me, int n, std::size_t block,
                            const pattern::reduction& r, double tol, unsigned long long* mismatches,
                            void* stream);

}  // namespace infrabench::kernels::cuda
