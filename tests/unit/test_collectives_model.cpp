// Host-side logic of the collective benchmarks (MPI and NCCL): bandwidth model, layouts, expected
// results, ring and recursive-doubling schedules, the pairwise tournament and its ring-plus-sampled
// schedule, and GPU choice.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "model.h"
#include "shared/shared_gpu.h"

using namespace infrabench::collectives;
namespace pattern = infrabench::kernels::pattern;

TEST(CollectivesModel, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::allreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::alltoall, 3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::broadcast, 16), 1.0);
  // nccl-tests' doc/PERFORMANCE.md: reduce and sendrecv 1, gather and scatter (n-1)/n.
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::sendrecv, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(coll_op::scatter, 3), 2.0 / 3);
}

TEST(CollectivesModel, LayoutsFollowNcclTestsSizing) {
  auto ar = make_layout(coll_op::allreduce, 1 << 20, 4, 3);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->send_count, (1u << 20) / 4);
  EXPECT_DOUBLE_EQ(ar->bytes, 1 << 20);
  // All-gather: the size is the receive buffer, rounded down to whole blocks per rank.
  auto ag = make_layout(coll_op::allgather, 1000, 4, 3);
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->block, 83u);
  EXPECT_EQ(ag->send_count, 83u);
  EXPECT_EQ(ag->recv_count, 249u);
  EXPECT_DOUBLE_EQ(ag->bytes, 996);
  auto rs = make_layout(coll_op::reduce_scatter, 64, 8, 2);
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->send_count, 8u);
  EXPECT_EQ(rs->recv_count, 4u);
  auto a2a = make_layout(coll_op::alltoall, 96, 4, 3);
  ASSERT_TRUE(a2a);
  EXPECT_EQ(a2a->send_count, 24u);
  EXPECT_EQ(a2a->recv_count, 24u);
  // Too small for one element per rank: refused rather than a zero-byte "measurement".
  EXPECT_FALSE(make_layout(coll_op::allgather, 8, 4, 3));
  EXPECT_FALSE(make_layout(coll_op::allreduce, 4, 8, 2));
}

// Simulates each collective on the known inputs and checks expected_value against it.
TEST(CollectivesModel, ExpectedValuesMatchASimulatedCollective) {
  for (int n : {2, 3, 5}) {
    const std::size_t block = 7;
    const auto rs = pattern::make_reduction(pattern::red_op::sum, pattern::elem_type::float32, n);
    for (int me = 0; me < n; ++me) {
      for (std::size_t i = 0; i < block * static_cast<std::size_t>(n); ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += send_value(coll_op::allreduce, r, i);
        EXPECT_EQ(expected_value(coll_op::allreduce, me, n, block, i, rs), sum);
        const int from = static_cast<int>(i / block);
        EXPECT_EQ(expected_value(coll_op::allgather, me, n, block, i, rs),
                  send_value(coll_op::allgather, from, i % block));
        EXPECT_EQ(
            expected_value(coll_op::alltoall, me, n, block, i, rs),
            send_value(coll_op::alltoall, from, static_cast<std::size_t>(me) * block + i % block));
        EXPECT_EQ(expected_value(coll_op::broadcast, me, n, block, i, rs),
                  send_value(coll_op::broadcast, 0, i));
        EXPECT_EQ(expected_value(coll_op::reduce, 0, n, block, i, rs), sum);
        EXPECT_EQ(expected_value(coll_op::gather, 0, n, block, i, rs),
                  send_value(coll_op::gather, from, i % block));
        EXPECT_EQ(expected_value(coll_op::sendrecv, me, n, block, i, rs),
                  send_value(coll_op::sendrecv, (me + n - 1) % n, i));
      }
      for (std::size_t i = 0; i < block; ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r)
          sum += send_value(coll_op::reduce_scatter, r, static_cast<std::size_t>(me) * block + i);
        EXPECT_EQ(expected_value(coll_op::reduce_scatter, me, n, block, i, rs), sum);
        EXPECT_EQ(expected_value(coll_op::scatter, me, n, block, i, rs),
                  send_value(coll_op::scatter, 0, static_cast<std::size_t>(me) * block + i));
      }
    }
  }
}

