// The bytes infrabench writes into its scratch data: incompressible (each 8-byte word is a
// splitmix64 output, so no compressing or deduplicating device can shortcut the reads) and a pure
// function of (seed, byte offset), so any byte read back can be checked without storing a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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

// Checkpoint data, made and checked at memory speed (the stream above costs a multiply pair per
// 8 bytes: ~1-4 GB/s per core, slower than the disks it would be timed against). A random
// template of `period` bytes (one write) repeats through the file, and the first 8 bytes of every
// 4 KiB block are replaced by a word unique to (seed, block): no two 4 KiB blocks of a file, or of
// two files with different seeds, are equal (nothing to deduplicate), and each is random
// (nothing to compress). A buffer is filled once with the template (fill) and only restamped for
// each later write at the same phase (restamp: 8 bytes per 4 KiB).
class stamped_pattern {
 public:
  static constexpr std::uint64_t stamp_block = 4096;

  // Throws std::invalid_argument for a zero period.
  stamped_pattern(std::uint64_t seed, std::uint64_t period);

  // Writes the file's bytes [offset, offset + out.size()) into out.
  void fill(std::uint64_t offset, std::span<std::byte> out) const;
  // The same, for a buffer that already holds the bytes of some offset with the same
  // offset % period (only the stamps differ).
  void restamp(std::uint64_t offset, std::span<std::byte> out) const;
  // The first byte of `data` (the file's bytes at `offset`) that differs, if any.
  [[nodiscard]] std::optional<pattern_mismatch> check(std::uint64_t offset,
                                                      std::span<const std::byte> data) const;
  [[nodiscard]] std::uint64_t period() const { return m_template.size(); }

 private:
  [[nodiscard]] std::uint64_t stamp(std::uint64_t block) const;

  std::uint64_t m_seed;
  std::vector<std::byte> m_template;
};

}  // namespace infrabench::kernels::storage
