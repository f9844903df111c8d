// Which offsets a job reads. A target is split into one region of whole blocks per job; a job reads
// every block of its region exactly once per pass, in order (sequential) or in a fresh random
// permutation each pass (random, like fio's default random map: no block twice, none skipped).
// The permutation is computed, not stored, so a 16 TB device needs no table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace infrabench::kernels::storage {

enum class access_pattern { sequential, random };

[[nodiscard]] std::optional<access_pattern> parse_access_pattern(std::string_view name);

struct io_region {
  std::uint64_t begin = 0;   // byte offset, a multiple of the block size
  std::uint64_t blocks = 0;  // whole blocks; the region is [begin, begin + blocks * block_size)
};

// Splits the first floor(target_bytes / block_size) blocks into `jobs` contiguous regions whose
// sizes differ by at most one block. A tail shorter than one block is never read. Throws
// std::invalid_argument when there are fewer blocks than jobs or an argument is zero.
[[nodiscard]] std::vector<io_region> split_regions(std::uint64_t target_bytes,
                                                   std::uint64_t block_size, std::uint64_t jobs);

// A bijection of [0, n) chosen by `key`: a keyed mix on the next power of two, walked until the
// value lands below n (cycle walking keeps it a bijection). Public for tests.
class block_permutation {
 public:
  block_permutation(std::uint64_t n, std::uint64_t key);
  [[nodiscard]] std::uint64_t operator()(std::uint64_t i) const;

 private:
  [[nodiscard]] std::uint64_t mix(std::uint64_t x) const;

  std::uint64_t m_n;
  std::uint64_t m_mask;
  unsigned m_shift;
  std::uint64_t m_keys[3];
};

class io_plan {
 public:
  io_plan(access_pattern pattern, io_region region, std::uint64_t block_size, std::uint64_t seed);

  // Byte offset of the next read; passes repeat without end.
  [[nodiscard]] std::uint64_t next();
  [[nodiscard]] std::uint64_t block_size() const { return m_block_size; }
  [[nodiscard]] std::uint64_t blocks_per_pass() const { return m_region.blocks; }
  [[nodiscard]] std::uint64_t pass() const { return m_pass; }

 private:
  access_pattern m_pattern;
  io_region m_region;
  std::uint64_t m_block_size;
  std::uint64_t m_seed;
  std::uint64_t m_pass = 0;
  std::uint64_t m_index = 0;
  block_permutation m_perm;
};

}  // namespace infrabench::kernels::storage
