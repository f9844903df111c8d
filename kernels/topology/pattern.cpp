#include "topology/pattern.h"

#include <cstdio>
#include <cstring>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] std::uint64_t load_le(const unsigned char* p, std::size_t n) {
  // x86-64 and NVIDIA GPUs are little-endian; memcpy of a partial word into a zeroed one gives
  // the zero-padded little-endian value on both.
  std::uint64_t w = 0;
  std::memcpy(&w, p, n);
  return w;
}

}  // namespace

std::uint64_t checksum(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t words = bytes / 8;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) sum += checksum_term(i, load_le(p + 8 * i, 8));
  if (const std::size_t tail = bytes % 8; tail != 0) {
    sum += checksum_term(words, load_le(p + 8 * words, tail));
  }
  return sum;
}

void fill_pattern(void* data, std::size_t bytes, std::uint64_t seed) {
  auto* p = static_cast<unsigned char*>(data);
  const std::size_t words = bytes / 8;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t w = pattern_word(seed, i);
    std::memcpy(p + 8 * i, &w, 8);
  }
  if (const std::size_t tail = bytes % 8; tail != 0) {
    const std::uint64_t w = pattern_word(seed, words);
    std::memcpy(p + 8 * words, &w, tail);
  }
}

std::uint64_t pattern_checksum(std::uint64_t seed, std::size_t bytes) {
  const std::size_t words = bytes / 8;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) sum += checksum_term(i, pattern_word(seed, i));
  if (const std::size_t tail = bytes % 8; tail != 0) {
    const std::uint64_t mask = (std::uint64_t{1} << (8 * tail)) - 1;
    sum += checksum_term(words, pattern_word(seed, words) & mask);
  }
  return sum;
}

std::optional<std::size_t> find_pattern_mismatch(const void* data, std::size_t bytes,
                                                 std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t words = (bytes + 7) / 8;
  for (std::size_t i = 0; i < words; ++i) {
    const std::size_t n = i * 8 + 8 <= bytes ? 8 : bytes - i * 8;
    const std::uint64_t expected = pattern_word(seed, i);
    unsigned char want[8];
    std::memcpy(want, &expected, 8);
    if (std::memcmp(p + 8 * i, want, n) == 0) continue;
    for (std::size_t b = 0; b < n; ++b) {
      if (p[8 * i + b] != want[b]) return 8 * i + b;
    }
  }
  return std::nullopt;
}

std::optional<std::string> compare_checksum(std::uint64_t expected, std::uint64_t actual,
                                            std::string_view what) {
  if (expected == actual) return std::nullopt;
  char buf[96];
  std::snprintf(buf, sizeof buf, ": checksum 0x%016llx != expected 0x%016llx",
                static_cast<unsigned long long>(actual), static_cast<unsigned long long>(expected));
  return std::string(what) + buf;
}

}  // namespace infrabench::kernels::topology
