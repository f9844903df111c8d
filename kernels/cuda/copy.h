// Copy, pattern, checksum and pointer-chase kernels for the GPU data-movement benchmarks. Plain
// host functions around the launches, so benchmark files compile with the host compiler; every
// function returns the cudaError_t of its launch as an int. `stream` is a cudaStream_t and must
// belong to the current device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace infrabench::kernels::cuda {

// SM copy (nvbandwidth's "_sm" tests): a grid-stride kernel moves 16-byte vectors when both
// pointers are 16-byte aligned, bytes otherwise, with `blocks` blocks of 512 threads. dst and
// src may be device memory, a peer's memory (peer access enabled) or mapped pinned host memory.
int launch_copy(void* dst, const void* src, std::size_t bytes, int blocks, void* stream);

// Both directions of a bidirectional SM copy in one kernel (nvbandwidth's split-warp copy): even
// warps copy src0 -> dst0, odd warps src1 -> dst1, `bytes` each, with `blocks` blocks of 512
// threads, so the two directions share every SM instead of two kernels competing for them.
// Pointers that are not all 16-byte aligned fall back to two byte-copy kernels.
int launch_copy_split(void* dst0, const void* src0, void* dst1, const void* src1, std::size_t bytes,
                      int blocks, void* stream);

// Writes the pattern of topology::fill_pattern(seed) into device memory.
int launch_fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed, int blocks, void* stream);

// Adds topology::checksum(data, bytes) to *sum (device memory the caller zeroed); the sum modulo
// 2^64 does not depend on the order of the additions, so the result equals the CPU reference.
int launch_checksum(const void* data, std::size_t bytes, unsigned long long* sum, int blocks,
                    void* stream);

// One thread follows `steps` links from `start`, where each link is the 8-byte address of the
// next (device or mapped host memory), with loads that bypass L1 (ld.global.cg), and stores the
// address it ends on in *end (device memory).
int launch_chase(const void* start, std::uint64_t steps, unsigned long long* end, void* stream);

}  // namespace infrabench::kernels::cuda
