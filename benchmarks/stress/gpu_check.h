// The device side of stress/gpu (gpu_check.cu): random inputs, and checks that count elements
// differing from a reference, so the stress verifies its results while it runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace infrabench::stress {

// n bf16 values (stored as uint16) uniform in [-1, 1), from a hash of (seed, index).
void fill_bf16(std::uint16_t* p, std::size_t n, std::uint64_t seed, cudaStream_t s);
// n 64-bit words from a hash of (seed, index).
void fill_words(std::uint64_t* p, std::size_t n, std::uint64_t seed, cudaStream_t s);
// Adds to *bad the elements with |c - ref| > rel * |ref| + abs.
void count_float_mismatches(const float* c, const float* ref, std::size_t n, float rel, float abs,
                            unsigned long long* bad, cudaStream_t s);
// Adds to *bad the words that differ.
void count_word_mismatches(const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                           unsigned long long* bad, cudaStream_t s);

}  // namespace infrabench::stress
