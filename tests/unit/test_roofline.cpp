// The data-path roofline (reports/src/roofline.cpp): the job's per-sample facts, each hop's
// conversion into samples/s, the choice of configuration, the prediction and its limit, the
// what-ifs, and hops the report lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/report.h"
#include "infrabench/reports/compare.h"
#include "infrabench/reports/html_report.h"
#include "infrabench/reports/roofline.h"

#include "test_reports_util.h"

namespace {

using namespace infrabench;
using namespace infrabench::reports;
using json = nlohmann::json;

metric_decl decl(const std::string& name, const std::string& unit, metric_kind kind,
                 bool headline = false, data_hop hop = data_hop::none) {
  metric_decl d{name, unit};
  d.kind = kind;
  d.headline = headline;
  d.hop = hop;
  return d;
}

metric_view metric(const std::string& name, const std::string& unit, double value) {
  return ib_test::metric_view_of(name, unit, value);
}

result_view result(const std::string& bench, json axes, std::vector<metric_view> metrics) {
  result_view r;
  r.benchmark = bench;
  r.status = status::passed;
  for (auto& [k, v] : axes.items()) r.axes[k] = v;
  r.metrics = std::move(metrics);
  return r;
}

// A report with known numbers: storage 1.056 MB/s at the token loader's pattern (250 samples/s
// of 4224 B), a gpt2-tiny step of 16 ms at batch 8 (500 samples/s), measured 16000 tokens/s.
report_view fixture() {
  report_view r;
  r.world_size = 1;
  r.inventories = {host_view{"node1", "", {{"cpu.logical_cpus_usable", "2"}}}};
  r.benchmarks["storage/read"].metrics = {
      decl("bandwidth_gbps", "GB/s", metric_kind::rate, true, data_hop::storage_read)};
  r.benchmarks["training/step"].metrics = {
      decl("tokens_per_s", "tokens/s", metric_kind::rate, true, data_hop::step),
      decl("forward_ms", "ms", metric_kind::time, false, data_hop::compute),
      decl("backward_ms", "ms", metric_kind::time, false, data_hop::compute),
      decl("optimizer_ms", "ms", metric_kind::time, false, data_hop::compute),
      decl("other_ms", "ms", metric_kind::time, false, data_hop::compute),
      decl("allreduce_ms", "ms", metric_kind::time, false, data_hop::allreduce)};
  const json loader = {{"pattern", "rand"}, {"direct", 1}, {"block_size", 4096}, {"jobs", 1}};
  json qd1 = loader, qd32 = loader, seq = loader;
  qd1["queue_depth"] = 1;
  qd32["queue_depth"] = 32;
  seq["queue_depth"] = 8;
  seq["pattern"] = "seq";
  r.results.push_back(result("storage/read", qd1, {metric("bandwidth_gbps", "GB/s", 0.0005)}));
  r.results.push_back(result("storage/read", qd32, {metric("bandwidth_gbps", "GB/s", 0.001056)}));
  r.results.push_back(result("storage/read", seq, {metric("bandwidth_gbps", "GB/s", 9.0)}));
  r.results.push_back(
      result("training/step", {{"model", "gpt2-tiny"}, {"batch", 8}, {"seq", 0}},
             {metric("tokens_per_s", "tokens/s", 16000), metric("forward_ms", "ms", 5),
              metric("backward_ms", "ms", 8), metric("optimizer_ms", "ms", 1),
              metric("other_ms", "ms", 2), metric("allreduce_ms", "ms", 0)}));
  return r;
}

roofline_job tiny() {
  roofline_job j;
  j.model = "gpt2-tiny";
  j.batch = 8;
  return j;
}

const roofline_hop& hop(const roofline_result& r, const std::string& name) {
  for (const auto& h : r.hops) {
    if (h.name == name) return h;
  }
  throw std::runtime_error("no hop " + name);
}

TEST(Roofline, JobFactsOfTheTokenJob) {
  const job_facts f = describe_job(tiny());
  EXPECT_EQ(f.family, "gpt2");
  EXPECT_EQ(f.seq, 64);
  EXPECT_EQ(f.parameters, 136960);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 136960.0 * 4);
  // 65 tokens of 2 bytes at an even offset: 1 + 128/4096 blocks of 4 KiB on average.
  EXPECT_DOUBLE_EQ(f.disk_bytes_per_sample, 4224);
  EXPECT_DOUBLE_EQ(f.read_block_bytes, 4096);
  EXPECT_EQ(f.read_queue_depth, 8);
  EXPECT_DOUBLE_EQ(f.device_bytes_per_sample, 64 * 8);
  EXPECT_GT(f.flops_per_sample, 6 * 136960.0 * 64);
}

TEST(Roofline, StorageBoundPredictionAgainstMeasured) {
  const roofline_result r = compute_roofline(fixture(), tiny());
  const auto& s = hop(r, "storage");
  ASSERT_TRUE(s.has_rate()) << s.why;
  EXPECT_NEAR(s.per_gpu, 250, 1e-9);  // the QD32 configuration is nearest the loader's 8
  ASSERT_EQ(s.sources.size(), 1u);
  EXPECT_EQ(s.sources[0].benchmark, "storage/read");
  EXPECT_EQ(s.sources[0].value, 0.001056);
  const auto& c = hop(r, "compute");
  EXPECT_NEAR(c.per_gpu, 500, 1e-9);  // 8 samples / 16 ms
  EXPECT_EQ(r.limit, "storage");
  EXPECT_NEAR(r.predicted_per_job, 250, 1e-9);
  EXPECT_NEAR(c.headroom, 2.0, 1e-9);
  EXPECT_NEAR(s.headroom, 1.0, 1e-9);
  ASSERT_TRUE(r.measured.present);
  EXPECT_NEAR(r.measured.per_job, 250, 1e-9);  // 16000 tokens/s / 64
  EXPECT_NEAR(r.measured.ratio, 1.0, 1e-9);
  EXPECT_EQ(hop(r, "preprocess").status, "not applicable");
  EXPECT_EQ(hop(r, "allreduce").status, "not applicable");
  EXPECT_EQ(hop(r, "compute (GEMM model)").status, "not measured");
}

