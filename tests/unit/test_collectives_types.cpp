// The collectives' element types, reductions and split groups, host side (issue 28 item 5):
// float16/bfloat16 conversion, the expected result of each operation, verification with its
// tolerance (a right result passes, a wrong one is found), and the groups of a split.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "elements.h"
#include "model.h"
#include "registration.h"

using namespace infrabench::collectives;
namespace pattern = infrabench::kernels::pattern;

namespace {

constexpr elem_type all_types[] = {elem_type::float32, elem_type::float64, elem_type::float16,
                                   elem_type::bfloat16, elem_type::int32};
constexpr red_op all_ops[] = {red_op::sum, red_op::max, red_op::min, red_op::avg};

// Rounds v to type t (through a one-element buffer).
double in_type(elem_type t, double v) {
  std::uint64_t cell = 0;
  store(t, &cell, 0, v);
  return load(t, &cell, 0);
}

// Element i of the reduction as a library computes it: rank by rank, rounded to the type after
// every step (MPI's user operations, NCCL's kernels), avg divided at the end.
double simulated(elem_type t, red_op op, int n, std::size_t i) {
  double acc = in_type(t, pattern::input(0, i));
  for (int r = 1; r < n; ++r) {
    const double x = in_type(t, pattern::input(r, i));
    double v = acc + x;
    if (op == red_op::max) v = std::max(acc, x);
    if (op == red_op::min) v = std::min(acc, x);
    acc = in_type(t, v);
  }
  if (op != red_op::avg) return acc;
  if (t == elem_type::int32) return static_cast<double>(static_cast<std::int64_t>(acc) / n);
  return in_type(t, acc / n);
}

}  // namespace

TEST(CollectivesTypes, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(70000.0f), 0x7c00);                 // past the largest: infinity
  EXPECT_EQ(half_to_float(float_to_half(2049.0f)), 2048.0f);  // tie: to even
  EXPECT_EQ(half_to_float(float_to_half(2051.0f)), 2052.0f);
  EXPECT_EQ(half_to_float(float_to_half(0.1f)), 0.0999755859375f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(float_to_bf16(257.0f)), 256.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(259.0f)), 260.0f);
  // Every integer a float16 (2^11) or bfloat16 (2^8) holds exactly survives the round trip.
  for (int v = -2048; v <= 2048; ++v) EXPECT_EQ(half_to_float(float_to_half(v)), v);
  for (int v = -256; v <= 256; ++v) EXPECT_EQ(bf16_to_float(float_to_bf16(v)), v);
}

TEST(CollectivesTypes, NamesParseAndSizes) {
  EXPECT_EQ(parse_elem_type("bfloat16"), elem_type::bfloat16);
  EXPECT_FALSE(parse_elem_type("fp8"));
  EXPECT_EQ(parse_red_op("avg"), red_op::avg);
  EXPECT_FALSE(parse_red_op("prod"));
  EXPECT_EQ(pattern::elem_size(elem_type::float16), 2u);
  EXPECT_EQ(pattern::elem_size(elem_type::bfloat16), 2u);
  EXPECT_EQ(pattern::elem_size(elem_type::int32), 4u);
  EXPECT_EQ(pattern::elem_size(elem_type::float64), 8u);
}

TEST(CollectivesTypes, ExpectedReductionIsTheReductionOfTheInputs) {
  for (int n : {2, 3, 5, 70}) {
    for (red_op op : all_ops) {
      const auto r = pattern::make_reduction(op, elem_type::float64, n);
      const auto ri = pattern::make_reduction(op, elem_type::int32, n);
      for (std::size_t i = 0; i < 40; ++i) {
        double sum = 0, mx = -1e300, mn = 1e300;
        for (int k = 0; k < n; ++k) {
          const double x = pattern::input(k, i);
          sum += x;
          mx = std::max(mx, x);
          mn = std::min(mn, x);
        }
        const double want = op == red_op::sum   ? sum
                            : op == red_op::max ? mx
                            : op == red_op::min ? mn
                                                : sum / n;
        EXPECT_DOUBLE_EQ(pattern::reduce_value(r, i), want) << n << " " << static_cast<int>(op);
        // Integers: avg truncates (ncclAvg's division for integer types).
        const double want_int =
            op == red_op::avg ? static_cast<double>(static_cast<std::int64_t>(sum) / n) : want;
        EXPECT_EQ(pattern::reduce_value(ri, i), want_int);
      }
    }
  }
}

