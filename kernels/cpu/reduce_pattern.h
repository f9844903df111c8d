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

// What a collective leaves in a receive buffer, by the shape of its result (one rule may serve
// several collectives; benchmarks/collectives/model.h names the rule of each).
enum class result_rule {
  sum,            // every rank: the element-wise sum of all ranks' inputs (all-reduce)
  gather,         // every rank: block r holds rank r's input block (all-gather)
  sum_own_block,  // rank me: block me of the sum (reduce-scatter)
  root_input,     // every rank: rank 0's input (broadcast from rank 0)
  exchange,       // rank me: block r holds block me of rank r's input (all-to-all)
};

// Element i of rank `me`'s receive buffer after a collective with result `rule` over n ranks
// (`block` elements per rank; `rank_sum_n` = rank_sum(n), computed once). The same code checks
// on the host (MPI) and on the device (NCCL).
INFRABENCH_HD inline double expected(result_rule rule, int me, int n, std::size_t block,
                                     std::size_t i, double rank_sum_n) {
  switch (rule) {
    case result_rule::sum:
      return sum(rank_sum_n, n, i);
    case result_rule::gather:
      return input(static_cast<int>(i / block), i % block);
    case result_rule::sum_own_block:
      return sum(rank_sum_n, n, static_cast<std::size_t>(me) * block + i);
    case result_rule::root_input:
      return input(0, i);
    case result_rule::exchange:
      return input(static_cast<int>(i / block), static_cast<std::size_t>(me) * block + i % block);
  }
  return 0;
}

}  // namespace infrabench::kernels::pattern
