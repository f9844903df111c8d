// The log-linear latency histogram: bucket arithmetic, exact small values, and percentiles of
// known distributions within the stated relative error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "storage/latency_histogram.h"

namespace ks = infrabench::kernels::storage;

namespace {

// Nearest-rank percentile of the raw values: the reference the histogram must match.
double exact_percentile(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(
      std::max(1.0, std::ceil(p / 100.0 * static_cast<double>(v.size()) - 1e-9)));
  return static_cast<double>(v[rank - 1]);
}

void expect_close(double got, double want) {
  EXPECT_LE(std::fabs(got - want), want * ks::latency_histogram::max_relative_error + 1e-9)
      << "got " << got << " want " << want;
}

}  // namespace

TEST(StorageHistogram, BucketsTileTheRange) {
  // Every bucket starts where the previous one ended; lower(bucket_of(v)) <= v < lower + width.
  for (std::size_t b = 1; b + 1 < ks::latency_histogram::bucket_count(); ++b) {
    ASSERT_EQ(
        ks::latency_histogram::bucket_lower(b - 1) + ks::latency_histogram::bucket_width(b - 1),
        ks::latency_histogram::bucket_lower(b))
        << b;
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t v = rng() >> (rng() % 64);
    const std::size_t b = ks::latency_histogram::bucket_of(v);
    ASSERT_LE(ks::latency_histogram::bucket_lower(b), v);
    ASSERT_LT(v - ks::latency_histogram::bucket_lower(b), ks::latency_histogram::bucket_width(b));
  }
  EXPECT_LT(ks::latency_histogram::bucket_of(~std::uint64_t{0}),
            ks::latency_histogram::bucket_count());
}

TEST(StorageHistogram, SmallValuesAreExact) {
  ks::latency_histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_DOUBLE_EQ(h.percentile(50), 50);
  EXPECT_DOUBLE_EQ(h.percentile(99), 99);
  EXPECT_DOUBLE_EQ(h.percentile(100), 100);
  EXPECT_DOUBLE_EQ(h.percentile(0), 1);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
}

TEST(StorageHistogram, EmptyIsZero) {
  ks::latency_histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(99), 0);
  EXPECT_EQ(h.mean(), 0);
}

TEST(StorageHistogram, UniformDistributionPercentiles) {
  // 1..1e6 ns once each: the p-th percentile is p * 1e4 exactly.
  ks::latency_histogram h;
  for (std::uint64_t v = 1; v <= 1000000; ++v) h.record(v);
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99})
    expect_close(h.percentile(p), p * 1e4);
  EXPECT_NEAR(h.mean(), 500000.5, 1e-6);
}

TEST(StorageHistogram, ExponentialAndLogNormalMatchTheRawValues) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> expo(1.0 / 80000.0);  // mean 80 us
  std::lognormal_distribution<double> logn(std::log(200000.0), 1.0);
  for (int which = 0; which < 2; ++which) {
    ks::latency_histogram h;
    std::vector<std::uint64_t> raw;
    for (int i = 0; i < 200000; ++i) {
      const double x = which == 0 ? expo(rng) : logn(rng);
      raw.push_back(static_cast<std::uint64_t>(x) + 1);
      h.record(raw.back());
    }
    for (double p : {50.0, 90.0, 99.0, 99.9, 99.99})
      expect_close(h.percentile(p), exact_percentile(raw, p));
    double sum = 0;
    for (auto v : raw) sum += static_cast<double>(v);
    EXPECT_NEAR(h.mean(), sum / static_cast<double>(raw.size()), 1e-6 * h.mean());
  }
}

TEST(StorageHistogram, BimodalTailIsFound) {
  // 99% fast (10 us), 1% slow (5 ms): p99 is still fast, p99.9 is the slow mode.
  ks::latency_histogram h;
  h.record_n(10000, 99000);
  h.record_n(5000000, 1000);
  expect_close(h.percentile(50), 10000);
  expect_close(h.percentile(99), 10000);
  expect_close(h.percentile(99.9), 5000000);
  EXPECT_EQ(h.max(), 5000000u);
}

TEST(StorageHistogram, MergeEqualsRecordingEverything) {
  ks::latency_histogram a, b, all;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50000; ++i) {
    const std::uint64_t v = rng() % 10000000;
    (i % 3 == 0 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {1.0, 50.0, 99.0, 99.99}) EXPECT_DOUBLE_EQ(a.percentile(p), all.percentile(p));
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(50), 0);
}

TEST(StorageHistogram, MinAndStdevOfKnownLatencies) {
  // 2, 4, 4, 4, 5, 5, 7, 9 us: mean 5, sum of squared deviations 32, sample stdev sqrt(32 / 7).
  ks::latency_histogram h;
  for (std::uint64_t us : {4, 9, 2, 4, 5, 4, 7, 5}) h.record(us * 1000);
  EXPECT_EQ(h.min(), 2000u);
  EXPECT_EQ(h.max(), 9000u);
  EXPECT_DOUBLE_EQ(h.mean(), 5000.0);
  EXPECT_NEAR(h.stdev(), 1000.0 * std::sqrt(32.0 / 7.0), 1e-6);

  // Merged halves (two jobs) give what one histogram of all the values gives; a batch of equal
  // values (record_n) counts as that many.
  ks::latency_histogram a, b;
  for (std::uint64_t us : {4, 9, 2, 4}) a.record(us * 1000);
  b.record_n(5000, 2);
  for (std::uint64_t us : {4, 7}) b.record(us * 1000);
  a.merge(b);
  EXPECT_EQ(a.min(), 2000u);
  EXPECT_NEAR(a.stdev(), h.stdev(), 1e-6);

  // Equal values: no spread, never a negative variance's NaN; fewer than two values: 0.
  ks::latency_histogram same;
  same.record_n(123456789, 1000);
  EXPECT_EQ(same.stdev(), 0.0);
  ks::latency_histogram one;
  one.record(10);
  EXPECT_EQ(one.stdev(), 0.0);
  one.reset();
  EXPECT_EQ(one.min(), 0u);
  EXPECT_EQ(one.stdev(), 0.0);
}

TEST(StorageHistogram, StdevKeepsASmallSpreadOnALargeMean) {
  // 1e6 reads around 10 ms with a spread of 1 us: the difference of the two sums must keep it.
  ks::latency_histogram h;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> d(10e6, 1000);
  double sum = 0, sum_sq = 0;
  std::vector<std::uint64_t> v;
  for (int i = 0; i < 1000000; ++i) v.push_back(static_cast<std::uint64_t>(std::llround(d(rng))));
  for (auto x : v) {
    h.record(x);
    sum += static_cast<double>(x);
  }
  const double mean = sum / static_cast<double>(v.size());
  for (auto x : v) sum_sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  const double want = std::sqrt(sum_sq / static_cast<double>(v.size() - 1));
  EXPECT_NEAR(h.stdev(), want, want * 1e-6);
}