// An INVALID result the roofline reads (a noisy step) is named in the notes: its number is used,
// never passed off as trusted. A valid report has no such note.
TEST(Roofline, InvalidInputsAreNamed) {
  const auto has_invalid_note = [](const roofline_result& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.find("INVALID input: training/step") != std::string::npos &&
             n.find("noisy: robust CV 60%") != std::string::npos;
    });
  };
  EXPECT_FALSE(has_invalid_note(compute_roofline(fixture(), tiny())));
  report_view rep = fixture();
  for (auto& res : rep.results) {
    if (res.benchmark != "training/step") continue;
    res.valid = false;
    res.invalid_reasons = {"noisy: robust CV 60% > 10%"};
  }
  const roofline_result r = compute_roofline(rep, tiny());
  EXPECT_TRUE(has_invalid_note(r));
  EXPECT_EQ(std::count_if(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.rfind("INVALID input", 0) == 0; }),
            1);
}

TEST(Roofline, WhatIfsNameTheNextLimit) {
  const auto a = analyse_roofline(fixture(), tiny(),
                                  {parse_what_if("storage=4x"), parse_what_if("compute=3x"),
                                   parse_what_if("storage=4x,compute=3x")});
  ASSERT_EQ(a.what_ifs.size(), 3u);
  EXPECT_EQ(a.what_ifs[0].result.limit, "compute");
  EXPECT_NEAR(a.what_ifs[0].result.predicted_per_job, 500, 1e-9);
  EXPECT_EQ(a.what_ifs[1].result.limit, "storage");
  EXPECT_NEAR(a.what_ifs[1].result.predicted_per_job, 250, 1e-9);
  EXPECT_EQ(a.what_ifs[2].result.limit, "storage");
  EXPECT_NEAR(a.what_ifs[2].result.predicted_per_job, 1000, 1e-9);
  EXPECT_FALSE(a.what_ifs[0].result.measured.present);  // measured only beside the base
}

// More GPUs on a GPU job (--device gpu) share the node's storage.
TEST(Roofline, MoreGpusShareTheNodesStorage) {
  roofline_job job = tiny();
  job.device = job_device::gpu;
  const auto r = compute_roofline(fixture(), job, parse_what_if("gpus=4"));
  EXPECT_EQ(r.job.ranks_per_node, 4);
  EXPECT_NEAR(hop(r, "storage").per_gpu, 62.5, 1e-9);
  EXPECT_NEAR(hop(r, "storage").per_job, 250, 1e-9);
  // Four ranks need an all-reduce the report did not measure across ranks.
  EXPECT_EQ(hop(r, "allreduce").status, "not measured");
  EXPECT_NEAR(r.predicted_per_job, 250, 1e-9);
}

TEST(Roofline, AllReduceFromBusBandwidth) {
  report_view rep = fixture();
  rep.benchmarks["collectives/mpi_allreduce"].metrics = {
      decl("busbw_gbps", "GB/s", metric_kind::rate, true, data_hop::allreduce)};
  for (double size : {4096.0, 524288.0, 67108864.0}) {
    rep.results.push_back(result("collectives/mpi_allreduce",
                                 {{"size", size}, {"dtype", "float32"}},
                                 {metric("busbw_gbps", "GB/s", size == 524288.0 ? 0.1 : 50.0)}));
  }
  roofline_job j = tiny();
  j.ranks_per_node = 2;
  j.device = job_device::cpu;
  const auto r = compute_roofline(rep, j);
  const auto& ar = hop(r, "allreduce");
  ASSERT_TRUE(ar.has_rate()) << ar.why;
  // 547840 B x 2(2-1)/2 / 0.1 GB/s = 5.4784 ms for a batch of 8.
  EXPECT_NEAR(ar.per_gpu, 8 / 5.4784e-3, 1e-6);
  EXPECT_EQ(ar.sources.at(0).value, 0.1);
  // The step: 32 ms compute (16 ms measured on the node's 2 CPUs, each of the 2 ranks has 1) +
  // 5.48 ms all-reduce (the report's step ran one rank: no overlap).
  EXPECT_EQ(r.limit, "storage");
  EXPECT_EQ(r.step_parts, 2);
  EXPECT_NEAR(r.step_per_gpu, 8 / (0.032 + 5.4784e-3), 1e-6);
  const auto nics = compute_roofline(rep, j, parse_what_if("nodes=2,nics=400Gb/s,storage=100x"));
  EXPECT_EQ(nics.limit, "compute");
  EXPECT_NEAR(hop(nics, "allreduce").per_gpu, 8 / (547840.0 * 2 * 3 / 4 / 50e9), 1e-3);
}

