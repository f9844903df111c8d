// The scorecard (harness/src/scorecard.cpp): a row per hop of the data path and device, the best
// valid headline (the median over ranks of each configuration), INVALID only where nothing is
// valid, skipped and failed hops with their reason, hops no benchmark measures, the fractions its
// benchmark declares, and the console and JSON forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "infrabench/model/report.h"
#include "infrabench/reason.h"
#include "infrabench/scorecard.h"
#include "infrabench/text_layout.h"

#include "test_reports_util.h"

namespace {

using namespace infrabench;
using namespace infrabench::model;
using json = nlohmann::json;

metric_decl headline(const std::string& name, const std::string& unit, data_hop hop,
                     better dir = better::higher) {
  metric_decl d{name, unit, dir};
  d.headline = true;
  d.hop = hop;
  return d;
}

metric_view metric(const std::string& name, const std::string& unit, double value) {
  return ib_test::metric_view_of(name, unit, value);
}

result_view result(const std::string& bench, json axes, std::vector<metric_view> metrics,
                   bool valid = true, int rank = 0) {
  result_view r;
  r.benchmark = bench;
  r.status = status::passed;
  r.valid = valid;
  if (!valid) r.invalid_reasons = {"noisy: robust CV 31% > 10%"};
  r.rank = rank;
  for (auto& [k, v] : axes.items()) {
    r.axes[k] = v;
    r.axes_display[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  r.metrics = std::move(metrics);
  return r;
}

result_view skipped(const std::string& bench, const std::string& why,
                    reason_code code = reason_code::none) {
  result_view r;
  r.benchmark = bench;
  r.status = status::skipped;
  r.reason = why;
  r.reason_code = code;
  return r;
}

// A CPU node's run: storage in three configurations (the fastest INVALID), a CPU GEMM with its
// fraction of the FMA peak, a GPU copy skipped for want of a GPU, no preprocessing benchmark.
report_view cpu_node() {
  report_view r;
  r.benchmarks["storage/read"].metrics = {
      headline("bandwidth_gbps", "GB/s", data_hop::storage_read)};
  auto& gemm = r.benchmarks["gemm/ours_fp32"].metrics;
  gemm = {headline("gflops", "GFLOP/s", data_hop::compute),
          {"peak_*_gflops", "GFLOP/s", better::higher, metric_role::information},
          {"pct_of_fma_peak", "%"}};
  gemm.back().relation = {relation_kind::fraction_of, "peak_*_gflops"};
  r.benchmarks["bandwidth/h2d"].metrics = {headline("bandwidth_gbps", "GB/s", data_hop::h2d)};
  r.benchmarks["bandwidth/h2d"].requires_ = {"cuda"};
  r.benchmarks["bandwidth/host_memory"].metrics = {metric_decl{"bandwidth_gbps", "GB/s"}};
  r.results = {
      result("storage/read", {{"queue_depth", 1}, {"block_size", "4KiB"}},
             {metric("bandwidth_gbps", "GB/s", 0.2)}),
      result("storage/read", {{"queue_depth", 32}, {"block_size", "4KiB"}},
             {metric("bandwidth_gbps", "GB/s", 1.5)}),
      result("storage/read", {{"queue_depth", 64}, {"block_size", "4KiB"}},
             {metric("bandwidth_gbps", "GB/s", 3.0)}, false),
      result("gemm/ours_fp32", {{"threads", 0}},
             {metric("gflops", "GFLOP/s", 180), metric("peak_avx512_fp32_gflops", "GFLOP/s", 240),
              metric("pct_of_fma_peak", "%", 75)}),
      skipped("bandwidth/h2d", "no NVIDIA driver on this machine"),
      result("bandwidth/host_memory", {{"threads", 0}}, {metric("bandwidth_gbps", "GB/s", 25)}),
  };
  return r;
}

// A copy: the rows are often a temporary.
scorecard_row row(const std::vector<scorecard_row>& rows, data_hop hop, std::optional<bool> gpu) {
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const scorecard_row& r) {
    return r.hop == hop && r.gpu == gpu;
  });
  if (it == rows.end()) throw std::runtime_error("no row for " + std::string(to_string(hop)));
  return *it;
}

TEST(Scorecard, OneRowPerHopInPathOrder) {
  const auto rows = make_scorecard(cpu_node());
  std::vector<data_hop> hops;
  for (const auto& r : rows) hops.push_back(r.hop);
  EXPECT_EQ(hops,
            (std::vector<data_hop>{data_hop::storage_read, data_hop::preprocess, data_hop::h2d,
                                   data_hop::compute, data_hop::allreduce, data_hop::step}));
  // A benchmark that declares no hop (host memory) has no row.
  for (const auto& r : rows) EXPECT_NE(r.benchmark, "bandwidth/host_memory");
}

// The best configuration whether or not it is valid (the same workload from run to run), said
// INVALID with its reason; a valid best one is measured.
TEST(Scorecard, TheBestConfigurationWithItsValidity) {
  const auto s = row(make_scorecard(cpu_node()), data_hop::storage_read, false);
  EXPECT_EQ(s.status, scorecard_status::invalid);
  EXPECT_DOUBLE_EQ(s.value, 3.0);
  EXPECT_EQ(s.unit, "GB/s");
  EXPECT_EQ(s.metric, "bandwidth_gbps");
  EXPECT_EQ(s.configuration, "queue_depth=64");  // the axis that varies, not block_size
  EXPECT_EQ(s.configurations, 3u);
  EXPECT_EQ(s.why, "noisy: robust CV 31% > 10%");
  report_view quiet = cpu_node();
  for (auto& x : quiet.results) x.valid = true;
  const auto v = row(make_scorecard(quiet), data_hop::storage_read, false);
  EXPECT_EQ(v.status, scorecard_status::measured);
  EXPECT_DOUBLE_EQ(v.value, 3.0);
  EXPECT_TRUE(v.why.empty());
}

// A configuration over several ranks is INVALID when one of its results is.
TEST(Scorecard, OneInvalidRankMakesItsConfigurationInvalid) {
  report_view r;
  r.benchmarks["storage/read"].metrics = {
      headline("bandwidth_gbps", "GB/s", data_hop::storage_read)};
  r.results = {
      result("storage/read", {{"queue_depth", 1}}, {metric("bandwidth_gbps", "GB/s", 2)}, true, 0),
      result("storage/read", {{"queue_depth", 1}}, {metric("bandwidth_gbps", "GB/s", 3)}, false, 1),
      result("storage/read", {{"queue_depth", 1}}, {metric("bandwidth_gbps", "GB/s", 4)}, true, 2)};
  const auto s = row(make_scorecard(r), data_hop::storage_read, false);
  EXPECT_EQ(s.status, scorecard_status::invalid);
  EXPECT_DOUBLE_EQ(s.value, 3);
  EXPECT_EQ(s.results, 3u);
}

TEST(Scorecard, FractionsTheBenchmarkDeclares) {
  const auto c = row(make_scorecard(cpu_node()), data_hop::compute, false);
  EXPECT_EQ(c.status, scorecard_status::measured);
  EXPECT_DOUBLE_EQ(c.value, 180);
  ASSERT_EQ(c.fractions.size(), 1u);
  EXPECT_EQ(c.fractions[0].metric, "pct_of_fma_peak");
  EXPECT_DOUBLE_EQ(c.fractions[0].value, 75);
  EXPECT_EQ(c.fractions[0].of, "peak_*_gflops");
}

TEST(Scorecard, SkippedAndNotRunHopsSayWhy) {
  const auto rows = make_scorecard(cpu_node());
  const auto h2d = row(rows, data_hop::h2d, true);
  EXPECT_EQ(h2d.status, scorecard_status::skipped);
  EXPECT_NE(h2d.why.find("no NVIDIA driver"), std::string::npos) << h2d.why;
  const auto pre = row(rows, data_hop::preprocess, std::nullopt);
  EXPECT_EQ(pre.status, scorecard_status::not_run);
  EXPECT_EQ(pre.why, "no benchmark of this run measures it");
}

TEST(Scorecard, FailedWhenEveryResultFailed) {
  report_view r = cpu_node();
  for (auto& x : r.results) {
    if (x.benchmark == "gemm/ours_fp32") {
      x.status = status::failed;
      x.reason = "verification failed";
    }
  }
  const auto c = row(make_scorecard(r), data_hop::compute, false);
  EXPECT_EQ(c.status, scorecard_status::failed);
  EXPECT_EQ(c.why, "gemm/ours_fp32: verification failed");
}

// Several ranks: a configuration's value is the median of its ranks' (one slow rank does not set
// it); a node-local benchmark's skip on the other ranks is not a skip of the hop.
TEST(Scorecard, MedianOverRanksAndNodeLocalSkipsIgnored) {
  report_view r;
  r.benchmarks["collectives/mpi_allreduce"].metrics = {
      headline("busbw_gbps", "GB/s", data_hop::allreduce)};
  r.benchmarks["bandwidth/p2p"].metrics = {headline("bandwidth_gbps", "GB/s", data_hop::h2d)};
  r.benchmarks["bandwidth/p2p"].requires_ = {"cuda"};
  for (int rank = 0; rank < 3; ++rank) {
    r.results.push_back(result("collectives/mpi_allreduce", {{"size", "1MiB"}},
                               {metric("busbw_gbps", "GB/s", rank == 2 ? 1.0 : 10.0 + rank)}, true,
                               rank));
  }
  r.results.push_back(result("bandwidth/p2p", {}, {metric("bandwidth_gbps", "GB/s", 40)}, true, 0));
  r.results.push_back(
      skipped("bandwidth/p2p", "node-local: rank 0 ran it", reason_code::node_local));
  const auto rows = make_scorecard(r);
  const auto a = row(rows, data_hop::allreduce, false);
  EXPECT_DOUBLE_EQ(a.value, 10.0);
  EXPECT_EQ(a.results, 3u);
  EXPECT_EQ(row(rows, data_hop::h2d, true).status, scorecard_status::measured);
}

TEST(Scorecard, LowerIsBetterPicksTheSmallest) {
  report_view r;
  r.benchmarks["training/step"].metrics = {
      headline("step_ms", "ms", data_hop::step, better::lower)};
  r.results = {result("training/step", {{"batch", 8}}, {metric("step_ms", "ms", 20)}),
               result("training/step", {{"batch", 16}}, {metric("step_ms", "ms", 12)})};
  const auto s = row(make_scorecard(r), data_hop::step, false);
  EXPECT_DOUBLE_EQ(s.value, 12);
  EXPECT_FALSE(s.higher_is_better);
}

// A report older than the declarations cannot say which benchmark measures a hop; one that has
// them and ran none of a hop's benchmarks says the run did not measure it.
TEST(Scorecard, ReportWithoutDeclarationsSaysSo) {
  report_view r;
  r.results = {result("storage/read", {}, {metric("bandwidth_gbps", "GB/s", 1)})};
  const auto rows = make_scorecard(r);
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& x : rows) {
    EXPECT_EQ(x.status, scorecard_status::not_run);
    EXPECT_NE(x.why.find("no metric declarations"), std::string::npos);
  }
  r.benchmarks["bandwidth/host_memory"].metrics = {metric_decl{"bandwidth_gbps", "GB/s"}};
  for (const auto& x : make_scorecard(r)) EXPECT_EQ(x.why, "no benchmark of this run measures it");
}

