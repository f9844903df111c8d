// Outlier detection over a cluster report (robust z on median/MAD), the pairwise culprit rule, the
// console summary, and the multi-rank builder flags.
#include <gtest/gtest.h>

#include <sstream>

#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/metric_decl.h"
#include "infrabench/model/report.h"
#include "infrabench/runner.h"
#include "model.h"

using namespace infrabench;
using json = nlohmann::json;

namespace {

json mk_metric(const std::string& name, double v, bool higher = true,
               const std::string& unit = "GB/s") {
  return {{"name", name},
          {"unit", unit},
          {"value", v},
          {"best", v},
          {"better", higher ? "higher" : "lower"},
          {"method", "m"},
          {"samples", json::array({v})}};
}

// `metrics` as the callers write it, {mk_metric(...)}: one braced json is an array of it under
// GCC and the json itself under clang (nlohmann/json's initializer-list rule), so either is taken.
json result_of(const std::string& bench, const std::string& host, int rank, json metrics,
               json axes = {{"kernel", "triad"}}) {
  if (!metrics.is_array()) metrics = json::array({metrics});
  return {{"benchmark", bench},        {"axes", axes},  {"axes_display", json::object()},
          {"status", "passed"},        {"valid", true}, {"invalid_reasons", json::array()},
          {"warnings", json::array()}, {"rank", rank},  {"host", host},
          {"metrics", metrics}};
}

// A pairwise configuration: bw[i][j] GB/s from host i to host j (one rank per host, rank = index).
json pairwise(const std::vector<std::vector<double>>& bw) {
  json rs = json::array();
  for (std::size_t i = 0; i < bw.size(); ++i) {
    json ms = json::array();
    for (std::size_t j = 0; j < bw.size(); ++j) {
      if (i == j) continue;
      ms.push_back(mk_metric("bandwidth_gbps_to_rank_" + std::to_string(j), bw[i][j]));
      ms.push_back(mk_metric("latency_us_to_rank_" + std::to_string(j), 50, false, "us"));
    }
    rs.push_back(result_of("collectives/pairwise", "h" + std::to_string(i + 1), static_cast<int>(i),
                           ms, {{"between", "nodes"}, {"size", 1048576}}));
  }
  return rs;
}

// The run's benchmark metadata for a benchmark declaring two link matrices (as collectives/pairwise
// does): families whose `*` is the peer rank.
json link_metadata(const std::string& bench = "collectives/pairwise") {
  metric_decl bw{"bandwidth_gbps_to_rank_*", "GB/s"};
  metric_decl lat{"latency_us_to_rank_*", "us", better::lower};
  bw.cell = lat.cell = cell_kind::peer_rank;
  return {{bench,
           {{"requires", json::array()},
            {"axes", json::object()},
            {"metrics", {metric_decl_json(bw), metric_decl_json(lat)}}}}};
}

// The findings over results and metadata as the report writes them (read by the model first).
std::vector<outlier_finding> outliers_of(const json& rs, const json& metadata,
                                         const outlier_settings& s) {
  return find_outliers(model::results_from_json(rs), model::benchmark_metadata_from_json(metadata),
                       s);
}

std::string dump(const std::vector<outlier_finding>& findings) {
  json out = json::array();
  for (const auto& f : findings) out.push_back(f.to_json());
  return out.dump();
}

std::vector<std::string> hosts_of(const std::vector<outlier_finding>& findings,
                                  const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    if (f.kind == kind) out.push_back(f.host + (f.peer.empty() ? "" : "-" + f.peer));
  }
  return out;
}

}  // namespace

TEST(CollectivesOutliers, RobustZ) {
  EXPECT_NEAR(robust_z(10, {8, 10, 12}), 0, 1e-12);
  // median 10, MAD 2: (4 - 10) / (1.4826 * 2)
  EXPECT_NEAR(robust_z(4, {4, 8, 10, 12, 14}), -6 / (1.4826 * 2), 1e-9);
  // Identical values: MAD floored at 1% of the median, not a division by zero.
  EXPECT_NEAR(robust_z(5, {10, 10, 5}), -5 / (1.4826 * 0.1), 1e-9);
  EXPECT_EQ(robust_z(0, {0, 0, 0}), 0);
}