// A vit-tiny JPEG job's hops: decoding at 600 images/s on one thread (8 / 600 = 13.3 ms per
// batch of 8), files of 100 kB read at 1 GB/s (10k samples/s: 0.8 ms per batch) and, when
// `step_ms` is given, a training step of 4 ms compute per batch that took `step_ms` in all.
report_view jpeg_report(std::optional<double> step_ms) {
  report_view rep;
  rep.world_size = 1;
  rep.inventories = {host_view{"node1", "", {{"cpu.logical_cpus_usable", "2"}}}};
  auto pipe = decl("images_per_s", "images/s", metric_kind::rate, true, data_hop::preprocess);
  rep.benchmarks["preprocess/pipeline"].metrics = {
      pipe, decl("jpeg_bytes_per_image", "B", metric_kind::size)};
  rep.benchmarks["storage/read"].metrics = {
      decl("bandwidth_gbps", "GB/s", metric_kind::rate, true, data_hop::storage_read)};
  rep.results.push_back(result(
      "preprocess/pipeline", {{"source", "jpeg"}, {"threads", 1}, {"crop", 224}},
      {metric("images_per_s", "images/s", 600), metric("jpeg_bytes_per_image", "B", 100000)}));
  rep.results.push_back(result("preprocess/pipeline",
                               {{"source", "pixels"}, {"threads", 1}, {"crop", 224}},
                               {metric("images_per_s", "images/s", 90000)}));
  rep.results.push_back(
      result("storage/read",
             {{"pattern", "rand"}, {"direct", 1}, {"block_size", 131072}, {"queue_depth", 1}},
             {metric("bandwidth_gbps", "GB/s", 1.0)}));
  if (step_ms) {
    rep.benchmarks["training/step"].metrics = {
        decl("tokens_per_s", "tokens/s", metric_kind::rate, true, data_hop::step),
        decl("forward_ms", "ms", metric_kind::time, false, data_hop::compute),
        decl("backward_ms", "ms", metric_kind::time, false, data_hop::compute)};
    const double tokens_per_s = 8 / (*step_ms / 1e3) * 17;  // vit-tiny: 1 + 16 patches
    rep.results.push_back(
        result("training/step", {{"model", "vit-tiny"}, {"batch", 8}, {"threads", 1}},
               {metric("tokens_per_s", "tokens/s", tokens_per_s), metric("forward_ms", "ms", 1.5),
                metric("backward_ms", "ms", 2.5)}));
  }
  return rep;
}

roofline_job vit_one_thread() {
  roofline_job j;
  j.model = "vit-tiny";
  j.batch = 8;
  j.cpu_threads = 1;
  return j;
}

TEST(Roofline, AStepThatWaitsForItsWholeLoaderHasItInSeries) {
  // 18.5 ms measured: a wait of 14.5 ms, near the loader's 14.1 ms of read + decode (beside the
  // step it would leave 13.3 - 4 = 9.3 ms). So the parts add up: 0.8 + 13.3 + 4 ms per batch.
  const auto r = compute_roofline(jpeg_report(18.5), vit_one_thread());
  const auto& p = hop(r, "preprocess");
  ASSERT_TRUE(p.has_rate()) << p.why;
  EXPECT_TRUE(p.in_step);
  EXPECT_TRUE(hop(r, "storage").in_step);
  EXPECT_NEAR(p.per_gpu, 600, 1e-9);
  EXPECT_NEAR(hop(r, "storage").per_gpu, 1e9 / 100000, 1e-9);
  const double series = 8 / (8 / 1e4 + 8 / 600.0 + 4e-3);
  EXPECT_NEAR(r.predicted_per_job, series, 1e-9);
  EXPECT_EQ(r.limit, "preprocess");  // the step's largest part
  EXPECT_EQ(r.step_parts, 3);
  EXPECT_NEAR(r.measured.ratio, series / (8 / 18.5e-3), 1e-9);
  EXPECT_NE(r.step_model.find("storage + preprocess + compute"), std::string::npos);
  // A what-if keeps the measured step's build: faster storage shortens the series, and the
  // decode twice as fast (two threads) still adds up with the rest.
  const auto fast =
      compute_roofline(jpeg_report(18.5), vit_one_thread(), parse_what_if("storage=4x"));
  EXPECT_NEAR(fast.predicted_per_job, 8 / (2e-4 + 8 / 600.0 + 4e-3), 1e-9);
  EXPECT_NEAR(
      hop(compute_roofline(jpeg_report(18.5), vit_one_thread(), parse_what_if("cpu_threads=2")),
          "preprocess")
          .per_gpu,
      1200, 1e-9);
  EXPECT_EQ(hop(r, "h2d").status, "not applicable");
}

TEST(Roofline, AStepWhoseLoaderRanBesideItIsThePipelinesMinimum) {
  // The same CPU job, hops and compute, but the step took 13.5 ms: a wait of 9.5 ms, what a
  // loader beside the step leaves (13.3 - 4), not its whole 14.1 ms. Decoding is the pipeline's
  // slowest stage; nothing is added to the step, whatever the device.
  const auto r = compute_roofline(jpeg_report(13.5), vit_one_thread());
  EXPECT_FALSE(hop(r, "preprocess").in_step);
  EXPECT_FALSE(hop(r, "storage").in_step);
  EXPECT_EQ(r.limit, "preprocess");
  EXPECT_NEAR(r.predicted_per_job, 600, 1e-9);
  EXPECT_EQ(r.step_parts, 1);
  // Storage made slow: the loader beside the step is limited by it alone, not by the sum.
  const auto slow =
      compute_roofline(jpeg_report(13.5), vit_one_thread(), parse_what_if("storage=0.01x"));
  EXPECT_EQ(slow.limit, "storage");
  EXPECT_NEAR(slow.predicted_per_job, 100, 1e-9);
}

TEST(Roofline, WithoutTheStepTheLoaderIsTakenToRunBesideIt) {
  const auto r = compute_roofline(jpeg_report(std::nullopt), vit_one_thread());
  EXPECT_FALSE(hop(r, "preprocess").in_step);
  EXPECT_EQ(r.limit, "preprocess");
  EXPECT_NEAR(r.predicted_per_job, 600, 1e-9);
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("taken to run beside the step") != std::string::npos;
  }));
}

