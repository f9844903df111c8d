// Matrix assembly for the GPU and NUMA bandwidth matrices: which columns a row measures, the
// messages for indices that do not exist, cell sweeps with n/a cells, and per-cell statistics.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "infrabench/result.h"
#include "topology/matrix.h"

namespace topo = infrabench::kernels::topology;

TEST(GpuBandwidthMatrix, SelectsColumns) {
  std::string error;
  EXPECT_EQ(topo::select_columns(4, -1, &error), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(topo::select_columns(4, 2, &error), (std::vector<int>{2}));
  EXPECT_TRUE(topo::select_columns(2, 9, &error).empty());
  EXPECT_EQ(error, "GPU 9 does not exist: this machine has 2 CUDA devices (0-1)");
  EXPECT_TRUE(topo::select_columns(1, 3, &error).empty());
  EXPECT_EQ(error, "GPU 3 does not exist: this machine has 1 CUDA device (0)");
  EXPECT_TRUE(topo::select_columns(0, -1, &error).empty());
  EXPECT_EQ(topo::missing_index_reason("GPU", 0, 0),
            "GPU 0 does not exist: this machine has no CUDA devices");
}

TEST(GpuBandwidthMatrix, SelectsIdsThatNeedNotBeContiguous) {
  std::string error;
  EXPECT_EQ(topo::select_ids({0, 2}, -1, &error, "NUMA node"), (std::vector<int>{0, 2}));
  EXPECT_EQ(topo::select_ids({0, 2}, 2, &error, "NUMA node"), (std::vector<int>{2}));
  EXPECT_TRUE(topo::select_ids({0, 2}, 1, &error, "NUMA node").empty());
  EXPECT_EQ(error, "NUMA node 1 does not exist: this machine has 2 (0,2)");
}

TEST(GpuBandwidthMatrix, MetricNames) {
  EXPECT_EQ(topo::cell_metric("bandwidth_gbps", "gpu3"), "bandwidth_gbps_gpu3");
}

TEST(GpuBandwidthMatrix, SummarizesCells) {
  const auto s = topo::summarize_cell({3.0, 1.0, 2.0, 100.0, 2.0});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  // deviations {1, 1, 0, 98, 0} -> MAD 1 -> 1.4826 / 2
  EXPECT_NEAR(s.robust_cv, 1.4826 / 2, 1e-12);
  EXPECT_DOUBLE_EQ(topo::summarize_cell({1.0, 3.0}).median, 2.0);
  EXPECT_EQ(topo::summarize_cell({}).n, 0u);
}

// A cell's metric carries a value per timed sample (its interval in the report); a cell timed per
// operation (29,000 latency samples on an H100) is cut to max_cell_values medians of runs.
TEST(GpuBandwidthMatrix, CellValuesAreOnePerSampleUpToTheCap) {
  const auto rate = [](double t) { return 1.0 / t; };
  EXPECT_EQ(topo::cell_values({0.5, 0.25}, rate), (std::vector<double>{2, 4}));
  std::vector<double> many(2 * topo::max_cell_values + 1, 0.5);
  many[0] = many[1] = 0.25;  // the first run of three: median 0.25 s
  const auto v = topo::cell_values(many, rate);
  ASSERT_EQ(v.size(), 667u);  // runs of three: 2001 samples, 667 values
  EXPECT_LE(v.size(), topo::max_cell_values);
  EXPECT_DOUBLE_EQ(v[0], 4.0);
  EXPECT_DOUBLE_EQ(v[1], 2.0);
  EXPECT_TRUE(topo::cell_values({}, rate).empty());
}

TEST(GpuBandwidthMatrix, SweepRunsRunnableCellsAndSkipsTheWarmUp) {
  // A fake row of a 4-GPU p2p matrix from GPU 0: GPU 2 has no peer access.
  topo::cell_sweep sweep;
  int calls1 = 0, calls3 = 0;
  sweep.add("gpu1", [&] { return 0.001 * ++calls1; });
  sweep.add_na("gpu2", "peer access unsupported from GPU 0 to GPU 2 (cudaDeviceCanAccessPeer = 0)");
  sweep.add("gpu3", [&] {
    ++calls3;
    return 0.5;
  });
  EXPECT_TRUE(sweep.any_runnable());
  EXPECT_FALSE(sweep.any_error());
  EXPECT_EQ(sweep.na_summary(),
            "gpu2: n/a: peer access unsupported from GPU 0 to GPU 2 (cudaDeviceCanAccessPeer = 0)");

  EXPECT_DOUBLE_EQ(sweep.run_once(), 0.501);  // warm-up: run, not recorded
  EXPECT_DOUBLE_EQ(sweep.run_once(), 0.502);
  EXPECT_DOUBLE_EQ(sweep.run_once(), 0.503);
  EXPECT_EQ(calls1, 3);
  EXPECT_EQ(calls3, 3);
  const auto& cells = sweep.cells();
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].samples, (std::vector<double>{0.002, 0.003}));
  EXPECT_TRUE(cells[1].samples.empty());
  EXPECT_FALSE(cells[1].runnable());
  EXPECT_EQ(cells[2].samples, (std::vector<double>{0.5, 0.5}));
}