TEST(CollectivesOutliers, NamesTheSlowHostOfANodeLocalMetric) {
  json rs = json::array();
  rs.push_back(result_of("bandwidth/host_memory", "h1", 0, {mk_metric("bandwidth_gbps", 20.1)}));
  rs.push_back(result_of("bandwidth/host_memory", "h2", 1, {mk_metric("bandwidth_gbps", 19.7)}));
  rs.push_back(result_of("bandwidth/host_memory", "h3", 2, {mk_metric("bandwidth_gbps", 9.5)}));
  rs.push_back(result_of("bandwidth/host_memory", "h4", 3, {mk_metric("bandwidth_gbps", 20.4)}));
  const auto f = outliers_of(rs, json::object(), {});
  ASSERT_EQ(hosts_of(f, "host_metric"), std::vector<std::string>{"h3"});
  EXPECT_NE(f[0].text.find("below the median of 4 hosts"), std::string::npos);
  // A latency (lower is better) too high is flagged the same way; too low is not.
  json lat = json::array();
  lat.push_back(
      result_of("bandwidth/memory_latency", "h1", 0, {mk_metric("ns_per_load", 90, false, "ns")}));
  lat.push_back(
      result_of("bandwidth/memory_latency", "h2", 1, {mk_metric("ns_per_load", 92, false, "ns")}));
  lat.push_back(
      result_of("bandwidth/memory_latency", "h3", 2, {mk_metric("ns_per_load", 300, false, "ns")}));
  lat.push_back(
      result_of("bandwidth/memory_latency", "h4", 3, {mk_metric("ns_per_load", 30, false, "ns")}));
  EXPECT_EQ(hosts_of(outliers_of(lat, json::object(), {}), "host_metric"),
            std::vector<std::string>{"h3"});
}

TEST(CollectivesOutliers, SmallDifferencesAndTwoHostsAreNotFlagged) {
  json rs = json::array();
  // 10% slower with a tiny spread: a large z, but under the 20% minimum deviation.
  rs.push_back(result_of("b/x", "h1", 0, {mk_metric("bandwidth_gbps", 10.0)}));
  rs.push_back(result_of("b/x", "h2", 1, {mk_metric("bandwidth_gbps", 10.01)}));
  rs.push_back(result_of("b/x", "h3", 2, {mk_metric("bandwidth_gbps", 9.0)}));
  EXPECT_TRUE(outliers_of(rs, json::object(), {}).empty());
  outlier_settings strict;
  strict.min_deviation = 0.05;
  EXPECT_EQ(hosts_of(outliers_of(rs, json::object(), strict), "host_metric"),
            std::vector<std::string>{"h3"});
  json two = json::array({rs[0], rs[2]});
  EXPECT_TRUE(outliers_of(two, json::object(), strict).empty());
}

TEST(CollectivesOutliers, AHostWhoseEveryLinkIsSlowIsTheCulprit) {
  // h3 sends slowly (its egress is shaped): its links are slow, not h1-h2.
  const json rs = pairwise({{0, 2.0, 1.9}, {2.1, 0, 2.0}, {0.012, 0.011, 0}});
  const auto f = outliers_of(rs, link_metadata(), {});
  EXPECT_EQ(hosts_of(f, "culprit_host"), std::vector<std::string>{"h3"});
  EXPECT_TRUE(hosts_of(f, "slow_link").empty()) << dump(f);
  // Healthy cluster: nothing.
  EXPECT_TRUE(
      outliers_of(pairwise({{0, 2.0, 1.9}, {2.1, 0, 2.0}, {1.8, 2.2, 0}}), link_metadata(), {})
          .empty());
}

TEST(CollectivesOutliers, ASingleSlowLinkIsNamedNotItsHosts) {
  // 4 hosts, the h1-h2 link is slow in one direction; each host still has fast links.
  std::vector<std::vector<double>> bw(4, std::vector<double>(4, 2.0));
  bw[1][0] = 0.3;
  const auto f = outliers_of(pairwise(bw), link_metadata(), {});
  EXPECT_TRUE(hosts_of(f, "culprit_host").empty()) << dump(f);
  EXPECT_EQ(hosts_of(f, "slow_link"), std::vector<std::string>{"h1-h2"});
}