TEST(Roofline, StepPhasesAreReadFromTheMedianRatesRepetition) {
  // --repetitions 3 merges each metric's median on its own: forward_ms's (5 ms) is of another
  // repetition than the rate's (the second, 16000 tokens/s, whose forward took 9 ms). The phases
  // are read from the rate's repetition, so they add up to the step the rate is: 9 + 8 + 1 + 2.
  report_view rep = fixture();
  for (auto& r : rep.results) {
    if (r.benchmark != "training/step") continue;
    for (auto& m : r.metrics) {
      if (m.name == "tokens_per_s") m.repetitions = {20000, 16000, 8000};
      if (m.name == "forward_ms") m.repetitions = {3, 9, 5};
      if (m.name == "backward_ms") m.repetitions = {8, 8, 8};
      if (m.name == "optimizer_ms") m.repetitions = {1, 1, 1};
      if (m.name == "other_ms") m.repetitions = {2, 2, 2};
      if (m.name == "allreduce_ms") m.repetitions = {0, 0, 0};
    }
  }
  const auto r = compute_roofline(rep, tiny());
  EXPECT_NEAR(hop(r, "compute").per_gpu, 8 / 20e-3, 1e-9);
  EXPECT_NE(hop(r, "compute").formula.find("of repetition 2"), std::string::npos);
}

TEST(Roofline, JpegSizeFromThePipelinesInputRate) {
  // Without a declared size metric: the JPEG bytes decoded per second over images per second.
  report_view rep;
  rep.world_size = 1;
  rep.benchmarks["preprocess/pipeline"].metrics = {
      decl("images_per_s", "images/s", metric_kind::rate, true, data_hop::preprocess),
      // A byte rate of the same timing that is not the JPEG input: never taken for its size.
      decl("output_gbps", "GB/s", metric_kind::rate),
      decl("input_gbps", "GB/s", metric_kind::rate, false, data_hop::storage_read)};
  rep.benchmarks["storage/read"].metrics = {
      decl("bandwidth_gbps", "GB/s", metric_kind::rate, true, data_hop::storage_read)};
  rep.results.push_back(
      result("preprocess/pipeline", {{"source", "jpeg"}, {"threads", 1}},
             {metric("images_per_s", "images/s", 500), metric("output_gbps", "GB/s", 7.0),
              metric("input_gbps", "GB/s", 0.02)}));
  rep.results.push_back(result("storage/read", {{"pattern", "rand"}, {"block_size", 65536}},
                               {metric("bandwidth_gbps", "GB/s", 0.4)}));
  roofline_job j;
  j.model = "vit-tiny";
  const auto r = compute_roofline(rep, j);
  EXPECT_DOUBLE_EQ(r.facts.disk_bytes_per_sample, 40000);  // 0.02 GB/s / 500 images/s
  EXPECT_NEAR(hop(r, "storage").per_gpu, 0.4e9 / 40000, 1e-6);
  EXPECT_EQ(hop(r, "storage").sources.at(1).metric, "input_gbps / images_per_s");
}

TEST(Roofline, GpuHopsFromTheGpuBenchmarks) {
  // A GPU node: the batch copied from pinned memory, gradients over NCCL, decoding on the loader's
  // threads beside the step (pipelined, not in it); the GEMM model from cuBLAS at bf16.
  report_view rep = fixture();
  // As bandwidth/h2d declares it: a family of cells, one per GPU (what the H100 run showed; a plain
  // name here hid that the roofline read no cell).
  rep.benchmarks["bandwidth/h2d"].metrics = {
      decl("bandwidth_gbps_*", "GB/s", metric_kind::rate, true, data_hop::h2d)};
  rep.benchmarks["bandwidth/h2d"].requires_ = {"cuda"};
  rep.benchmarks["collectives/nccl_allreduce"].metrics = {
      decl("busbw_gbps", "GB/s", metric_kind::rate, true, data_hop::allreduce)};
  rep.benchmarks["collectives/nccl_allreduce"].requires_ = {"nccl"};
  rep.benchmarks["gemm/cublas"].metrics = {
      decl("gflops", "GFLOP/s", metric_kind::rate, true, data_hop::compute)};
  rep.benchmarks["gemm/cublas"].requires_ = {"cuda"};
  // The CPU's GEMM and all-reduce beside them, far faster: a GPU job never reads the CPU's.
  rep.benchmarks["gemm/ours_fp32"].metrics = {
      decl("gflops", "GFLOP/s", metric_kind::rate, true, data_hop::compute)};
  rep.results.push_back(result("gemm/ours_fp32", {{"shape", "512x256x64"}, {"threads", 1}},
                               {metric("gflops", "GFLOP/s", 1e9)}));
  for (const char* memory : {"pinned", "pageable"}) {
    const double gbps = std::string(memory) == "pinned" ? 0.000512 : 1e-9;
    // GPU 1's copy is twice GPU 0's: the slowest GPU's cell is the hop's rate.
    rep.results.push_back(result("bandwidth/h2d",
                                 {{"memory", memory}, {"copy", "ce"}, {"size", 4096}},
                                 {metric("bandwidth_gbps_gpu0", "GB/s", gbps),
                                  metric("bandwidth_gbps_gpu1", "GB/s", 2 * gbps)}));
  }
  rep.results.push_back(result("collectives/nccl_allreduce",
                               {{"size", 524288}, {"dtype", "float32"}},
                               {metric("busbw_gbps", "GB/s", 100)}));
  rep.results.push_back(result("gemm/cublas", {{"shape", "512x256x64"}, {"dtype", "bf16"}},
                               {metric("gflops", "GFLOP/s", 1000)}));
  roofline_job j = tiny();
  j.device = job_device::gpu;
  j.ranks_per_node = 2;
  const auto r = compute_roofline(rep, j);
  EXPECT_EQ(r.device, "gpu");
  const auto& h2d = hop(r, "h2d");
  ASSERT_TRUE(h2d.has_rate()) << h2d.why;
  EXPECT_FALSE(h2d.in_step);
  EXPECT_NEAR(h2d.per_gpu, 512e3 / 512, 1e-9);  // pinned: 0.512 MB/s / 512 B per sample
  EXPECT_EQ(h2d.sources.at(0).metric, "bandwidth_gbps_gpu0");  // the cell read, named
  const auto& gemm = hop(r, "compute (GEMM model)");
  ASSERT_TRUE(gemm.has_rate()) << gemm.why;
  EXPECT_TRUE(gemm.beside);
  EXPECT_NEAR(gemm.per_gpu, 1e12 / describe_job(j).flops_per_sample, 1e-6);
  EXPECT_TRUE(hop(r, "allreduce").has_rate());
  // Storage: 250 samples/s per node over two GPUs: 125 per GPU, below h2d's 1000.
  EXPECT_EQ(r.limit, "storage");
  EXPECT_NEAR(r.predicted_per_job, 250, 1e-9);
  EXPECT_EQ(compute_roofline(rep, j, parse_what_if("storage=100x")).limit, "compute");
  EXPECT_EQ(compute_roofline(rep, j, parse_what_if("storage=100x,compute=10x")).limit, "h2d");
}

