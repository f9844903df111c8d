// The console's first screen and its tables (issue 25, items 6 and 7): the header, skips grouped
// by reason, tables that fit 120 columns with notes as footnotes, the CUDA skip reason that says
// what is missing, and the progress line's time left.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "infrabench/benchmark.h"
#include "infrabench/console_header.h"
#include "infrabench/model/report.h"
#include "infrabench/probe_detail.h"
#include "infrabench/progress.h"
#include "infrabench/report.h"
#include "infrabench/suite_estimate.h"
#include "infrabench/text_layout.h"

using namespace infrabench;
using nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::size_t widest(const std::vector<std::string>& lines) {
  std::size_t w = 0;
  for (const auto& l : lines) w = std::max(w, l.size());
  return w;
}

json skipped(const std::string& bench, const std::string& code, const std::string& reason) {
  return {{"benchmark", bench},       {"axes", {{"size", 8}}},
          {"status", "skipped"},      {"valid", true},
          {"reason", reason},         {"reason_code", code},
          {"metrics", json::array()}, {"invalid_reasons", json::array()},
          {"warnings", json::array()}};
}

json passed(const std::string& bench, int size, const std::string& warning) {
  json r = skipped(bench, "none", "");
  r["status"] = "passed";
  r.erase("reason_code");
  r["axes"] = {{"size", size}, {"kernel", "triad"}, {"threads", 0}};
  r["time_s"] = {{"median", 0.01},
                 {"median_ci95", {0.0099, 0.0101}},
                 {"cv", 0.01},
                 {"robust_cv", 0.01},
                 {"n", 20}};
  r["metrics"] = json::array();
  for (int m = 0; m < 14; ++m)
    r["metrics"].push_back({{"name", "a_long_metric_name_" + std::to_string(m)},
                            {"unit", "GB/s"},
                            {"value", 12.5 * (m + 1)},
                            {"better", "higher"}});
  if (!warning.empty()) r["warnings"].push_back(warning);
  return r;
}

}  // namespace

TEST(ConsoleScreen, WrapAndClipKeepToTheWidth) {
  EXPECT_EQ(clip("abcdefgh", 6), "abc...");
  EXPECT_EQ(clip("abc", 6), "abc");
  const auto lines =
      wrap_text(std::string(50, 'x') + " " + std::string(300, 'y') + " z", 40, "[1] ", "    ");
  EXPECT_LE(widest(lines), 40u);
  EXPECT_EQ(lines.front().rfind("[1] ", 0), 0u);
  EXPECT_EQ(lines.back(), "    z");
}

TEST(ConsoleScreen, WideTableSplitsIntoPanelsRepeatingTheKeys) {
  text_table t;
  t.header = {"engine", "status"};
  t.key_columns = 2;
  for (int c = 0; c < 12; ++c) t.header.push_back("column_number_" + std::to_string(c));
  t.right.assign(t.header.size(), true);
  t.rows.push_back(std::vector<std::string>(t.header.size(), "value"));
  t.rows[0][0] = "io_uring";
  const auto lines = layout_table(t, 120);
  EXPECT_LE(widest(lines), 120u);
  std::size_t panels = 0;
  for (const auto& l : lines) panels += l.find("engine") != std::string::npos;
  EXPECT_GE(panels, 2u);  // 12 columns of 16 do not fit in one
  std::size_t keyed = 0;
  for (const auto& l : lines) keyed += l.find("io_uring") != std::string::npos;
  EXPECT_EQ(keyed, panels);
}

TEST(ConsoleScreen, FootnotesNumberEachTextOnce) {
  footnotes notes;
  EXPECT_EQ(notes.mark({"first", "", "second"}), "1,2");
  EXPECT_EQ(notes.mark({"second", "second"}), "2");
  EXPECT_EQ(notes.mark({}), "");
  const auto lines = notes.lines(30);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "  [1] first");
  EXPECT_EQ(lines[1], "  [2] second");
}

