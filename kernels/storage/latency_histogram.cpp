#include "storage/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace infrabench::kernels::storage {
namespace {

constexpr int s_bits = latency_histogram::sub_bucket_bits;
constexpr std::uint64_t s_count = latency_histogram::sub_buckets;
// Group 0 holds [0, 2^s) exactly; group g >= 1 holds [2^(s+g-1), 2^(s+g)) in buckets of 2^(g-1).
constexpr std::size_t groups = 64 - s_bits + 1;

}  // namespace

latency_histogram::latency_histogram() : m_counts(bucket_count(), 0) {}

std::size_t latency_histogram::bucket_count() {
  return groups * s_count;
}

std::size_t latency_histogram::bucket_of(std::uint64_t ns) {
  if (ns < s_count) return static_cast<std::size_t>(ns);
  const int msb = 63 - std::countl_zero(ns);  // >= s_bits
  const int shift = msb - s_bits;             // bucket width is 2^shift
  const std::uint64_t sub = (ns >> shift) - s_count;
  return static_cast<std::size_t>((static_cast<std::uint64_t>(shift) + 1) * s_count + sub);
}

std::uint64_t latency_histogram::bucket_lower(std::size_t bucket) {
  const std::size_t group = bucket / s_count;
  const std::uint64_t sub = bucket % s_count;
  if (group == 0) return sub;
  return (s_count + sub) << (group - 1);
}

std::uint64_t latency_histogram::bucket_width(std::size_t bucket) {
  const std::size_t group = bucket / s_count;
  return group == 0 ? 1 : std::uint64_t{1} << (group - 1);
}

void latency_histogram::record_n(std::uint64_t ns, std::uint64_t count) {
  if (count == 0) return;
  m_counts[bucket_of(ns)] += count;
  m_min = m_count == 0 ? ns : std::min(m_min, ns);
  m_max = std::max(m_max, ns);
  m_count += count;
  const auto v = static_cast<long double>(ns);
  m_sum += v * static_cast<long double>(count);
  m_sum_sq += v * v * static_cast<long double>(count);
}

void latency_histogram::merge(const latency_histogram& other) {
  if (other.m_count == 0) return;
  for (std::size_t i = 0; i < m_counts.size(); ++i) m_counts[i] += other.m_counts[i];
  m_min = m_count == 0 ? other.m_min : std::min(m_min, other.m_min);
  m_max = std::max(m_max, other.m_max);
  m_count += other.m_count;
  m_sum += other.m_sum;
  m_sum_sq += other.m_sum_sq;
}

void latency_histogram::reset() {
  std::fill(m_counts.begin(), m_counts.end(), 0);
  m_count = m_min = m_max = 0;
  m_sum = m_sum_sq = 0;
}

double latency_histogram::mean() const {
  return m_count ? static_cast<double>(m_sum / static_cast<long double>(m_count)) : 0.0;
}

double latency_histogram::stdev() const {
  if (m_count < 2) return 0;
  const auto n = static_cast<long double>(m_count);
  // The two sums in 80 bits: with the values' squares up to 1e20 ns^2 their difference keeps
  // about 19 digits, far more than a spread of a thousandth of the mean needs. Rounding can
  // still leave it a hair below 0 when every value is equal.
  const long double var = (m_sum_sq - m_sum * m_sum / n) / (n - 1);
  return var > 0 ? static_cast<double>(std::sqrt(var)) : 0.0;
}

double latency_histogram::percentile(double p) const {
  if (m_count == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  // Nearest rank: the smallest value with at least ceil(p/100 * n) values at or below it.
  const double exact_rank = std::ceil(p / 100.0 * static_cast<double>(m_count) - 1e-9);
  const std::uint64_t rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(exact_rank));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < m_counts.size(); ++b) {
    seen += m_counts[b];
    if (seen >= rank) {
      const double mid =
          static_cast<double>(bucket_lower(b)) + (static_cast<double>(bucket_width(b)) - 1.0) / 2.0;
      return std::clamp(mid, static_cast<double>(m_min), static_cast<double>(m_max));
    }
  }
  return static_cast<double>(m_max);
}

}  // namespace infrabench::kernels::storage