TEST(Scorecard, JsonRows) {
  const json j = scorecard_json(make_scorecard(cpu_node()));
  ASSERT_TRUE(j.contains("method"));
  const auto& rows = j.at("rows");
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0]["hop"], "storage_read");
  EXPECT_EQ(rows[0]["device"], "cpu");
  EXPECT_EQ(rows[0]["status"], "invalid");
  EXPECT_EQ(rows[0]["value"], 3.0);
  EXPECT_EQ(rows[0]["why"], "noisy: robust CV 31% > 10%");
  EXPECT_EQ(rows[0]["better"], "higher");
  EXPECT_TRUE(rows[1]["device"].is_null());
  EXPECT_EQ(rows[1]["status"], "not run");
  EXPECT_FALSE(rows[1].contains("value"));
  EXPECT_EQ(rows[2]["status"], "skipped");
  EXPECT_EQ(rows[2]["benchmark"], "bandwidth/h2d");
  EXPECT_EQ(rows[3]["fractions"][0]["metric"], "pct_of_fma_peak");
}

TEST(Scorecard, ConsoleLinesFitAndSayWhy) {
  report_view r = cpu_node();
  for (auto& x : r.results) {
    if (x.status == status::skipped) x.reason += ": " + std::string(300, 'x');  // wrapped, not cut
  }
  const auto lines = scorecard_lines(make_scorecard(r), false, console_width);
  ASSERT_GT(lines.size(), 8u);
  EXPECT_EQ(lines[0].rfind("Scorecard", 0), 0u);
  std::string text;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), console_width) << l;
    text += l + "\n";
  }
  EXPECT_NE(text.find("3.00 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("INVALID ["), std::string::npos) << text;
  EXPECT_NE(text.find("pct_of_fma_peak 75.0 %"), std::string::npos) << text;
  EXPECT_NE(text.find("no NVIDIA driver"), std::string::npos) << text;  // a footnote
  // A simulated node's rows are never `measured`: in the rows, the console and the JSON.
  r.simulated = true;
  const auto rows = make_scorecard(r);
  EXPECT_EQ(row(rows, data_hop::compute, false).status, scorecard_status::simulated);
  EXPECT_EQ(row(rows, data_hop::storage_read, false).status, scorecard_status::invalid);
  EXPECT_EQ(scorecard_json(rows)["rows"][3]["status"], "simulated");
  EXPECT_TRUE(scorecard_json(rows)["rows"][3].contains("value"));
  const auto sim = scorecard_lines(rows, true, console_width);
  EXPECT_NE(sim[0].find("SIMULATED"), std::string::npos);
  EXPECT_NE(std::string(sim[3] + sim[4] + sim[5] + sim[6]).find("simulated"), std::string::npos);
}

}  // namespace