TEST(CollectivesModel, SumsAreExactInFloat32) {
  // Every partial sum is an integer below 2^24, whatever the order: float32 holds it exactly.
  const int n = 4096;
  for (std::size_t i = 0; i < 13; ++i) {
    const double s = pattern::reduce_value(
        pattern::make_reduction(pattern::red_op::sum, pattern::elem_type::float32, n), i);
    EXPECT_LT(s, 16777216.0);
    EXPECT_EQ(static_cast<double>(static_cast<float>(s)), s);
  }
}

TEST(CollectivesModel, RingSegmentsCoverTheBuffer) {
  for (std::size_t count : {1u, 7u, 100u, 1025u}) {
    for (int n : {2, 3, 4, 7}) {
      std::size_t next = 0;
      for (int s = 0; s < n; ++s) {
        const auto seg = ring_segment(count, n, s);
        EXPECT_EQ(seg.offset, next);
        next += seg.length;
      }
      EXPECT_EQ(next, count);
    }
  }
}

// Simulates the ring schedule: every rank ends with every segment's full sum, and each step
// sends what the previous step received (the pipelining invariant).
TEST(CollectivesModel, RingScheduleReducesEverySegmentOnce) {
  for (int n : {2, 3, 4, 5, 8}) {
    // have[r][seg] = set of ranks whose contribution rank r holds for seg.
    std::vector<std::vector<std::set<int>>> have(
        static_cast<std::size_t>(n), std::vector<std::set<int>>(static_cast<std::size_t>(n)));
    for (int r = 0; r < n; ++r) {
      for (int s = 0; s < n; ++s)
        have[static_cast<std::size_t>(r)][static_cast<std::size_t>(s)] = {r};
    }
    for (int step = 0; step < 2 * (n - 1); ++step) {
      auto next = have;
      for (int r = 0; r < n; ++r) {
        const int right = ring_mod(r + 1, n);
        const int seg = ring_send_segment(r, n, step);
        EXPECT_EQ(seg, ring_recv_segment(right, n, step))
            << "what r sends is what its right neighbour expects";
        if (step + 1 < 2 * (n - 1)) {
          EXPECT_EQ(ring_recv_segment(r, n, step), ring_send_segment(r, n, step + 1));
        }
        auto& dst = next[static_cast<std::size_t>(right)][static_cast<std::size_t>(seg)];
        const auto& src = have[static_cast<std::size_t>(r)][static_cast<std::size_t>(seg)];
        if (step < n - 1) {
          for (int x : src) {
            EXPECT_FALSE(dst.count(x) && x != right) << "a contribution added twice";
            dst.insert(x);
          }
        } else {
          dst = src;  // all-gather: copy
        }
      }
      have = next;
    }
    for (int r = 0; r < n; ++r) {
      for (int s = 0; s < n; ++s)
        EXPECT_EQ(have[static_cast<std::size_t>(r)][static_cast<std::size_t>(s)].size(),
                  static_cast<std::size_t>(n));
    }
  }
}

// Simulates recursive doubling (with MPICH's fold for non-powers of two) on integer inputs.
TEST(CollectivesModel, RecursiveDoublingPlanSumsEveryRank) {
  for (int n = 1; n <= 13; ++n) {
    std::vector<long> val(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) val[static_cast<std::size_t>(r)] = 1L << r;
    std::vector<rd_plan> plans;
    for (int r = 0; r < n; ++r) plans.push_back(make_rd_plan(r, n));
    const int rem = plans[0].rem, pof2 = plans[0].pof2;
    EXPECT_EQ(pof2 + rem, n);
    for (int r = 0; r < 2 * rem; r += 2)
      val[static_cast<std::size_t>(r + 1)] += val[static_cast<std::size_t>(r)];
    for (int mask = 1; mask < pof2; mask <<= 1) {
      auto next = val;
      for (int r = 0; r < n; ++r) {
        const auto& p = plans[static_cast<std::size_t>(r)];
        if (p.newrank < 0) continue;
        const int partner = p.real_rank(p.newrank ^ mask);
        EXPECT_EQ(plans[static_cast<std::size_t>(partner)].real_rank(p.newrank), r);
        next[static_cast<std::size_t>(r)] =
            val[static_cast<std::size_t>(r)] + val[static_cast<std::size_t>(partner)];
      }
      val = next;
    }
    for (int r = 0; r < 2 * rem; r += 2)
      val[static_cast<std::size_t>(r)] = val[static_cast<std::size_t>(r + 1)];
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(val[static_cast<std::size_t>(r)], (1L << n) - 1) << "n=" << n << " rank " << r;
  }
}