// Every type and operation: the result a library computes (rounding after every step) passes,
// a wrong element is found, and exact cases have no tolerance at all.
TEST(CollectivesTypes, VerificationPassesRightResultsAndFailsWrongOnes) {
  for (elem_type t : all_types) {
    for (red_op op : all_ops) {
      for (int n : {2, 3, 8, 24}) {
        const std::size_t count = 50;
        std::vector<std::uint64_t> buf(count);
        for (std::size_t i = 0; i < count; ++i) store(t, buf.data(), i, simulated(t, op, n, i));
        const auto r = pattern::make_reduction(op, t, n);
        const std::string label = std::string(elem_type_names[static_cast<int>(t)]) + " " +
                                  std::string(red_op_names[static_cast<int>(op)]) +
                                  " n=" + std::to_string(n);
        EXPECT_EQ(verify_elements(t, buf.data(), count, pattern::result_rule::reduced, 0, n, 1, r),
                  "")
            << label;
        // One element off by more than the tolerance (by one for the exact cases).
        const double want = pattern::reduce_value(r, 7);
        const double tol = pattern::tolerance(t, op, n);
        store(t, buf.data(), 7, want + (tol == 0 ? 1 : 8 * tol * want + 1));
        EXPECT_EQ(verify_elements(t, buf.data(), count, pattern::result_rule::reduced, 0, n, 1, r)
                      .substr(0, 32),
                  "1 of 50 elements wrong; element ")
            << label;
      }
    }
  }
  EXPECT_EQ(pattern::tolerance(elem_type::float32, red_op::sum, 8), 0);
  EXPECT_EQ(pattern::tolerance(elem_type::bfloat16, red_op::max, 8), 0);
  EXPECT_EQ(pattern::tolerance(elem_type::int32, red_op::avg, 8), 0);
  EXPECT_GT(pattern::tolerance(elem_type::float16, red_op::sum, 8), 0);
  EXPECT_GT(pattern::tolerance(elem_type::float32, red_op::avg, 8), 0);
}

TEST(CollectivesTypes, HalfPrecisionReductionsAndAverage) {
  std::vector<std::uint16_t> a = {float_to_half(1), float_to_half(5), float_to_half(2048)};
  std::vector<std::uint16_t> b = {float_to_half(3), float_to_half(4), float_to_half(1)};
  auto c = b;
  reduce_16bit<elem_type::float16>(red_op::sum, a.data(), c.data(), 3);
  EXPECT_EQ(half_to_float(c[0]), 4);
  EXPECT_EQ(half_to_float(c[2]), 2048);  // 2049 rounds to even
  c = b;
  reduce_16bit<elem_type::float16>(red_op::max, a.data(), c.data(), 3);
  EXPECT_EQ(half_to_float(c[0]), 3);
  EXPECT_EQ(half_to_float(c[1]), 5);
  c = {float_to_bf16(3), float_to_bf16(4)};
  const std::vector<std::uint16_t> d = {float_to_bf16(1), float_to_bf16(5)};
  reduce_16bit<elem_type::bfloat16>(red_op::min, d.data(), c.data(), 2);
  EXPECT_EQ(bf16_to_float(c[0]), 1);
  EXPECT_EQ(bf16_to_float(c[1]), 4);
  std::vector<std::int32_t> ints = {7, 9, -7};
  divide_by_ranks(elem_type::int32, ints.data(), 3, 2);
  EXPECT_EQ(ints, (std::vector<std::int32_t>{3, 4, -3}));
  std::vector<float> fl = {7, 1};
  divide_by_ranks(elem_type::float32, fl.data(), 2, 2);
  EXPECT_EQ(fl, (std::vector<float>{3.5f, 0.5f}));
}

