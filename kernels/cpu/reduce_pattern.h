// The known per-rank inputs of the collective benchmarks and the results they must produce, on the
// host and (compiled by nvcc) on the device. Every input is a small integer (1..73), so every
// partial sum, maximum and minimum is exact in float32 and int32 whatever order a library adds in
// (below 2^24 for up to ~200k ranks): such a result is either exactly right or wrong. What is not
// exact (float16/bfloat16 sums past 2^11 / 2^8, a floating-point average) is checked against a
// relative bound (tolerance below), nccl-tests' way of checking the half-precision types.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define INFRABENCH_HD __host__ __device__
#else
#define INFRABENCH_HD
#endif

namespace infrabench::kernels::pattern {

// The element types of the collectives (nccl-tests' -d), and the reductions (its -o). avg is a
// sum divided by the rank count after the reduction, as NCCL's ncclAvg (truncating for integers).
enum class elem_type { float32, float64, float16, bfloat16, int32, float8_e4m3, float8_e5m2 };
enum class red_op { sum, max, min, avg };

INFRABENCH_HD inline std::size_t elem_size(elem_type t) {
  switch (t) {
    case elem_type::float64:
      return 8;
    case elem_type::float16:
    case elem_type::bfloat16:
      return 2;
    case elem_type::float8_e4m3:
    case elem_type::float8_e5m2:
      return 1;
    default:
      return 4;
  }
}

// Rank r's input element i.
INFRABENCH_HD inline double input(int rank, std::size_t i) {
  return 1.0 + static_cast<double>(rank % 61) + static_cast<double>(i % 13);
}

// Whether element i has one owner rank (the 8-bit floats: see the top of this file).
INFRABENCH_HD inline bool owned_elements(elem_type t) {
  return t == elem_type::float8_e4m3 || t == elem_type::float8_e5m2;
}
// The owner's value of element i (1..8, exact in E4M3 and E5M2), and rank r's input of n ranks:
// that value on rank i % n, 0 elsewhere.
INFRABENCH_HD inline double owned_value(std::size_t i) {
  return 1.0 + static_cast<double>(i % 8);
}
INFRABENCH_HD inline double owned_input(int rank, int n, std::size_t i) {
  return static_cast<std::size_t>(rank) == i % static_cast<std::size_t>(n) ? owned_value(i) : 0.0;
}
// Rank r's input element i of a reduction in type t over n ranks.
INFRABENCH_HD inline double reduction_input(elem_type t, int rank, int n, std::size_t i) {
  return owned_elements(t) ? owned_input(rank, n, i) : input(rank, i);
}

// sum over r < n of (1 + r % 61): the part of the all-reduce sum that does not depend on i.
INFRABENCH_HD inline double rank_sum(int n) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += 1.0 + static_cast<double>(r % 61);
  return s;
}

// A reduction over n ranks, with its rank-dependent part computed once (rank_term): element i of
// the result is reduce_value(r, i).
struct reduction {
  red_op op = red_op::sum;
  bool integer = false;  // an integer type: avg truncates
  bool owned = false;    // one owner per element (owned_input)
  int n = 1;
  double rank_term = 0;  // sum: rank_sum(n); max: 1 + max(r % 61); min: 1
};
INFRABENCH_HD inline reduction make_reduction(red_op op, elem_type t, int n) {
  reduction r;
  r.op = op;
  r.integer = t == elem_type::int32;
  r.owned = owned_elements(t);
  r.n = n;
  if (op == red_op::max) {
    r.rank_term = 1.0 + static_cast<double>(n > 61 ? 60 : n - 1);
  } else if (op == red_op::min) {
    r.rank_term = 1.0;
  } else {
    r.rank_term = rank_sum(n);
  }
  return r;
}
INFRABENCH_HD inline double reduce_value(const reduction& r, std::size_t i) {
  if (r.owned) {  // the owner's value, and n - 1 zeros
    const double v = owned_value(i);
    if (r.op == red_op::min) return r.n > 1 ? 0.0 : v;
    return r.op == red_op::avg ? v / static_cast<double>(r.n) : v;
  }
  const double col = static_cast<double>(i % 13);
  if (r.op == red_op::max || r.op == red_op::min) return r.rank_term + col;
  const double sum = r.rank_term + static_cast<double>(r.n) * col;
  if (r.op == red_op::sum) return sum;
  if (r.integer) return static_cast<double>(static_cast<long long>(sum) / r.n);
  return sum / static_cast<double>(r.n);
}