TEST(CollectivesModel, TournamentMeetsEveryPairOnce) {
  for (int p = 2; p <= 9; ++p) {
    std::map<std::pair<int, int>, int> met;
    for (int round = 0; round < tournament_rounds(p); ++round) {
      std::set<int> busy;
      for (int i = 0; i < p; ++i) {
        const int j = tournament_partner(p, round, i);
        if (j < 0) continue;
        EXPECT_NE(i, j);
        EXPECT_EQ(tournament_partner(p, round, j), i) << "partners agree";
        EXPECT_TRUE(busy.insert(i).second);
        if (i < j) ++met[{i, j}];
      }
    }
    EXPECT_EQ(met.size(), static_cast<std::size_t>(p * (p - 1) / 2)) << p;
    for (const auto& [pair, times] : met) EXPECT_EQ(times, 1);
  }
  EXPECT_EQ(tournament_rounds(1), 0);
}

// The default pairwise schedule: a ring plus sampled rounds. Every round is disjoint pairs both
// ends agree on; every host meets its ring neighbours and at most 2 + sampled partners; the rounds
// stay a constant few however many hosts there are; pairs=all is the tournament.
TEST(CollectivesModel, PairingScheduleIsARingPlusBoundedSampledPairs) {
  for (int p : {2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 127, 1024}) {
    const auto rounds = pairing_schedule(p, false, 2);
    std::map<int, std::set<int>> partners;
    for (const auto& r : rounds) {
      ASSERT_EQ(r.size(), static_cast<std::size_t>(p));
      for (int i = 0; i < p; ++i) {
        const int j = r[static_cast<std::size_t>(i)];
        if (j < 0) continue;
        ASSERT_NE(i, j);
        ASSERT_EQ(r[static_cast<std::size_t>(j)], i) << "p=" << p << ": partners agree";
        EXPECT_TRUE(partners[i].insert(j).second) << "p=" << p << ": " << i << "-" << j << " twice";
      }
    }
    const bool small = p <= 5;  // the ring and 2 rounds would be the whole tournament: all pairs
    for (int i = 0; i < p; ++i) {
      EXPECT_TRUE(partners[i].count((i + 1) % p)) << "p=" << p << ": ring link " << i;
      EXPECT_TRUE(partners[i].count((i + p - 1) % p)) << "p=" << p << ": ring link " << i;
      if (!small) {
        EXPECT_LE(partners[i].size(), 4U) << "p=" << p << " host " << i;
      }
    }
    if (small) {
      EXPECT_EQ(rounds.size(), static_cast<std::size_t>(tournament_rounds(p))) << p;
    } else {
      EXPECT_LE(rounds.size(), 5U) << p;
    }
    EXPECT_EQ(pairing_schedule(p, false, 2), rounds) << "the same draw every time: " << p;
  }
  // Sampled pairs reach beyond the ring: at 64 hosts, most hosts have a third partner.
  std::size_t beyond = 0;
  for (const auto& r : pairing_schedule(64, false, 2)) {
    for (int i = 0; i < 64; ++i) beyond += r[static_cast<std::size_t>(i)] >= 0;
  }
  EXPECT_GT(beyond, 2U * 64U + 64U);
  // pairs=all: every pair once, in the tournament's rounds.
  std::set<std::pair<int, int>> all;
  for (const auto& r : pairing_schedule(17, true, 2)) {
    for (int i = 0; i < 17; ++i) {
      if (r[static_cast<std::size_t>(i)] > i) all.insert({i, r[static_cast<std::size_t>(i)]});
    }
  }
  EXPECT_EQ(all.size(), 17U * 16U / 2U);
  EXPECT_TRUE(pairing_schedule(1, false, 2).empty());
}

TEST(CollectivesModel, OneGpuPerRankByLocalRank) {
  EXPECT_EQ(device_for_local_rank(0, 8), 0);
  EXPECT_EQ(device_for_local_rank(7, 8), 7);
  EXPECT_EQ(device_for_local_rank(9, 8), 1);
  EXPECT_EQ(device_for_local_rank(0, 0), -1);
}

// ---- the collective table (issue 17 item 2): each collective described once ------------------

