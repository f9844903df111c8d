#include <gtest/gtest.h>
#include <filesystem>
#include <sstream>

#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/model/report.h"
#include "infrabench/report.h"

using namespace infrabench;
namespace fs = std::filesystem;

namespace {

result sample_result(status st) {
  result r;
  r.benchmark = "bandwidth/host_memory";
  r.axes = {{"kernel", "triad"}, {"array_size", 268435456}};
  r.axis_display = {"triad", "256MiB"};
  r.st = st;
  if (st == status::passed) {
    r.samples_s = {0.010, 0.011, 0.012};
    r.time = summarize(r.samples_s);
    metric m;
    m.name = "bandwidth_gbps";
    m.unit = "GB/s";
    m.value = 20.5;
    m.best = 22;
    m.samples = {22, 20.5, 19};
    r.metrics.push_back(m);
  } else {
    r.reason = "no CUDA device: test";
  }
  return r;
}

}  // namespace

TEST(Report, SummaryCountsAndFields) {
  report_context ctx;
  ctx.command_line = {"infrabench", "run"};
  const std::vector<result> results = {sample_result(status::passed),
                                       sample_result(status::skipped)};
  const auto rep = make_report(ctx, results);
  EXPECT_EQ(rep["schema_version"], report_schema_version);
  EXPECT_EQ(rep["summary"]["passed"], 1);
  EXPECT_EQ(rep["summary"]["skipped"], 1);
  EXPECT_EQ(rep["results"][0]["samples_s"].size(), 3u);
  EXPECT_EQ(rep["results"][0]["metrics"][0]["unit"], "GB/s");
  EXPECT_EQ(rep["results"][1]["reason"], "no CUDA device: test");
}

TEST(Report, TableShowsAxesMetricsAndReasons) {
  nlohmann::json results = nlohmann::json::array();
  results.push_back(sample_result(status::passed).to_json());
  auto skipped = sample_result(status::skipped).to_json();
  skipped["benchmark"] = "gemm/cuda";
  results.push_back(skipped);
  std::ostringstream out;
  print_table(out, model::results_from_json(results), false);
  const std::string text = out.str();
  EXPECT_NE(text.find("bandwidth/host_memory"), std::string::npos) << text;
  EXPECT_NE(text.find("256MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("20.5 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("1 benchmark skipped: no CUDA device: test"), std::string::npos) << text;
}

TEST(Report, UnitScaling) {
  EXPECT_EQ(format_time(1.5e-9), "1.50 ns");
  EXPECT_EQ(format_time(2.5e-5), "25.0 us");
  EXPECT_EQ(format_time(0.25), "250 ms");
  EXPECT_EQ(format_scaled(0.5, "GB/s"), "500 MB/s");
  EXPECT_EQ(format_scaled(1500, "GFLOP/s"), "1.50 TFLOP/s");
  EXPECT_EQ(format_scaled(2.5e6, "loads/s"), "2.50 Mloads/s");
  EXPECT_EQ(format_scaled(85, "ns"), "85.0 ns");
}

TEST(Report, BenchmarkMetadataSaysWhatEachAxisIs) {
  benchmark b("bandwidth/test_copy", [](state&) {});
  b.require(req::cuda)
      .uses("gemm/cpu_peak")
      .add_int64_axis("size", {4096, 65536}, bytes_axis("bytes per copy"))
      .add_string_axis("copy", {"ce", "sm"}, choice_axis("engine", {"ce", "sm"}));
  const auto meta = benchmark_metadata_json(b);
  EXPECT_EQ(meta["requires"], nlohmann::json::array({"cuda"}));
  EXPECT_EQ(meta["axes"]["size"]["kind"], "int64");
  EXPECT_TRUE(meta["axes"]["size"]["bytes"].get<bool>());
  EXPECT_EQ(meta["axes"]["size"]["unit"], "B");
  EXPECT_FALSE(meta["axes"]["copy"]["bytes"].get<bool>());
  EXPECT_EQ(meta["axes"]["copy"]["kind"], "string");
  EXPECT_EQ(meta["uses"], nlohmann::json::array({"gemm/cpu_peak"}));
  report_context ctx;
  EXPECT_FALSE(make_report(ctx, {})["run"].contains("benchmark_metadata"));
  ctx.benchmark_metadata[b.name()] = meta;
  EXPECT_EQ(make_report(ctx, {})["run"]["benchmark_metadata"][b.name()], meta);
}

TEST(Report, ResultIdentityIsOneDefinition) {
  const auto r = sample_result(status::passed);
  auto j = r;
  j.rank = 3;
  // Axes sorted by name whatever their declaration order; the rank only when asked for.
  EXPECT_EQ(result_identity(j, false),
            "bandwidth/host_memory|array_size=268435456|kernel=\"triad\"");
  EXPECT_EQ(result_identity(j, true), result_identity(j, false) + "|rank=3");
  std::map<std::string, nlohmann::json> axes = {{"kernel", "triad"}, {"array_size", 268435456}};
  EXPECT_EQ(result_identity("bandwidth/host_memory", axes, 3), result_identity(j, true));
  EXPECT_EQ(parse_metric_role("information"), metric_role::information);
  EXPECT_EQ(parse_metric_role("info"), std::nullopt);
}