TEST(Roofline, HopsTheReportLacksAreNotMeasured) {
  report_view empty;
  const auto r = compute_roofline(empty, tiny());
  EXPECT_EQ(r.limit, "none");
  EXPECT_EQ(hop(r, "storage").status, "not measured");
  EXPECT_NE(hop(r, "storage").why.find("no benchmark in the report declares the storage_read hop"),
            std::string::npos);
  EXPECT_EQ(hop(r, "compute").status, "not measured");
  EXPECT_FALSE(r.measured.present);
  const json j = roofline_json(analyse_roofline(empty, tiny(), {}));
  EXPECT_TRUE(j["predicted_samples_per_s_job"].is_null());
}

TEST(Roofline, BadInputIsRefused) {
  roofline_job j = tiny();
  j.model = "gpt5";
  EXPECT_THROW(check_job(j), user_error);
  j = tiny();
  j.batch = 0;
  EXPECT_THROW(check_job(j), user_error);
  j = tiny();
  j.seq = 65;  // beyond gpt2-tiny's 64 positions
  EXPECT_THROW(check_job(j), user_error);
  j = tiny();
  j.format = data_format::jpeg;
  EXPECT_THROW(check_job(j), user_error);
  for (const char* bad : {"storage=2", "storage", "foo=2x", "nics=400", "gpus=1.5", "gpus=0",
                          "storage=-1x", "=2x", "storage=2x,"}) {
    EXPECT_THROW((void)parse_what_if(bad), user_error) << bad;
  }
  EXPECT_DOUBLE_EQ(*parse_what_if("nics=400Gb/s").nic_bytes_per_s, 50e9);
  EXPECT_EQ(*parse_what_if("cpu_threads=32").cpu_threads, 32);
}

TEST(Roofline, JsonCarriesEverySource) {
  const json j = roofline_json(analyse_roofline(fixture(), tiny(), {parse_what_if("storage=3x")}));
  EXPECT_EQ(j["limit"], "storage");
  EXPECT_EQ(j["hops"][0]["sources"][0]["benchmark"], "storage/read");
  EXPECT_EQ(j["hops"][0]["sources"][0]["metric"], "bandwidth_gbps");
  EXPECT_EQ(j["measured"]["source"]["metric"], "tokens_per_s");
  EXPECT_EQ(j["what_ifs"][0]["what_if"], "storage=3x");
  EXPECT_EQ(j["what_ifs"][0]["limit"], "compute");
  const std::string html = roofline_html({{"a", analyse_roofline(fixture(), tiny(), {})}});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("(limit)"), std::string::npos);
}

