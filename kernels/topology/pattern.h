// Data patterns and checksums that prove a copy moved the right bytes to the right places. The
// mixing functions are shared with the CUDA kernels (kernels/cuda/copy_checksum.cu) so the GPU and
// this CPU reference compute the same checksum of the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#define INFRABENCH_HOST_DEVICE __host__ __device__
#else
#define INFRABENCH_HOST_DEVICE
#endif

namespace infrabench::kernels::topology {

// splitmix64's finaliser: a bijection of 64-bit words in which every input bit affects every
// output bit.
INFRABENCH_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Word `i` of the pattern for `seed`: pseudo-random, so a stale, shifted or zeroed region differs.
INFRABENCH_HOST_DEVICE inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t i) {
  return mix64(seed * 0x9e3779b97f4a7c15ULL + i + 1);
}

// One word's contribution to a checksum: it depends on the word and on its position, so swapped
// or misplaced words change the sum, while the sum itself does not depend on the order in which
// threads add the terms (addition modulo 2^64 commutes).
INFRABENCH_HOST_DEVICE inline std::uint64_t checksum_term(std::uint64_t index, std::uint64_t word) {
  return mix64(word ^ (index * 0xd6e8feb86659fd93ULL));
}

// The buffer's bytes as little-endian 64-bit words (a final partial word zero-padded); the sum of
// checksum_term(i, word_i) modulo 2^64.
[[nodiscard]] std::uint64_t checksum(const void* data, std::size_t bytes);
// Writes the pattern for `seed`: word i is pattern_word(seed, i) in little-endian byte order; a
// final partial word gets the leading bytes of the next pattern word.
void fill_pattern(void* data, std::size_t bytes, std::uint64_t seed);
// checksum() of a buffer filled by fill_pattern(seed), computed without the buffer.
[[nodiscard]] std::uint64_t pattern_checksum(std::uint64_t seed, std::size_t bytes);
// Offset of the first byte that differs from the pattern for `seed`, or nullopt when none does.
[[nodiscard]] std::optional<std::size_t> find_pattern_mismatch(const void* data, std::size_t bytes,
                                                               std::uint64_t seed);

// The comparator: nullopt when `actual` equals `expected`, else one line naming what was checked
// and both values in hex ("GPU 1 destination: checksum 0x... != expected 0x...").
[[nodiscard]] std::optional<std::string> compare_checksum(std::uint64_t expected,
                                                          std::uint64_t actual,
                                                          std::string_view what);

}  // namespace infrabench::kernels::topology
