// A log-linear latency histogram (HdrHistogram's layout, fio's idea): values below 2^7 ns are
// counted exactly; above, each power of two is split into 128 equal buckets. A percentile is
// reported as the midpoint of its bucket, so its relative error is at most 2^-8 = 0.39% (fio uses
// 64 buckets per power of two: 0.78%). Recording is O(1) with no allocation; histograms of
// separate threads merge by adding counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace infrabench::kernels::storage {

class latency_histogram {
 public:
  static constexpr int sub_bucket_bits = 7;
  static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bucket_bits;
  // Bound on |reported - true| / true for any percentile (half a bucket over its lower edge).
  static constexpr double max_relative_error = 1.0 / static_cast<double>(2 * sub_buckets);

  latency_histogram();

  void record(std::uint64_t ns) { record_n(ns, 1); }
  void record_n(std::uint64_t ns, std::uint64_t count);
  void merge(const latency_histogram& other);
  void reset();

  [[nodiscard]] std::uint64_t count() const { return m_count; }
  [[nodiscard]] std::uint64_t min() const { return m_count ? m_min : 0; }
  [[nodiscard]] std::uint64_t max() const { return m_max; }
  // Exact: from the running sum, not from the buckets.
  [[nodiscard]] double mean() const;
  // Sample standard deviation (n - 1, as fio's), from the running sums of the values and of their
  // squares (long double, not the buckets); 0 for fewer than two values.
  [[nodiscard]] double stdev() const;
  // Nearest-rank percentile, p in [0, 100]: the value v such that ceil(p/100 * n) recorded values
  // are <= v, reported as its bucket's midpoint and clamped to [min, max]. 0 when empty.
  [[nodiscard]] double percentile(double p) const;

  // Bucket arithmetic, public for tests.
  [[nodiscard]] static std::size_t bucket_of(std::uint64_t ns);
  [[nodiscard]] static std::uint64_t bucket_lower(std::size_t bucket);
  [[nodiscard]] static std::uint64_t bucket_width(std::size_t bucket);
  [[nodiscard]] static std::size_t bucket_count();

 private:
  std::vector<std::uint64_t> m_counts;
  std::uint64_t m_count = 0;
  std::uint64_t m_min = 0;
  std::uint64_t m_max = 0;
  long double m_sum = 0;
  long double m_sum_sq = 0;
};

}  // namespace infrabench::kernels::storage