// The pairs the default schedule (a ring plus sampled rounds) measures among p hosts, with
// bw(i, j) GB/s from host i to host j: the sparse matrix a large cluster's run writes.
template <typename F>
json scheduled_pairwise(int p, F bw) {
  std::vector<json> ms(static_cast<std::size_t>(p), json::array());
  for (const auto& r : collectives::pairing_schedule(p, false, 2)) {
    for (int i = 0; i < p; ++i) {
      const int j = r[static_cast<std::size_t>(i)];
      if (j < 0) continue;
      ms[static_cast<std::size_t>(i)].push_back(
          mk_metric("bandwidth_gbps_to_rank_" + std::to_string(j), bw(i, j)));
    }
  }
  json rs = json::array();
  for (int i = 0; i < p; ++i) {
    rs.push_back(result_of("collectives/pairwise", "h" + std::to_string(i + 1), i,
                           ms[static_cast<std::size_t>(i)],
                           {{"between", "nodes"}, {"pairs", "sampled"}, {"size", 1048576}}));
  }
  return rs;
}

TEST(CollectivesOutliers, TheSampledScheduleStillNamesASlowHostAndASlowLink) {
  // 64 hosts, each measuring at most 4 links: h18's NIC is slow (every link), and one sampled
  // link between two healthy hosts is slow in one direction.
  const int p = 64, slow_host = 17;
  auto jitter = [](int i, int j) { return 2.0 + 0.01 * ((i * 7 + j * 13) % 9); };
  const auto f = outliers_of(
      scheduled_pairwise(
          p, [&](int i, int j) { return i == slow_host || j == slow_host ? 0.2 : jitter(i, j); }),
      link_metadata(), {});
  EXPECT_EQ(hosts_of(f, "culprit_host"), std::vector<std::string>{"h18"}) << dump(f);
  EXPECT_TRUE(hosts_of(f, "slow_link").empty()) << dump(f);

  // A link beyond the ring that the schedule measures (its first sampled round's first pair).
  const auto rounds = collectives::pairing_schedule(p, false, 2);
  int a = -1, b = -1;
  for (std::size_t k = 2; k < rounds.size() && a < 0; ++k) {  // rounds 0-1 are the ring's
    for (int i = 0; i < p && a < 0; ++i) {
      if (rounds[k][static_cast<std::size_t>(i)] > i)
        a = i, b = rounds[k][static_cast<std::size_t>(i)];
    }
  }
  ASSERT_GE(a, 0);
  const auto g = outliers_of(
      scheduled_pairwise(p, [&](int i, int j) { return i == b && j == a ? 0.3 : jitter(i, j); }),
      link_metadata(), {});
  EXPECT_TRUE(hosts_of(g, "culprit_host").empty()) << dump(g);
  const std::string ha = "h" + std::to_string(a + 1), hb = "h" + std::to_string(b + 1);
  EXPECT_EQ(hosts_of(g, "slow_link"),
            std::vector<std::string>{std::min(ha, hb) + "-" + std::max(ha, hb)})
      << dump(g);
}

// 32 hosts on a loaded machine (docs/scale.md): healthy links spread 0.42-1.96 GB/s, h32's NIC
// is slow (0.012 GB/s on every link). On a linear scale h32's best link had z -2.0 and was never
// named; on the logs' scale it is, and the healthy spread alone names nobody.
TEST(CollectivesOutliers, ASlowHostIsNamedAmongWidelySpreadHealthyLinks) {
  const int p = 32, slow_host = 31;
  auto spread = [](int i, int j) { return 0.42 + 1.54 * (((i * 7 + j * 13) % 17) / 16.0); };
  const auto f = outliers_of(
      scheduled_pairwise(
          p, [&](int i, int j) { return i == slow_host || j == slow_host ? 0.012 : spread(i, j); }),
      link_metadata(), {});
  EXPECT_EQ(hosts_of(f, "culprit_host"), std::vector<std::string>{"h32"}) << dump(f);
  EXPECT_TRUE(hosts_of(f, "slow_link").empty()) << dump(f);
  const auto quiet = outliers_of(scheduled_pairwise(p, spread), link_metadata(), {});
  EXPECT_TRUE(quiet.empty()) << dump(quiet);
}

