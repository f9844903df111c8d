// The known per-rank inputs of the collective benchmarks and the results they must produce, on the
// host and (compiled by nvcc) on the device. Every value is a small integer, so every partial sum
// is exact in float32 whatever order a library adds in (below 2^24 for up to ~200k ranks): a
// result is either exactly right or wrong.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define INFRABENCH_HD __host__ __device__
#else
#define INFRABENCH_HD
#endif

namespace infrabench::kernels::pattern {

// Rank r's input element i.
INFRABENCH_HD inline double input(int rank, std::size_t i) {
  return 1.0 + static_cast<double>(rank % 61) + static_cast<double>(i % 13);
}

// sum over r < n of (1 + r % 61): the part of the all-reduce sum that does not depend on i.
INFRABENCH_HD inline double rank_sum(int n) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += 1.0 + static_cast<double>(r % 61);
  return s;
}

// Element i of the sum over n ranks, given rank_sum(n).
INFRABENCH_HD inline double sum(double rank_sum_n, int n, std::size_t i) {
  return rank_sum_n + static_cast<double>(n) * static_cast<double>(i % 13);
}

}  // namespace infrabench::kernels::pattern