TEST(CollectivesTypes, RootedAndRingResultsAreVerified) {
  // Scatter: rank 1 of 3 holds block 1 of rank 0's input; sendrecv: rank 0 holds rank 2's.
  const std::size_t block = 5;
  std::vector<float> got(block);
  const auto r = pattern::make_reduction(red_op::sum, elem_type::float32, 3);
  for (std::size_t i = 0; i < block; ++i) got[i] = pattern::input(0, block + i);
  EXPECT_EQ(verify_elements(elem_type::float32, got.data(), block, pattern::result_rule::root_block,
                            1, 3, block, r),
            "");
  EXPECT_NE(verify_elements(elem_type::float32, got.data(), block, pattern::result_rule::root_block,
                            2, 3, block, r),
            "");
  for (std::size_t i = 0; i < block; ++i) got[i] = pattern::input(2, i);
  EXPECT_EQ(verify_elements(elem_type::float32, got.data(), block, pattern::result_rule::from_left,
                            0, 3, block, r),
            "");
  EXPECT_NE(verify_elements(elem_type::float32, got.data(), block, pattern::result_rule::from_left,
                            1, 3, block, r),
            "");
}

TEST(CollectivesGroups, SplitsFollowHostsAndLocalRanks) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  EXPECT_EQ(group_colors(rank_group::world, hosts), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(group_colors(rank_group::intra_node, hosts), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(group_colors(rank_group::inter_node, hosts), (std::vector<int>{0, -1, 0, -1}));
  EXPECT_EQ(group_colors(rank_group::rail, hosts), (std::vector<int>{0, 1, 0, 1}));
  // Ranks placed round-robin over hosts: the same groups, by host and local index.
  const std::vector<std::string> rr = {"a", "b", "a", "b"};
  EXPECT_EQ(group_colors(rank_group::intra_node, rr), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(group_colors(rank_group::rail, rr), (std::vector<int>{0, 0, 1, 1}));
  for (rank_group g : {rank_group::world, rank_group::intra_node, rank_group::rail}) {
    EXPECT_EQ(shape_of(g, group_colors(g, hosts)).problem, "");
  }
  const auto rail = shape_of(rank_group::rail, group_colors(rank_group::rail, hosts));
  EXPECT_EQ(rail.groups, 2);
  EXPECT_EQ(rail.ranks, 2);
  const auto world = shape_of(rank_group::world, group_colors(rank_group::world, hosts));
  EXPECT_EQ(world.groups, 1);
  EXPECT_EQ(world.ranks, 4);
  EXPECT_EQ(parse_rank_group("rail"), rank_group::rail);
  EXPECT_FALSE(parse_rank_group("node"));
}

TEST(CollectivesGroups, SplitsThatCannotRunAreNamed) {
  // One host: one rank per host, and rails of one rank each.
  const std::vector<std::string> one = {"a", "a"};
  EXPECT_EQ(shape_of(rank_group::inter_node, group_colors(rank_group::inter_node, one)).problem,
            "group inter_node has a group of 1 rank(s) (1 group(s)): a collective needs at least "
            "2 ranks per group");
  EXPECT_NE(shape_of(rank_group::rail, group_colors(rank_group::rail, one)).problem, "");
  // Uneven hosts: rails of 2 and 1 ranks.
  const std::vector<std::string> uneven = {"a", "a", "b", "b", "b"};
  EXPECT_EQ(shape_of(rank_group::intra_node, group_colors(rank_group::intra_node, uneven)).problem,
            "group intra_node splits the ranks into groups of 2 to 3 ranks: start the same number "
            "of ranks on every host");
}

// The descriptions' bandwidth model (registration.h) says each collective's factor.
TEST(CollectivesTypes, BusTextNamesEachFactor) {
  EXPECT_EQ(bus_text(describe(coll_op::allreduce)), "busbw = algbw x 2(n-1)/n");
  for (coll_op op : {coll_op::allgather, coll_op::reduce_scatter, coll_op::alltoall,
                     coll_op::gather, coll_op::scatter}) {
    EXPECT_EQ(bus_text(describe(op)), "busbw = algbw x (n-1)/n") << to_string(op);
  }
  for (coll_op op : {coll_op::broadcast, coll_op::reduce, coll_op::sendrecv}) {
    EXPECT_EQ(bus_text(describe(op)), "busbw = algbw (bus factor 1)") << to_string(op);
  }
}
