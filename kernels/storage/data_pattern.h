// The bytes infrabench writes into its scratch data: incompressible (each 8-byte word is a
// splitmix64 output, so no compressing or deduplicating device can shortcut the reads) and a pure
// function of (seed, byte offset), so any byte read back can be checked without storing a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace infrabench::kernels::storage {

// The 8-byte word at byte offset 8*index of a stream with this seed.
[[nodiscard]] std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index);

// Writes the stream's bytes [offset, offset + out.size()) into out. Any offset and length.
void fill_pattern(std::uint64_t seed, std::uint64_t offset, std::span<std::byte> out);

struct pattern_mismatch {
  std::uint64_t offset = 0;  // stream offset of the first differing byte
  std::uint8_t found = 0;
  std::uint8_t expected = 0;
};

// The first byte of `data` that differs from the stream at `offset`, if any.
[[nodiscard]] std::optional<pattern_mismatch> check_pattern(std::uint64_t seed,
                                                            std::uint64_t offset,
                                                            std::span<const std::byte> data);

// The seed of sample file `index` of a data set (each file is its own stream from offset 0).
[[nodiscard]] std::uint64_t sample_seed(std::uint64_t dataset_seed, std::uint64_t index);

}  // namespace infrabench::kernels::storage
