#include "storage/io_plan.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::storage {
namespace {

[[nodiscard]] std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::optional<access_pattern> parse_access_pattern(std::string_view name) {
  if (name == "seq") return access_pattern::sequential;
  if (name == "rand") return access_pattern::random;
  return std::nullopt;
}

std::vector<io_region> split_regions(std::uint64_t target_bytes, std::uint64_t block_size,
                                     std::uint64_t jobs) {
  if (block_size == 0 || jobs == 0) throw std::invalid_argument("block size and jobs must be > 0");
  const std::uint64_t blocks = target_bytes / block_size;
  if (blocks < jobs) {
    throw std::invalid_argument("the target holds " + std::to_string(blocks) +
                                " whole block(s) of " + std::to_string(block_size) +
                                " bytes, fewer than the " + std::to_string(jobs) +
                                " job(s) that need one each");
  }
  std::vector<io_region> regions;
  regions.reserve(jobs);
  std::uint64_t first = 0;
  for (std::uint64_t j = 0; j < jobs; ++j) {
    const std::uint64_t count = blocks / jobs + (j < blocks % jobs ? 1 : 0);
    regions.push_back({first * block_size, count});
    first += count;
  }
  return regions;
}

block_permutation::block_permutation(std::uint64_t n, std::uint64_t key) : m_n(n) {
  const unsigned bits = n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1));
  m_mask = bits == 0 ? 0 : (bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1);
  m_shift = bits / 2 == 0 ? 1 : bits / 2;
  for (std::uint64_t& k : m_keys) {
    key = splitmix64(key);
    k = key;
  }
}

std::uint64_t block_permutation::mix(std::uint64_t x) const {
  // Each step is a bijection on [0, 2^bits): adding a key, xor with a right shift of itself, and
  // multiplying by an odd number (all modulo 2^bits).
  for (const std::uint64_t k : m_keys) {
    x = (x + k) & m_mask;
    x ^= x >> m_shift;
    x = (x * (k | 1)) & m_mask;
  }
  return x;
}

std::uint64_t block_permutation::operator()(std::uint64_t i) const {
  if (m_n <= 1) return 0;
  std::uint64_t x = mix(i);
  while (x >= m_n) x = mix(x);  // < 2 steps on average: 2^bits < 2n
  return x;
}

io_plan::io_plan(access_pattern pattern, io_region region, std::uint64_t block_size,
                 std::uint64_t seed)
    : m_pattern(pattern),
      m_region(region),
      m_block_size(block_size),
      m_seed(seed),
      m_perm(region.blocks, seed) {
  if (block_size == 0 || region.blocks == 0) throw std::invalid_argument("empty I/O plan");
}

std::uint64_t io_plan::next() {
  const std::uint64_t block = m_pattern == access_pattern::sequential ? m_index : m_perm(m_index);
  if (++m_index == m_region.blocks) {
    m_index = 0;
    ++m_pass;
    if (m_pattern == access_pattern::random) {
      m_perm = block_permutation(m_region.blocks, m_seed + m_pass);  // a new order each pass
    }
  }
  return m_region.begin + block * m_block_size;
}

}  // namespace infrabench::kernels::storage
