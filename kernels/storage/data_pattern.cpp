#include "storage/data_pattern.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

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

stamped_pattern::stamped_pattern(std::uint64_t seed, std::uint64_t period)
    : m_seed(mix(seed ^ 0x636b7074)) {  // "ckpt": a stream of its own, not the data set's
  if (period == 0) throw std::invalid_argument("stamped_pattern: period must be > 0");
  m_template.resize(static_cast<std::size_t>(period));
  fill_pattern(m_seed, 0, m_template);
}

std::uint64_t stamped_pattern::stamp(std::uint64_t block) const {
  return mix(m_seed + (block + 1) * golden) ^ golden;
}

void stamped_pattern::fill(std::uint64_t offset, std::span<std::byte> out) const {
  const std::uint64_t period = m_template.size();
  for (std::size_t i = 0; i < out.size();) {
    const std::uint64_t phase = (offset + i) % period;
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(period - phase, out.size() - i));
    std::memcpy(out.data() + i, m_template.data() + phase, n);
    i += n;
  }
  restamp(offset, out);
}

void stamped_pattern::restamp(std::uint64_t offset, std::span<std::byte> out) const {
  // Every block that starts inside [offset - 7, offset + size) has stamp bytes here.
  const std::uint64_t end = offset + out.size();
  for (std::uint64_t b = offset / stamp_block; b * stamp_block < end; ++b) {
    const std::uint64_t word = stamp(b);
    const std::uint64_t from = std::max(b * stamp_block, offset);
    const std::uint64_t to = std::min(b * stamp_block + 8, end);
    for (std::uint64_t o = from; o < to; ++o) {
      out[static_cast<std::size_t>(o - offset)] =
          std::byte{static_cast<std::uint8_t>(word >> (8 * (o - b * stamp_block)))};
    }
  }
}

std::optional<pattern_mismatch> stamped_pattern::check(std::uint64_t offset,
                                                       std::span<const std::byte> data) const {
  const std::uint64_t period = m_template.size();
  const std::uint64_t end = offset + data.size();
  // Segments that end at a block or period boundary: a stamp (first 8 bytes of a block) or a
  // stretch of the template, compared with memcmp.
  for (std::uint64_t o = offset; o < end;) {
    const std::uint64_t in_block = o % stamp_block;
    if (in_block < 8) {
      const std::uint64_t word = stamp(o / stamp_block);
      const std::uint64_t stop = std::min(end, o - in_block + 8);
      for (; o < stop; ++o) {
        const auto want = static_cast<std::uint8_t>(word >> (8 * (o % stamp_block)));
        const auto got = static_cast<std::uint8_t>(data[static_cast<std::size_t>(o - offset)]);
        if (got != want) return pattern_mismatch{o, got, want};
      }
      continue;
    }
    const std::uint64_t phase = o % period;
    const std::uint64_t stop = std::min({end, o - in_block + stamp_block, o + (period - phase)});
    const std::byte* got = data.data() + (o - offset);
    const std::byte* want = m_template.data() + phase;
    const auto n = static_cast<std::size_t>(stop - o);
    if (std::memcmp(got, want, n) != 0) {
      for (std::size_t k = 0; k < n; ++k) {
        if (got[k] != want[k]) {
          return pattern_mismatch{o + k, static_cast<std::uint8_t>(got[k]),
                                  static_cast<std::uint8_t>(want[k])};
        }
      }
    }
    o = stop;
  }
  return std::nullopt;
}

}  // namespace infrabench::kernels::storage