TEST(GpuBandwidthMatrix, BatchedCellsGetTheBatchAndSkipCalibration) {
  // A row timed by the harness's GPU timing: each call passes the batch size to every cell, and
  // the first calls (warm-up and calibration) are not samples.
  topo::cell_sweep sweep;
  std::vector<std::int64_t> seen;
  sweep.add_batched("gpu0", [&](std::int64_t n) {
    seen.push_back(n);
    return 1.0 / static_cast<double>(n);
  });
  sweep.add_na("gpu1", "not enough memory", /*is_error=*/true);
  sweep.skip_first_calls(4);
  for (std::int64_t n : {1, 1, 16, 8, 8, 8}) (void)sweep.run_batch(n);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 1, 16, 8, 8, 8}));
  EXPECT_EQ(sweep.cells()[0].samples, (std::vector<double>{0.125, 0.125}));
  EXPECT_TRUE(sweep.cells()[0].runnable());
  EXPECT_TRUE(sweep.any_error());
}

TEST(GpuBandwidthMatrix, RowWithoutRunnableCellsReportsWhy) {
  topo::cell_sweep sweep;
  sweep.add_na("gpu1", "needs 2.0 GiB of device memory on GPU 1; 1.0 GiB free of 80.0 GiB", true);
  sweep.add_na("gpu2", "peer access unsupported");
  EXPECT_FALSE(sweep.any_runnable());
  EXPECT_TRUE(sweep.any_error());
  EXPECT_DOUBLE_EQ(sweep.run_once(), 0.0);
  EXPECT_NE(sweep.na_summary().find("gpu1: n/a: needs 2.0 GiB"), std::string::npos);
  EXPECT_NE(sweep.na_summary().find("; gpu2: n/a: peer access unsupported"), std::string::npos);
}

TEST(GpuBandwidthMatrix, CellErrorsPropagate) {
  topo::cell_sweep sweep;
  sweep.add("gpu0",
            []() -> double { throw std::runtime_error("cudaMemcpyAsync: invalid argument"); });
  EXPECT_THROW(sweep.run_once(), std::runtime_error);
}

TEST(GpuBandwidthMatrix, NaCellIsExplicitInTheReport) {
  // A p2p row from GPU 0: GPU 2 has no peer access, GPU 3 lacks memory; the row still runs, and
  // the report lists every cell, the n/a ones with their reason, rather than leaving them out.
  topo::cell_sweep sweep;
  sweep.add("dst1", [] { return 0.001; });
  sweep.add_na("dst2", "peer access unsupported from GPU 0 to GPU 2 (cudaDeviceCanAccessPeer = 0)");
  sweep.add_na("dst3", "needs 2.0 GiB of device memory on GPU 3; 1.0 GiB free of 80.0 GiB", true);
  sweep.add_na("dst4", "");
  const auto entries = sweep.entries();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].column, "dst1");
  EXPECT_TRUE(entries[0].measured);
  EXPECT_EQ(entries[0].reason, "");
  EXPECT_FALSE(entries[1].measured);
  EXPECT_EQ(entries[1].reason,
            "peer access unsupported from GPU 0 to GPU 2 (cudaDeviceCanAccessPeer = 0)");
  EXPECT_FALSE(entries[1].error);
  EXPECT_TRUE(entries[2].error);
  EXPECT_FALSE(entries[3].reason.empty());  // the schema wants a reason on every n/a cell

  // As the result's JSON carries them.
  infrabench::result r;
  r.benchmark = "bandwidth/p2p";
  for (const auto& e : entries) r.cells.push_back({e.column, e.measured, e.reason, e.error});
  const auto j = r.to_json();
  ASSERT_TRUE(j.contains("cells"));
  ASSERT_EQ(j["cells"].size(), 4u);
  EXPECT_EQ(j["cells"][0], (nlohmann::json{{"column", "dst1"}, {"status", "measured"}}));
  EXPECT_EQ(j["cells"][1]["status"], "n/a");
  EXPECT_EQ(j["cells"][1]["reason"],
            "peer access unsupported from GPU 0 to GPU 2 (cudaDeviceCanAccessPeer = 0)");
  EXPECT_EQ(j["cells"][1]["error"], false);
  EXPECT_EQ(j["cells"][2]["error"], true);

  // Results of benchmarks that are not matrices carry no cells.
  EXPECT_FALSE(infrabench::result{}.to_json().contains("cells"));
}