// The relative error a correct result may have: 0 where it is exact (integers, float sums, max,
// min, the 8-bit floats' owned sums); otherwise the rounding of the expected value plus one
// rounding per addition or the division, in units of the type's half-ulp (float16 2^-11, bfloat16
// 2^-8, float32 2^-24).
INFRABENCH_HD inline double tolerance(elem_type t, red_op op, int n) {
  if (t == elem_type::int32 || op == red_op::max || op == red_op::min) return 0;
  if (owned_elements(t)) {
    if (op != red_op::avg) return 0;
    // avg = v / n: NCCL multiplies each input by 1/n in the type (ncclAvg is a pre-multiplied
    // sum), so 1/n, the product and the result each round once: 3 half-ulps (E4M3 2^-4, E5M2
    // 2^-3). Below the normal range the spacing is the smallest subnormal (2^-9, 2^-16), at
    // most min_subnormal x n relative to the smallest expected value, 1/n.
    const bool e4 = t == elem_type::float8_e4m3;
    return 3.0 * (e4 ? 1.0 / 16 : 1.0 / 8) +
           static_cast<double>(n) * (e4 ? 1.0 / 512 : 1.0 / 65536);
  }
  double u = 0;
  if (t == elem_type::float16) u = 1.0 / 2048;
  if (t == elem_type::bfloat16) u = 1.0 / 256;
  if (op == red_op::avg && t == elem_type::float32) u = 1.0 / 16777216;
  if (op == red_op::avg && t == elem_type::float64) u = 1.0 / 9007199254740992.0;
  return u * (static_cast<double>(n) + 2);
}

// What a collective leaves in a receive buffer, by the shape of its result (one rule may serve
// several collectives; benchmarks/collectives/model.h names the rule of each).
enum class result_rule {
  reduced,            // the element-wise reduction of all ranks' inputs (all-reduce; reduce's root)
  gather,             // block r holds rank r's input block (all-gather; gather's root)
  reduced_own_block,  // rank me: block me of the reduction (reduce-scatter)
  root_input,         // rank 0's input (broadcast from rank 0)
  exchange,           // rank me: block r holds block me of rank r's input (all-to-all)
  root_block,         // rank me: block me of rank 0's input (scatter from rank 0)
  from_left,          // the input of rank me - 1 (a send/receive ring)
};

// Element i of rank `me`'s receive buffer after a collective with result `rule` over n ranks
// (`block` elements per rank; `r`: the reduction, for the reducing rules). The same code checks
// on the host (MPI) and on the device (NCCL).
INFRABENCH_HD inline double expected(result_rule rule, int me, int n, std::size_t block,
                                     std::size_t i, const reduction& r) {
  switch (rule) {
    case result_rule::reduced:
      return reduce_value(r, i);
    case result_rule::gather:
      return input(static_cast<int>(i / block), i % block);
    case result_rule::reduced_own_block:
      return reduce_value(r, static_cast<std::size_t>(me) * block + i);
    case result_rule::root_input:
      return input(0, i);
    case result_rule::exchange:
      return input(static_cast<int>(i / block), static_cast<std::size_t>(me) * block + i % block);
    case result_rule::root_block:
      return input(0, static_cast<std::size_t>(me) * block + i);
    case result_rule::from_left:
      return input((me + n - 1) % n, i);
  }
  return 0;
}

// Whether a received value (as double) is within `tol` (relative) of the expected one.
INFRABENCH_HD inline bool matches(double got, double want, double tol) {
  if (tol == 0) return got == want;
  const double d = got > want ? got - want : want - got;
  return d <= tol * (want < 0 ? -want : want);
}

}  // namespace infrabench::kernels::pattern