TEST(CollectivesTable, EveryCollectiveHasOneRow) {
  const auto& t = collective_table();
  ASSERT_EQ(t.size(), 9u);
  for (const auto op :
       {coll_op::allreduce, coll_op::allgather, coll_op::reduce_scatter, coll_op::broadcast,
        coll_op::alltoall, coll_op::reduce, coll_op::gather, coll_op::scatter, coll_op::sendrecv}) {
    int rows = 0;
    for (const auto& c : t) rows += c.op == op;
    EXPECT_EQ(rows, 1) << to_string(op);
    EXPECT_EQ(describe(op).op, op);
    EXPECT_FALSE(describe(op).mpi_call.empty());
    EXPECT_FALSE(describe(op).nccl_call.empty());
  }
  // The axes the benchmarks get from their rows: reductions have a dtype, the broadcast (in place
  // by nature) and the send/receive ring no placement; only reduce's and gather's root receives.
  EXPECT_EQ(split_list(describe(coll_op::allreduce).dtypes),
            (std::vector<std::string>{"float32", "float64"}));
  EXPECT_TRUE(describe(coll_op::reduce_scatter).reduces);
  EXPECT_FALSE(describe(coll_op::allgather).reduces);
  EXPECT_TRUE(describe(coll_op::reduce).reduces);
  EXPECT_TRUE(describe(coll_op::broadcast).root_buffer);
  EXPECT_TRUE(describe(coll_op::broadcast).placements.empty());
  EXPECT_TRUE(describe(coll_op::sendrecv).placements.empty());
  EXPECT_FALSE(receives_result(coll_op::reduce, 1));
  EXPECT_TRUE(receives_result(coll_op::reduce, 0));
  EXPECT_FALSE(receives_result(coll_op::gather, 2));
  EXPECT_TRUE(receives_result(coll_op::scatter, 2));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_EQ(split_list("a"), (std::vector<std::string>{"a"}));
}

TEST(CollectivesTable, InPlaceFormsFollowTheLayout) {
  const auto ag = *make_layout(coll_op::allgather, 1200, 4, 3);  // 100 elements per rank
  EXPECT_EQ(in_place_send_offset(coll_op::allgather, 2, ag), 200u);
  EXPECT_EQ(input_count(coll_op::allgather, ag), 100u);
  const auto rs = *make_layout(coll_op::reduce_scatter, 1200, 4, 3);
  EXPECT_EQ(in_place_send_offset(coll_op::reduce_scatter, 2, rs), 0u);
  EXPECT_EQ(result_offset(coll_op::reduce_scatter, 2, rs, true), 200u);
  EXPECT_EQ(result_offset(coll_op::reduce_scatter, 2, rs, false), 0u);
  EXPECT_EQ(input_count(coll_op::reduce_scatter, rs), 300u);
  const auto ar = *make_layout(coll_op::allreduce, 1200, 4, 3);
  EXPECT_EQ(result_offset(coll_op::allreduce, 1, ar, true), 0u);
  EXPECT_EQ(input_count(coll_op::allreduce, ar), 300u);
}

TEST(CollectivesTable, RanksSharingAGpuAreNamedBeforeNcclIsCalled) {
  // Issue 16: two ranks on one host with one GPU: both drive GPU 0.
  EXPECT_EQ(shared_gpu_reason({{"vm", "0000:3b:00.0", 0}, {"vm", "0000:3b:00.0", 0}}),
            "ranks 0 and 1 on host vm share GPU 0 (0000:3b:00.0): NCCL needs one GPU per rank; "
            "start at most as many ranks per host as it has GPUs");
  // One rank per GPU, on one host or several: fine.
  EXPECT_EQ(shared_gpu_reason({{"a", "0000:3b:00.0", 0}, {"a", "0000:5e:00.0", 1}}), "");
  EXPECT_EQ(shared_gpu_reason({{"a", "0000:3b:00.0", 0}, {"b", "0000:3b:00.0", 0}}), "");
  // Per-rank CUDA_VISIBLE_DEVICES: both see "device 0", but different GPUs.
  EXPECT_EQ(shared_gpu_reason({{"a", "0000:3b:00.0", 0}, {"a", "0000:5e:00.0", 0}}), "");
  // Bus id unknown: the index decides; three ranks on two GPUs name the pair that collides.
  EXPECT_EQ(shared_gpu_reason({{"h", "", 0}, {"h", "", 1}, {"h", "", 0}}).substr(0, 31),
            "ranks 0 and 2 on host h share G");
  EXPECT_NE(shared_gpu_reason({{"h", "", 0}, {"h", "", 0}, {"h", "", 0}}).find("ranks 0, 1 and 2"),
            std::string::npos);
}
