// nvbandwidth's many-to-one patterns as plans (kernels/topology/traffic.h), checked without a GPU:
// who copies what at the same time, who issues each copy, what the cell's figure counts, and why
// a pattern cannot run with fewer than two GPUs.
#include <gtest/gtest.h>

#include <set>

#include "topology/traffic.h"

namespace topo = infrabench::kernels::topology;
using topo::planned_copy;
using topo::traffic_access;
using topo::traffic_end;
using topo::traffic_pattern;

namespace {

const traffic_end host0{true, 0};
traffic_end gpu(int i) {
  return {false, i};
}

}  // namespace

TEST(GpuBandwidthTraffic, HostToAllMeasuresOneGpuWhileTheOthersLoadTheHost) {
  const auto plan =
      topo::plan_cell(traffic_pattern::host_to_all, traffic_access::write, 1, {0, 1, 2, 3}, 0);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0], (planned_copy{host0, gpu(1), 1, true}));  // measured: first
  for (std::size_t k = 1; k < plan.size(); ++k) {
    EXPECT_TRUE(plan[k].src.host);
    EXPECT_FALSE(plan[k].counted);
    EXPECT_EQ(plan[k].issuer, plan[k].dst.index);  // each GPU's own engine or kernel
    EXPECT_NE(plan[k].dst.index, 1);
  }
  EXPECT_DOUBLE_EQ(topo::counted_bytes(plan, 1e6), 1e6);
  EXPECT_EQ(topo::issuers(plan), (std::vector<int>{1, 0, 2, 3}));
  EXPECT_EQ(topo::describe_plan(plan),
            "host node 0 -> GPU 1 measured while host node 0 -> GPU 0, host node 0 -> GPU 2, "
            "host node 0 -> GPU 3 run at the same time");
}

TEST(GpuBandwidthTraffic, AllToHostIsTheReverse) {
  const auto plan =
      topo::plan_cell(traffic_pattern::all_to_host, traffic_access::read, 0, {0, 1}, 1);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (planned_copy{gpu(0), {true, 1}, 0, true}));
  EXPECT_EQ(plan[1], (planned_copy{gpu(1), {true, 1}, 1, false}));
}

TEST(GpuBandwidthTraffic, AllToOneCountsEveryPeerAndAccessPicksTheIssuer) {
  const std::vector<int> all{0, 1, 2};
  auto w = topo::plan_cell(traffic_pattern::all_to_one, traffic_access::write, 2, all, -1);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], (planned_copy{gpu(0), gpu(2), 0, true}));  // the sender pushes
  EXPECT_EQ(w[1], (planned_copy{gpu(1), gpu(2), 1, true}));
  EXPECT_DOUBLE_EQ(topo::counted_bytes(w, 100), 200);
  auto r = topo::plan_cell(traffic_pattern::all_to_one, traffic_access::read, 2, all, -1);
  for (const auto& c : r) EXPECT_EQ(c.issuer, 2);  // the target pulls from every peer
  EXPECT_EQ(topo::issuers(r), (std::vector<int>{2}));
  EXPECT_EQ(topo::describe_plan(r),
            "GPU 0 -> GPU 2 (pulled by GPU 2), GPU 1 -> GPU 2 (pulled by GPU 2), all at once, "
            "summed");
}

TEST(GpuBandwidthTraffic, OneToAllSendsFromTheTarget) {
  auto w = topo::plan_cell(traffic_pattern::one_to_all, traffic_access::write, 0, {0, 1, 2}, -1);
  ASSERT_EQ(w.size(), 2u);
  for (const auto& c : w) {
    EXPECT_EQ(c.src, gpu(0));
    EXPECT_EQ(c.issuer, 0);
    EXPECT_TRUE(c.counted);
  }
  auto r = topo::plan_cell(traffic_pattern::one_to_all, traffic_access::read, 0, {0, 1, 2}, -1);
  EXPECT_EQ(r[0].issuer, 1);
  EXPECT_EQ(r[1].issuer, 2);
}

TEST(GpuBandwidthTraffic, PeersWithoutAccessAreLeftOut) {
  // GPU 3 cannot reach GPU 0 (a different PCIe root without P2P).
  const auto ok = [](int from, int to) {
    return !((from == 3 && to == 0) || (from == 0 && to == 3));
  };
  auto plan =
      topo::plan_cell(traffic_pattern::all_to_one, traffic_access::write, 0, {0, 1, 2, 3}, -1, ok);
  std::set<int> senders;
  for (const auto& c : plan) senders.insert(c.src.index);
  EXPECT_EQ(senders, (std::set<int>{1, 2}));
  // No accessible peer at all: an empty plan (the benchmark makes the cell n/a).
  EXPECT_TRUE(topo::plan_cell(traffic_pattern::one_to_all, traffic_access::write, 0, {0, 3}, -1, ok)
                  .empty());
  // A target that does not take part.
  EXPECT_TRUE(
      topo::plan_cell(traffic_pattern::host_to_all, traffic_access::write, 5, {0, 1}, 0).empty());
}