TEST(ConsoleScreen, TableFitsAndLongNotesBecomeFootnotes) {
  const std::string note(559, 'n');
  json results = json::array(
      {passed("bandwidth/host_memory", 1, note), passed("bandwidth/host_memory", 2, "")});
  std::ostringstream out;
  print_table(out, model::results_from_json(results), true);
  const auto lines = lines_of(out.str());
  EXPECT_LE(widest(lines), console_width) << out.str();
  // The axes both rows share are said once, above the table.
  EXPECT_NE(out.str().find("bandwidth/host_memory  kernel=triad threads=0"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("  [1] nnnn"), std::string::npos) << out.str();
}

TEST(ConsoleScreen, SkipsAreGroupedAtTheEndByCodeAndText) {
  const std::string no_driver = "no NVIDIA driver on this machine";
  json results = json::array(
      {skipped("bandwidth/h2d", "no_device", no_driver), passed("bandwidth/host_memory", 1, ""),
       skipped("bandwidth/d2h", "no_device", no_driver),
       skipped("bandwidth/d2h", "no_device", no_driver), skipped("gemm/x", "not_built", no_driver),
       skipped("collectives/pairwise", "needs_ranks", "needs 2 ranks")});
  std::ostringstream out;
  print_table(out, model::results_from_json(results), false);
  const std::string text = out.str();
  EXPECT_NE(text.find("2 benchmarks skipped (3 configurations): " + no_driver), std::string::npos)
      << text;
  // The same words under another code are another reason.
  EXPECT_NE(text.find("1 benchmark skipped: " + no_driver), std::string::npos) << text;
  EXPECT_NE(text.find("1 benchmark skipped: needs 2 ranks (collectives/pairwise)"),
            std::string::npos)
      << text;
  // Each line names its benchmarks (issue 45: "1 benchmark skipped" named none).
  EXPECT_NE(text.find(no_driver + " (bandwidth/h2d, bandwidth/d2h)"), std::string::npos) << text;
  EXPECT_NE(text.find(no_driver + " (gemm/x)"), std::string::npos) << text;
  // After the results, not before them.
  EXPECT_GT(text.find("benchmarks skipped"), text.find("bandwidth/host_memory")) << text;
}

TEST(ConsoleScreen, ASkipLineOfManyBenchmarksNamesTheFirstFour) {
  json results = json::array();
  for (int i = 0; i < 6; ++i)
    results.push_back(skipped("gpu/b" + std::to_string(i), "no_device", "no GPU"));
  std::ostringstream out;
  print_table(out, model::results_from_json(results), false);
  EXPECT_NE(
      out.str().find("6 benchmarks skipped: no GPU (gpu/b0, gpu/b1, gpu/b2, gpu/b3 and 2 more)"),
      std::string::npos)
      << out.str();
}

TEST(ConsoleScreen, HeaderNamesTheMachineInSixLines) {
  const json inv = {
      {"hostname", "node7"},
      {"build", {{"version", "0.1.0"}, {"git_commit", "cabde0cad23008aa"}}},
      {"cpu", {{"model", "AMD EPYC"}, {"sockets", 2}, {"cores", 96}, {"threads", 192}}},
      {"memory", {{"total_bytes", 1'600'000'000'000LL}}},
      {"numa", json::array({json::object(), json::object()})},
      {"gpus", json::array({{{"name", "NVIDIA H100"}, {"memory_bytes", 85e9}},
                            {{"name", "NVIDIA H100"}, {"memory_bytes", 85e9}}})},
      {"devices", {{"driver_version", "550.54.15"}}}};
  capabilities caps;
  caps.cuda.available = true;
  caps.cuda.version = "13.0";
  caps.cuda_driver_version = "12.4";
  caps.nccl.version = "2.28.9";
  caps.logical_cpus = 192;
  const auto f = header_facts(inv, caps, 16, {"node7", "node7", "node8"}, "mpi");
  const auto lines = format_header(f, console_width);
  ASSERT_LE(lines.size(), 6u);
  EXPECT_LE(widest(lines), console_width);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("on node7"), std::string::npos) << all;
  EXPECT_NE(all.find("AMD EPYC: 2 sockets, 96 cores, 192 threads"), std::string::npos) << all;
  EXPECT_NE(all.find("1600.0 GB"), std::string::npos) << all;
  EXPECT_NE(all.find("2 x NVIDIA H100 (85.0 GB each), driver 550.54.15"), std::string::npos) << all;
  EXPECT_NE(all.find("CUDA runtime 13.0, driver 12.4; NCCL 2.28.9"), std::string::npos) << all;
  EXPECT_NE(all.find("16 ranks on 2 hosts"), std::string::npos) << all;
}