TEST(CollectivesOutliers, SummaryShowsHostsFindingsAndTheMatrix) {
  json rs = pairwise({{0, 2.0, 1.9}, {2.1, 0, 2.0}, {0.012, 0.011, 0}});
  const auto f = outliers_of(rs, link_metadata(), {});
  std::ostringstream out;
  print_cluster_summary(out, model::results_from_json(rs),
                        model::benchmark_metadata_from_json(link_metadata()), f, {});
  const std::string text = out.str();
  EXPECT_NE(text.find("cluster: 3 hosts, 3 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("likely the culprit"), std::string::npos) << text;
  EXPECT_NE(text.find("row sends to column"), std::string::npos) << text;
  EXPECT_NE(text.find("0.012"), std::string::npos) << text;
}

TEST(CollectivesOutliers, OptionsAreValidated) {
  EXPECT_EQ(op_timeout_option({{"op-timeout", "12.5"}}), 12.5);
  EXPECT_EQ(op_timeout_option({}), 30);
  EXPECT_THROW((void)op_timeout_option({{"op-timeout", "-1"}}), std::exception);
  EXPECT_THROW((void)op_timeout_option({{"op-timeout", "soon"}}), std::exception);
  EXPECT_THROW((void)outlier_options({{"outlier-z", "0"}}), std::exception);
  EXPECT_EQ(outlier_options({{"outlier-z", "5"}, {"outlier-min-dev", "0.5"}}).z_threshold, 5);
}

namespace {
void bench_noop(state&) {}
}  // namespace
INFRABENCH_REGISTER(bench_noop, "test/needs_four_ranks").scope(rank_scope::collective).min_ranks(4);

TEST(CollectivesScope, BuilderFlagsAndRankRequirement) {
  const benchmark* b = registry::instance().find("test/needs_four_ranks");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->scope(), rank_scope::collective);
  EXPECT_EQ(b->min_ranks(), 4);
  capabilities caps;
  caps.world_size = 2;
  EXPECT_NE(b->unmet_requirements(caps).find("needs at least 4 ranks (world size 2)"),
            std::string::npos);
  caps.world_size = 4;
  EXPECT_EQ(b->unmet_requirements(caps), "");
  EXPECT_EQ(registry::instance().find("test/spin")->scope(), rank_scope::node);
}

TEST(CollectivesOutliers, LinkMatricesAreFoundByDeclarationNotByName) {
  // The same link matrix under another benchmark's name is analysed as links when its metadata
  // declares peer-rank cells; under pairwise's name without them it is not: the declaration
  // decides, never the name.
  json rs = pairwise({{0, 2.0, 1.9}, {2.1, 0, 2.0}, {0.012, 0.011, 0}});
  for (auto& r : rs) r["benchmark"] = "links/other";
  EXPECT_EQ(hosts_of(outliers_of(rs, link_metadata("links/other"), {}), "culprit_host"),
            std::vector<std::string>{"h3"});
  const json plain = pairwise({{0, 2.0, 1.9}, {2.1, 0, 2.0}, {0.012, 0.011, 0}});
  EXPECT_TRUE(hosts_of(outliers_of(plain, json::object(), {}), "culprit_host").empty());
}

TEST(CollectivesOutliers, ASlowGpuIsNamedAmongTheNodesGpus) {
  // One rank per GPU on one 8-GPU node: GPU 5's GEMM is 40% slow.
  json rs = json::array();
  for (int g = 0; g < 8; ++g) {
    json r = result_of("gemm/cublas", "n1", g, {mk_metric("gflops", g == 5 ? 420.0 : 700.0 + g)});
    r["gpu"] = g;
    rs.push_back(r);
  }
  const auto f = outliers_of(rs, json::object(), {});
  ASSERT_EQ(f.size(), 1u) << dump(f);
  EXPECT_EQ(f[0].host, "n1");
  EXPECT_EQ(f[0].gpu.value_or(-1), 5);
  const std::string text = f[0].text;
  EXPECT_EQ(text.rfind("n1 gpu 5: gemm/cublas", 0), 0u) << text;
  EXPECT_NE(text.find("the median of 8 GPUs"), std::string::npos) << text;
}

TEST(CollectivesOutliers, OneRankPerGpuWrapsWhenRanksOutnumberGpus) {
  EXPECT_EQ(infrabench::gpu_for_local_rank(0, 8), 0);
  EXPECT_EQ(infrabench::gpu_for_local_rank(7, 8), 7);
  EXPECT_EQ(infrabench::gpu_for_local_rank(9, 8), 1);
  EXPECT_EQ(infrabench::gpu_for_local_rank(0, 0), -1);
  EXPECT_EQ(infrabench::gpu_for_local_rank(-1, 8), -1);
}
