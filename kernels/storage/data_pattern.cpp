#include "storage/data_pattern.h"

#include <bit>
#include <cstring>

namespace infrabench::kernels::storage {
namespace {

// Words are stored little-endian; on the hosts we build for (x86-64, aarch64) that is memcpy.
static_assert(std::endian::native == std::endian::little,
              "data_pattern assumes a little-endian host");

[[nodiscard]] inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ull;

[[nodiscard]] inline std::uint8_t stream_byte(std::uint64_t seed, std::uint64_t offset) {
  return static_cast<std::uint8_t>(pattern_word(seed, offset / 8) >> (8 * (offset % 8)));
}

}  // namespace

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) {
  return mix(seed + (index + 1) * golden);
}

std::uint64_t sample_seed(std::uint64_t dataset_seed, std::uint64_t index) {
  return mix(dataset_seed ^ mix(index + golden));
}

void fill_pattern(std::uint64_t seed, std::uint64_t offset, std::span<std::byte> out) {
  std::size_t i = 0;
  const std::size_t n = out.size();
  for (; i < n && (offset + i) % 8 != 0; ++i) out[i] = std::byte{stream_byte(seed, offset + i)};
  for (std::uint64_t w = (offset + i) / 8; i + 8 <= n; i += 8, ++w) {
    const std::uint64_t v = pattern_word(seed, w);
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = std::byte{stream_byte(seed, offset + i)};
}

std::optional<pattern_mismatch> check_pattern(std::uint64_t seed, std::uint64_t offset,
                                              std::span<const std::byte> data) {
  const std::size_t n = data.size();
  auto check_bytes = [&](std::size_t from, std::size_t to) -> std::optional<pattern_mismatch> {
    for (std::size_t k = from; k < to; ++k) {
      const std::uint8_t want = stream_byte(seed, offset + k);
      const auto got = static_cast<std::uint8_t>(data[k]);
      if (got != want) return pattern_mismatch{offset + k, got, want};
    }
    return std::nullopt;
  };
  std::size_t i = 0;
  while (i < n && (offset + i) % 8 != 0) ++i;
  if (auto m = check_bytes(0, i)) return m;
  for (std::uint64_t w = (offset + i) / 8; i + 8 <= n; i += 8, ++w) {
    std::uint64_t got = 0;
    std::memcpy(&got, data.data() + i, 8);
    if (got != pattern_word(seed, w)) return check_bytes(i, i + 8);
  }
  return check_bytes(i, n);
}

}  // namespace infrabench::kernels::storage