// A rank the launcher bound to part of the machine says so (issue 38: Open MPI binds -np 8 ranks
// to a core or socket, and the node leader's host-memory runs then measured one socket).
TEST(ConsoleScreen, HeaderSaysWhenTheLauncherBoundTheRank) {
  capabilities caps;
  caps.logical_cpus = 8;
  caps.online_cpus = 64;
  const json inv = {{"cpu", {{"model", "Xeon"}, {"sockets", 2}, {"cores", 32}, {"threads", 64}}}};
  const auto lines = format_header(header_facts(inv, caps, 8, {"n1"}, "mpi"), 120);
  EXPECT_NE(lines[1].find("(8 of 64 usable: bound; mpirun --bind-to none for all)"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(cpu_binding_note(64, 64, true), "");
  const std::string note = cpu_binding_note(8, 64, true);
  EXPECT_NE(note.find("bound to 8 of 64 CPUs by the launcher"), std::string::npos) << note;
  EXPECT_NE(note.find("mpirun --bind-to none"), std::string::npos) << note;
  EXPECT_NE(note.find("srun --cpu-bind=none"), std::string::npos) << note;
  EXPECT_NE(cpu_binding_note(1, 2, false).find("taskset or a cpuset"), std::string::npos);
}

TEST(ConsoleScreen, HeaderSaysWhyThereIsNoGpu) {
  capabilities caps;
  caps.cuda.reason = std::string("no NVIDIA driver on this machine ") + std::string(200, '.');
  const auto f = header_facts(json::object(), caps, 1, {"vm"}, "single");
  const auto lines = format_header(f, 120);
  EXPECT_LE(widest(lines), 120u);
  EXPECT_EQ(lines[3].rfind("  gpus     none: no NVIDIA driver on this machine", 0), 0u) << lines[3];
  EXPECT_NE(lines[5].find("1 rank on 1 host (not launched by mpirun"), std::string::npos);
}

TEST(ConsoleScreen, CudaFailureSaysWhatIsMissing) {
  using detail::cuda_failure;
  detail::driver_presence none;  // no /dev/nvidia*, no libcuda.so.1
  const std::string raw =
      "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version";
  EXPECT_EQ(
      detail::describe_cuda_failure(cuda_failure::insufficient_driver, none, "13.0", "none", raw)
          .rfind("no NVIDIA driver on this machine", 0),
      0u);
  detail::driver_presence both{true, true, ""};
  const auto old =
      detail::describe_cuda_failure(cuda_failure::insufficient_driver, both, "13.0", "12.4", raw);
  EXPECT_NE(old.find("supports CUDA 12.4, older than this build's CUDA runtime 13.0"),
            std::string::npos)
      << old;
  // Which driver this build needs and which it found (issue 38: CUDA 13 needs R580; a fleet on
  // R535-R570 saw every GPU benchmark skipped without being told what to install).
  detail::driver_presence r570{true, true, "", "570.124.06"};
  const auto floor =
      detail::describe_cuda_failure(cuda_failure::insufficient_driver, r570, "13.0", "12.8", raw);
  EXPECT_EQ(floor,
            "the NVIDIA driver 570.124.06 supports CUDA 12.8, older than this build's CUDA runtime "
            "13.0, which needs driver R580 (580.65.06) or newer: upgrade the driver, or use a "
            "build for CUDA 12.8")
      << floor;
  EXPECT_EQ(detail::minimum_driver_for_cuda("12.4"), "525.60.13");
  EXPECT_EQ(detail::minimum_driver_for_cuda("99.0"), "");
  EXPECT_EQ(detail::driver_version_from_proc(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Fri Jan 10 2025\n"),
            "570.86.15");
  EXPECT_EQ(detail::driver_version_from_proc("garbage"), "");
  detail::driver_presence no_lib{true, false, "libcuda.so.1: cannot open shared object file"};
  EXPECT_NE(
      detail::describe_cuda_failure(cuda_failure::insufficient_driver, no_lib, "13.0", "", raw)
          .find("cannot open shared object file"),
      std::string::npos);
  detail::driver_presence no_nodes{false, true, ""};
  EXPECT_NE(detail::describe_cuda_failure(cuda_failure::no_device, no_nodes, "13.0", "", raw)
                .find("kernel module is not loaded"),
            std::string::npos);
  EXPECT_NE(detail::describe_cuda_failure(cuda_failure::stub_library, no_nodes, "13.0", "", raw)
                .find("stub"),
            std::string::npos);
  EXPECT_NE(detail::describe_cuda_failure(cuda_failure::other, both, "13.0", "13.0", "X (y)")
                .find("X (y)"),
            std::string::npos);
}

TEST(ConsoleScreen, TimeLeftIsTheEstimateCorrectedByThePaceSoFar) {
  // Nothing finished: the estimates as they are.
  EXPECT_DOUBLE_EQ(eta_seconds({100, 0, 0, 10, 0, 0}), 100);
  // Half the estimated work took twice its estimate: the rest will too (no prior).
  EXPECT_DOUBLE_EQ(eta_seconds({100, 50, 100, 0, 0, 0}), 100);
  // Skipped configurations (estimate 0, no time) at the start do not make it "~0 s left".
  EXPECT_DOUBLE_EQ(eta_seconds({100, 0, 0.01, 10, 0, 0}), 100);
  // The running configuration's time counts against its own estimate.
  EXPECT_DOUBLE_EQ(eta_seconds({100, 0, 0, 10, 4, 0}), 96);
  // The prior (one typical configuration at its estimate) damps one slow first configuration.
  EXPECT_DOUBLE_EQ(eta_seconds({100, 1, 5, 1, 0, 1}), 99 * 3);
}

TEST(ConsoleScreen, DefaultEstimateIsTheMiddleOfTheStoppingWindow) {
  // A configuration runs warm_up_s, then samples until the CI target once min_time_s is measured,
  // or to max_time_s: not max_time_s + 1 s (the quick suite's estimate was 4x its wall time).
  exec_settings s;
  s.warm_up_s = 0.02;
  s.rule.min_time_s = 0.2;
  s.rule.max_time_s = 1.0;
  EXPECT_DOUBLE_EQ(default_config_estimate_s(s), 0.02 + 0.2 + 0.8 / 2);
}

TEST(ConsoleScreen, OneCauseIsSaidOnceForABenchmarkNeedingCudaAndNccl) {
  // Without a driver NCCL's reason is CUDA's: nccl_allreduce then groups with the other GPU skips.
  capabilities caps;
  caps.cuda.reason = "no NVIDIA driver on this machine";
  caps.nccl.reason = caps.cuda.reason;
  benchmark b("collectives/x", [](state&) {});
  b.require(req::cuda).require(req::nccl);
  const coded_reason why = b.unmet(caps);
  EXPECT_EQ(why.code, reason_code::no_device);
  EXPECT_EQ(why.text, caps.cuda.reason);
}

TEST(ConsoleProgress, EstimatesRepeatWithTheRepetitionsInRunOrder) {
  std::vector<config_estimate> est(2);
  est[0].seconds = 1.5;
  est[1].seconds = 4;
  est[1].skip_reason = "no GPU";  // skipped at once: no time
  EXPECT_EQ(run_estimates_s(est), (std::vector<double>{1.5, 0}));
  EXPECT_EQ(run_estimates_s(est, 3), (std::vector<double>{1.5, 0, 1.5, 0, 1.5, 0}));
}