// gpus=N on a CPU job (the report has no GPU result, or --device cpu) would multiply a rate
// measured on the node's cores by devices the node does not have: refused, before anything is
// computed; the CPU's own what-ifs (nodes=, cpu_threads=) and a GPU job's gpus= are taken.
TEST(Roofline, GpusWhatIfOnACpuJobIsRefused) {
  EXPECT_THROW((void)compute_roofline(fixture(), tiny(), parse_what_if("gpus=8")), user_error);
  EXPECT_THROW((void)analyse_roofline(fixture(), tiny(), {parse_what_if("storage=2x,gpus=8")}),
               user_error);
  try {
    check_what_ifs(fixture(), tiny(), {parse_what_if("nodes=2"), parse_what_if("gpus=8")});
    FAIL() << "gpus=8 taken on a CPU job";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("computes on the CPU"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_what_ifs(fixture(), tiny(), {parse_what_if("nodes=2,cpu_threads=4")}));
  roofline_job gpu = tiny();
  gpu.device = job_device::gpu;
  EXPECT_NO_THROW(check_what_ifs(fixture(), gpu, {parse_what_if("gpus=8")}));
  roofline_job cpu = gpu;
  cpu.device = job_device::cpu;
  EXPECT_THROW(check_what_ifs(fixture(), cpu, {parse_what_if("gpus=8")}), user_error);
}

// A CPU job's per-rank rates are per node (one rank per node) or per rank, never "per GPU": the
// unit follows the device the job resolved from the report's declared requirements.
TEST(Roofline, CpuRatesAreNotLabelledPerGpu) {
  const auto cpu = analyse_roofline(fixture(), tiny(), {});
  EXPECT_EQ(cpu.base.device, "cpu");
  EXPECT_EQ(rank_unit(cpu.base), "node");
  const std::string text = roofline_text(cpu);
  EXPECT_NE(text.find("samples/s/node"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU"), std::string::npos) << text;
  EXPECT_EQ(roofline_json(cpu)["per_rank_unit"], "node");
  EXPECT_EQ(roofline_html({{"a", cpu}}).find("GPU"), std::string::npos);
  roofline_job two = tiny();
  two.ranks_per_node = 2;
  const auto ranks = analyse_roofline(fixture(), two, {});
  EXPECT_EQ(rank_unit(ranks.base), "rank");
  EXPECT_NE(hop(ranks.base, "storage").formula.find("/ 2 rank(s) per node"), std::string::npos)
      << hop(ranks.base, "storage").formula;
  EXPECT_EQ(roofline_text(ranks).find("GPU"), std::string::npos) << roofline_text(ranks);
  roofline_job gpu = tiny();
  gpu.device = job_device::gpu;
  const auto g = analyse_roofline(fixture(), gpu, {});
  EXPECT_EQ(rank_unit(g.base), "GPU");
  EXPECT_NE(roofline_text(g).find("samples/s/GPU"), std::string::npos);
}

// N ranks of a CPU job on one node share its cores (issue 45 item 17): the step's compute measured
// on the node's 2 CPUs takes twice as long in each of 2 ranks, so the job's compute rate is the
// node's, never 2x it; a GPU job's ranks each have their own GPU.
TEST(Roofline, CpuRanksOnANodeShareItsCores) {
  const auto one = analyse_roofline(fixture(), tiny(), {});
  roofline_job two = tiny();
  two.ranks_per_node = 2;
  const auto ranks = analyse_roofline(fixture(), two, {});
  const auto& c1 = hop(one.base, "compute");
  const auto& c2 = hop(ranks.base, "compute");
  ASSERT_TRUE(c1.has_rate() && c2.has_rate()) << c1.why << c2.why;
  EXPECT_NEAR(c2.per_gpu, c1.per_gpu / 2, 1e-9);
  EXPECT_NEAR(c2.per_job, c1.per_job, 1e-9);
  EXPECT_NE(c2.formula.find("on 2 thread(s) scaled to 1 per rank"), std::string::npos)
      << c2.formula;
  EXPECT_EQ(c1.formula.find("scaled to"), std::string::npos) << c1.formula;
  // Four threads' what-if on one rank: the step's 2 measured threads scaled to 4.
  EXPECT_NEAR(hop(analyse_roofline(fixture(), tiny(), {parse_what_if("cpu_threads=4")})
                      .what_ifs.at(0)
                      .result,
                  "compute")
                  .per_gpu,
              2 * c1.per_gpu, 1e-9);
}

// The chart's axes say what they are and in which unit: rates of the whole job in samples/s on a
// log scale across, the data path's hops down.
TEST(Roofline, ChartAxesHaveTitlesWithUnits) {
  const std::string html = roofline_html({{"a", analyse_roofline(fixture(), tiny(), {})}});
  EXPECT_NE(html.find("class='axis-title'"), std::string::npos);
  EXPECT_NE(html.find("rate of the whole job (1 node(s) x 1 rank(s)), samples/s, log scale"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find(">hop of the data path</text>"), std::string::npos);
}

// A hop that reads an INVALID result is marked on its bar as the pages mark INVALID (hatched
// grey), with the reason in its tooltip, the legend and the table; the mark survives the report's
// section (read back for `report` and `compare`). A valid report's bars are plain.
TEST(Roofline, AnInvalidInputIsHatchedOnItsBar) {
  const std::string valid = roofline_html({{"a", analyse_roofline(fixture(), tiny(), {})}});
  EXPECT_EQ(valid.find("fill='url(#r0-invalid)'"), std::string::npos);
  EXPECT_EQ(valid.find("INVALID input"), std::string::npos);
  EXPECT_EQ(valid.find("Hatched grey"), std::string::npos);
  report_view rep = fixture();
  for (auto& res : rep.results) {
    if (res.benchmark != "training/step") continue;
    res.valid = false;
    res.invalid_reasons = {"noisy: robust CV 60% > 10%"};
  }
  const roofline_analysis a = analyse_roofline(rep, tiny(), {});
  EXPECT_NE(hop(a.base, "compute").invalid.find("noisy: robust CV 60%"), std::string::npos);
  EXPECT_TRUE(hop(a.base, "storage").invalid.empty());
  const std::string html = roofline_html({{"a", a}});
  const auto bar = html.find("fill='url(#r0-invalid)'");
  ASSERT_NE(bar, std::string::npos) << html;
  EXPECT_EQ(html.find("fill='url(#r0-invalid)'", bar + 1), std::string::npos);  // compute only
  EXPECT_NE(html.find("<pattern id='r0-invalid'"), std::string::npos);
  EXPECT_NE(html.find("INVALID input: training/step"), std::string::npos);  // tooltip and table
  EXPECT_NE(html.find("Hatched grey: the hop reads an INVALID result"), std::string::npos);
  EXPECT_NE(html.find("compute: training/step"), std::string::npos);  // the legend's reason
  json doc = to_json(rep);
  doc["schema_version"] = report_schema_version;
  doc["roofline"] = roofline_json(a);
  EXPECT_NE(doc["roofline"]["hops"][3]["invalid"].get<std::string>().find("noisy"),
            std::string::npos);
  const report_view back = parse_report(doc.dump(), "b.json");
  const auto again = analysis_of(*back.roofline);
  EXPECT_EQ(hop(again.base, "compute").invalid, hop(a.base, "compute").invalid);
}

// Side-by-side reports are drawn on one scale: a page's charts share their axis's decades, those
// of every chart's rates together, where each alone would span its own.
TEST(Roofline, SideBySideChartsShareOneScale) {
  report_view fast = fixture();
  for (auto& r : fast.results) {
    if (r.benchmark == "storage/read" && r.axes["pattern"] == "rand") r.metrics[0].value = 100.0;
  }
  const auto a = analyse_roofline(fixture(), tiny(), {});
  const auto b = analyse_roofline(fast, tiny(), {});
  const roofline_scale sa = roofline_common_scale({&a.base}), sb = roofline_common_scale({&b.base});
  ASSERT_NE(sa.hi, sb.hi);  // alone, each spans its own decades
  const roofline_scale both = roofline_common_scale({&a.base, &b.base});
  EXPECT_EQ(both.lo, std::min(sa.lo, sb.lo));
  EXPECT_EQ(both.hi, std::max(sa.hi, sb.hi));
  const std::string html = roofline_html({{"a", a}, {"b", b}});
  const std::string axis = "data-axis-lo='" + std::to_string(static_cast<int>(both.lo)) +
                           "' data-axis-hi='" + std::to_string(static_cast<int>(both.hi)) + "'";
  const auto first = html.find(axis);
  ASSERT_NE(first, std::string::npos) << html;
  EXPECT_NE(html.find(axis, first + 1), std::string::npos) << "the second chart's scale differs";
}

// The report with its `roofline` section written in (`--into-report`), read back as `report`
// and `compare` read it. `gbps` sets the storage rate: 1.0 makes the job compute-bound.
report_view with_section(const std::string& label, double gbps) {
  report_view rep = fixture();
  for (auto& r : rep.results) {
    if (r.benchmark == "storage/read" && r.axes["pattern"] == "rand") r.metrics[0].value = gbps;
  }
  json doc = to_json(rep);
  doc["schema_version"] = report_schema_version;
  doc["roofline"] = roofline_json(analyse_roofline(rep, tiny(), {parse_what_if("storage=3x")}));
  report_view out = parse_report(doc.dump(), label + ".json");
  out.label = label;
  return out;
}

TEST(Roofline, ReportSectionReadsBackTyped) {
  const report_view a = with_section("a", 0.001056);
  ASSERT_TRUE(a.roofline.has_value());
  const roofline_view& v = *a.roofline;
  EXPECT_EQ(v.model, "gpt2-tiny");
  EXPECT_EQ(v.batch, 8);
  EXPECT_EQ(v.limit, "storage");
  EXPECT_NEAR(v.predicted_per_job, 250, 1e-6);
  ASSERT_FALSE(v.hops.empty());
  EXPECT_EQ(v.hops[0].name, "storage");
  EXPECT_EQ(v.hops[0].sources.at(0).benchmark, "storage/read");
  EXPECT_TRUE(v.measured);
  EXPECT_EQ(v.measured_source.metric, "tokens_per_s");
  ASSERT_EQ(v.what_ifs.size(), 1u);
  EXPECT_EQ(v.what_ifs[0].what_if, "storage=3x");
  EXPECT_EQ(v.what_ifs[0].limit, "compute");
  // The summary line read back is the one computed.
  EXPECT_EQ(roofline_summary(analysis_of(v).base), "storage-bound at 250 samples/s");
  // A section of the wrong shape is refused with where it is wrong.
  json doc = to_json(a);
  doc["schema_version"] = report_schema_version;
  doc["roofline"] = roofline_json(analyse_roofline(fixture(), tiny(), {}));
  doc["roofline"]["hops"][0]["samples_per_s_job"] = "fast";
  try {
    (void)parse_report(doc.dump(), "bad.json");
    FAIL() << "a string rate was read";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("roofline.hops[0].samples_per_s_job"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fixture().roofline.has_value());
}

TEST(Roofline, ReportPageDrawsTheSectionsChart) {
  const std::vector<report_view> reps = {with_section("a", 0.001056)};
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_html(reps, {});
  EXPECT_NE(html.find("<h2 id=\"roofline\">"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("250 (limit)"), std::string::npos);   // the limiting bar, labelled
  EXPECT_NE(html.find("measured 250"), std::string::npos);  // the measured rate's line
  EXPECT_NE(html.find("storage/read"), std::string::npos);  // the bar's source
  // A report without the section has no roofline heading.
  std::vector<report_view> plain = reps;
  plain[0].roofline.reset();
  EXPECT_EQ(render_html(plain, {}).find("id=\"roofline\""), std::string::npos);
}

TEST(Roofline, CompareNamesBothLimits) {
  // b's storage so fast that the fixture's step (which waits 16 ms for data, as neither build
  // explains: the loader is then taken to be in series) adds nothing visible to its compute.
  const std::vector<report_view> reps = {with_section("a", 0.001056), with_section("b", 100.0)};
  const comparison c = compare_reports(reps, {});
  const std::string line = roofline_line(c);
  EXPECT_EQ(line,
            "roofline: a is storage-bound at 250 samples/s, b is compute-bound at 500 samples/s");
  std::ostringstream text, md;
  print_comparison_table(text, c);
  print_comparison_markdown(md, c);
  EXPECT_NE(text.str().find(line), std::string::npos) << text.str();
  EXPECT_NE(md.str().find("#### Roofline"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("b is compute-bound at 500 samples/s"), std::string::npos);
  // Without a section on either side, compare says nothing of rooflines.
  report_view plain = with_section("p", 1.0);
  plain.roofline.reset();
  report_view plain2 = plain;
  plain2.label = "q";
  EXPECT_EQ(roofline_line(compare_reports({plain, plain2}, {})), "");
  if (chartjs_source().empty()) GTEST_SKIP() << "built without libjs-chart.js: no page";
  const std::string html = render_comparison_html(c, "t");
  EXPECT_NE(html.find("class=\"rooflines\""), std::string::npos);
  EXPECT_NE(html.find("a: storage-bound at 250 samples/s"), std::string::npos);
  EXPECT_NE(html.find("b: compute-bound at 500 samples/s"), std::string::npos);
  // Both reports' charts on one scale: the same axis on each.
  const auto axis_of = [&html](std::size_t from) {
    const auto at = html.find("data-axis-lo=", from);
    return at == std::string::npos ? std::string() : html.substr(at, html.find('>', at) - at);
  };
  const auto first = html.find("<svg");
  ASSERT_NE(first, std::string::npos);
  EXPECT_FALSE(axis_of(first).empty());
  EXPECT_EQ(axis_of(first), axis_of(html.find("<svg", first + 1)));
}

// The roofline picks each hop's benchmark by the hop its headline declares, never by its name:
// the same numbers under other names give the same answer, and a benchmark named like a hop's
// that declares none is not read.
TEST(Roofline, HopsArePickedByTheirDeclarationNotTheirName) {
  const auto renamed = [](report_view r, const std::string& from, const std::string& to) {
    r.benchmarks[to] = r.benchmarks[from];
    r.benchmarks.erase(from);
    for (auto& res : r.results) {
      if (res.benchmark == from) res.benchmark = to;
    }
    return r;
  };
  report_view rep = renamed(renamed(fixture(), "storage/read", "disk/my_reader"), "training/step",
                            "train/my_loop");
  const roofline_result r = compute_roofline(rep, tiny());
  EXPECT_NEAR(hop(r, "storage").per_gpu, 250, 1e-9);
  EXPECT_EQ(hop(r, "storage").sources.at(0).benchmark, "disk/my_reader");
  EXPECT_NEAR(hop(r, "compute").per_gpu, 500, 1e-9);
  EXPECT_EQ(r.limit, "storage");
  ASSERT_TRUE(r.measured.present);
  EXPECT_NEAR(r.measured.ratio, 1.0, 1e-9);
  // A benchmark called storage/read that declares another hop (none): not the storage hop.
  report_view undeclared = fixture();
  undeclared.benchmarks["storage/read"].metrics.front().hop = data_hop::none;
  const roofline_result u = compute_roofline(undeclared, tiny());
  EXPECT_EQ(hop(u, "storage").status, "not measured");
  EXPECT_EQ(u.limit, "compute");
  // A step phase declared another hop is not compute: the step's compute is the rest.
  report_view moved = fixture();
  for (auto& d : moved.benchmarks["training/step"].metrics) {
    if (d.name == "other_ms") d.hop = data_hop::none;
  }
  EXPECT_NEAR(hop(compute_roofline(moved, tiny()), "compute").per_gpu, 8 / 0.014, 1e-9);
}

// A report written before benchmarks declared their hop: nothing is read from it by name; every
// hop is not measured and a note says why and what to do.
TEST(Roofline, AReportWithoutHopDeclarationsIsNotReadByName) {
  report_view old = fixture();
  for (auto& [name, meta] : old.benchmarks) {
    for (auto& d : meta.metrics) d.hop = data_hop::none;
  }
  const roofline_result r = compute_roofline(old, tiny());
  EXPECT_EQ(r.limit, "none");
  EXPECT_EQ(hop(r, "storage").status, "not measured");
  EXPECT_EQ(hop(r, "compute").status, "not measured");
  EXPECT_FALSE(r.measured.present);
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("declares no data-path hop") != std::string::npos;
  }));
  const roofline_result now = compute_roofline(fixture(), tiny());
  EXPECT_FALSE(std::any_of(now.notes.begin(), now.notes.end(), [](const std::string& n) {
    return n.find("declares no data-path hop") != std::string::npos;
  }));
}

// The hop travels with the declaration into the report and back; a benchmark declares it on its
// headline (or a phase), and an unknown one is refused.
TEST(Roofline, HopDeclarationRoundTripsThroughTheReport) {
  metric_decl d{"forward_ms", "ms", better::lower, metric_role::information};
  d.hop = data_hop::compute;
  const json j = metric_decl_json(d);
  EXPECT_EQ(j.at("hop"), "compute");
  EXPECT_EQ(metric_decl_from_json(j, "m").hop, data_hop::compute);
  EXPECT_FALSE(metric_decl_json(metric_decl{"x", "ms"}).contains("hop"));
  EXPECT_EQ(metric_decl_from_json(json{{"name", "x"}, {"unit", "ms"}}, "m").hop, data_hop::none);
  EXPECT_THROW((void)metric_decl_from_json(json{{"name", "x"}, {"hop", "disk"}}, "m"), user_error);
  for (const data_hop h : {data_hop::storage_read, data_hop::preprocess, data_hop::h2d,
                           data_hop::compute, data_hop::allreduce, data_hop::step}) {
    EXPECT_EQ(parse_data_hop(to_string(h)), h);
  }
  benchmark b("x/y", [](state&) {});
  EXPECT_THROW(b.measures(data_hop::storage_read), std::logic_error);  // no headline yet
  b.produces("bandwidth_gbps", "GB/s", better::higher).headline("bandwidth_gbps");
  b.produces("input_gbps", "GB/s", better::higher);
  b.measures(data_hop::preprocess).phase("input_gbps", data_hop::storage_read);
  EXPECT_EQ(b.headline()->hop, data_hop::preprocess);
  EXPECT_EQ(b.metrics().at(1).hop, data_hop::storage_read);
  EXPECT_THROW(b.phase("nope", data_hop::compute), std::logic_error);
}

// Hops measured once each, one after another, see whatever load each met: the note says so and
// what to do; a report of interleaved repetitions has no such note.
TEST(Roofline, SingleRunsOfTheHopsAreNamed) {
  const auto noted = [](const roofline_result& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.find("--repetitions 3 (interleaved)") != std::string::npos;
    });
  };
  EXPECT_TRUE(noted(compute_roofline(fixture(), tiny())));
  report_view rep = fixture();
  for (auto& res : rep.results) {
    for (auto& m : res.metrics) m.repetitions = {m.value, m.value, m.value};
  }
  EXPECT_FALSE(noted(compute_roofline(rep, tiny())));
}

}  // namespace