TEST(GpuBandwidthTraffic, OneGpuIsSkippedWithTheReason) {
  EXPECT_EQ(topo::pattern_skip_reason(traffic_pattern::host_to_all, 1),
            "host_to_all needs at least 2 GPUs: with one there is no other GPU to load the host; "
            "this machine has 1 CUDA device (bandwidth/h2d and bandwidth/d2h measure one GPU "
            "alone)");
  EXPECT_EQ(topo::pattern_skip_reason(traffic_pattern::all_to_one, 0),
            "all_to_one needs at least 2 GPUs (one and its peers); this machine has 0 CUDA "
            "devices");
  EXPECT_EQ(topo::pattern_skip_reason(traffic_pattern::one_to_all, 2), "");
  for (const auto p : {traffic_pattern::host_to_all, traffic_pattern::all_to_host,
                       traffic_pattern::all_to_one, traffic_pattern::one_to_all}) {
    EXPECT_EQ(topo::parse_traffic_pattern(topo::to_string(p)), p);
  }
  EXPECT_FALSE(topo::parse_traffic_pattern("all_to_all"));
}

TEST(GpuBandwidthTraffic, HostBidirectionalMeasuresOneDirectionUnderTwiceTheLoad) {
  // nvbandwidth host_to_all_bidirectional: GPU 1's host -> GPU copy, while GPU 1 copies back to
  // the host and GPU 0 copies both ways, each of those twice the size.
  const auto plan = topo::plan_cell(traffic_pattern::host_to_all_bidirectional,
                                    traffic_access::write, 1, {0, 1}, 0);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0], (planned_copy{host0, gpu(1), 1, true, 1}));
  EXPECT_EQ(plan[1], (planned_copy{gpu(1), host0, 1, false, 2}));
  EXPECT_EQ(plan[2], (planned_copy{host0, gpu(0), 0, false, 2}));
  EXPECT_EQ(plan[3], (planned_copy{gpu(0), host0, 0, false, 2}));
  EXPECT_DOUBLE_EQ(topo::counted_bytes(plan, 1e6), 1e6);
  // Each GPU runs two copies at once (its SM kernels share it) and holds 1 + 2 or 2 + 2 sizes.
  EXPECT_EQ(topo::copies_issued_by(plan, 1), 2);
  EXPECT_EQ(topo::copies_issued_by(plan, 0), 2);
  EXPECT_EQ(topo::size_units_on(plan, 1), 3);
  EXPECT_EQ(topo::size_units_on(plan, 0), 4);
  EXPECT_NE(topo::describe_plan(plan).find("GPU 1 -> host node 0 (2x the size)"), std::string::npos)
      << topo::describe_plan(plan);

  const auto down = topo::plan_cell(traffic_pattern::all_to_host_bidirectional,
                                    traffic_access::write, 0, {0, 1}, 0);
  EXPECT_EQ(down[0], (planned_copy{gpu(0), host0, 0, true, 1}));
  EXPECT_EQ(down[1], (planned_copy{host0, gpu(0), 0, false, 2}));
  EXPECT_EQ(topo::parse_traffic_pattern("all_to_host_bidirectional"),
            traffic_pattern::all_to_host_bidirectional);
  EXPECT_NE(topo::pattern_skip_reason(traffic_pattern::host_to_all_bidirectional, 1)
                .find("(bandwidth/bidirectional measures one GPU alone)"),
            std::string::npos);
}

TEST(GpuBandwidthTraffic, OneToAllSharesTheTargetBetweenItsCopies) {
  const auto plan =
      topo::plan_cell(traffic_pattern::one_to_all, traffic_access::write, 0, {0, 1, 2, 3}, -1);
  EXPECT_EQ(topo::copies_issued_by(plan, 0), 3);  // one block per SM each
  const auto in =
      topo::plan_cell(traffic_pattern::all_to_one, traffic_access::write, 0, {0, 1, 2, 3}, -1);
  EXPECT_EQ(topo::copies_issued_by(in, 1), 1);  // alone on its GPU: the full grid
}
