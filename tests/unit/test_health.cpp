// The health checks' verdicts (benchmarks/health/judge.cpp) and the stress benchmarks' pure parts
// (throughput stability, the checked multiply-add kernel).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_paths.h"
#include "cpu/stress/fma_kernel.h"
#include "health/judge.h"
#include "stress/stability.h"

namespace infrabench {
namespace {

using health::counter_set;
using health::gpu_view;

gpu_view gpu(unsigned index, counter_set now) {
  gpu_view g;
  g.index = index;
  g.name = "Fake H100";
  g.now = std::move(now);
  return g;
}

bool mentions(const health::verdict& v, const std::string& text) {
  return v.failure_text().find(text) != std::string::npos;
}

double metric(const health::verdict& v, const std::string& name) {
  for (const auto& m : v.metrics) {
    if (m.name == name) return m.value;
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

const counter_set link_ok = {{"pcie_gen_current", 5},
                             {"pcie_gen_max", 5},
                             {"pcie_width_current", 16},
                             {"pcie_width_max", 16},
                             {"pcie_replay", 0}};

TEST(HealthPcie, LinkBelowItsMaximumUnderTheChecksOwnLoadFailsWithTheFigures) {
  counter_set slow = link_ok;
  slow["pcie_gen_current"] = 1;  // idle after the load
  slow["pcie_width_current"] = 8;
  gpu_view loaded = gpu(1, slow);
  loaded.gen_loaded = 4;  // the best read while the check copied to it
  loaded.width_loaded = 8;
  gpu_view ok = gpu(0, link_ok);
  ok.gen_loaded = 5;
  ok.width_loaded = 16;
  const auto v = health::judge_pcie({ok, loaded});
  ASSERT_TRUE(v.failed());
  EXPECT_TRUE(mentions(v,
                       "GPU 1 (Fake H100): PCIe link Gen4 x8 below its maximum Gen5 x16 while "
                       "this check copied to it"));
  EXPECT_TRUE(mentions(v, "reseat the card"));
  EXPECT_EQ(metric(v, "pcie_gen_min"), 4);
  EXPECT_EQ(metric(v, "pcie_width_min"), 8);
}

TEST(HealthPcie, AnIdleHealthyGpuNeverFailsWithoutALoad) {
  // Read once at idle (Gen1), no telemetry, no load of the check's own: a warning only.
  counter_set idle = link_ok;
  idle["pcie_gen_current"] = 1;
  const auto v = health::judge_pcie({gpu(0, idle)});
  EXPECT_FALSE(v.failed()) << v.failure_text();
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("PCIe link Gen1 x16 below its maximum Gen5 x16 (read once, idle"),
            std::string::npos)
      << v.warnings[0];
  EXPECT_NE(v.warnings[0].find("not judged"), std::string::npos);
  // Telemetry that saw no GPU load (an idle run) is no better: still a warning.
  gpu_view traced = gpu(0, idle);
  traced.gen_seen = 1;
  traced.width_seen = 16;
  EXPECT_FALSE(health::judge_pcie({traced}).failed());
}

TEST(HealthPcie, IdleGenerationIsJudgedByTheBestSeenUnderLoad) {
  counter_set idle = link_ok;
  idle["pcie_gen_current"] = 1;  // power saving at idle
  gpu_view g = gpu(0, idle);
  g.gen_seen = 5;
  g.width_seen = 16;
  const auto v = health::judge_pcie({g});
  EXPECT_FALSE(v.failed()) << v.failure_text();
  EXPECT_EQ(metric(v, "pcie_gen_min"), 5);
}

// The fake NVML (sim/nvml) with one GPU whose link reads `idle_gen` until `trained_s`
// seconds after nvmlInit, then `loaded_gen`: the link training up under a copy load.
class fake_link_nvml {
 public:
  fake_link_nvml(int idle_gen, int loaded_gen, double trained_s) {
    m_path = (std::filesystem::temp_directory_path() /
              ("fake-nvml-health-" + std::to_string(::getpid()) + ".json"))
                 .string();
    const nlohmann::json gpu = {{"name", "Fake H200"},
                                {"pcie_gen", idle_gen},
                                {"pcie_width", 16},
                                {"pcie_max_gen", 5},
                                {"pcie_max_width", 16},
                                {"pcie_replay", 0},
                                {"changes", {{{"at_s", trained_s}, {"pcie_gen", loaded_gen}}}}};
    std::ofstream(m_path) << nlohmann::json{{"gpus", {gpu}}}.dump();
    ::setenv("INFRABENCH_FAKE_NVML", m_path.c_str(), 1);
    m_lib = std::make_unique<nvml::library>(infrabench::build_paths::fake_nvml);
  }
  ~fake_link_nvml() { std::filesystem::remove(m_path); }
  [[nodiscard]] const nvml::library& lib() const { return *m_lib; }
  [[nodiscard]] std::vector<gpu_view> views() const {
    gpu_view g = gpu(0, m_lib->counters(0));
    g.name = m_lib->name(0);
    return {g};
  }

 private:
  std::string m_path;
  std::unique_ptr<nvml::library> m_lib;
};

// A load that copies to GPU 0 (`loads`) for `seconds`, reading the links as it goes.
health::copy_load fake_load(double seconds, bool loads = true) {
  return [=](const std::function<void()>& read_now) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      read_now();
    } while (std::chrono::steady_clock::now() < end);
    health::copy_load_result r;
    if (loads) {
      r.gpus = {0};
    } else {
      r.why_not = "built without CUDA";
    }
    return r;
  };
}

TEST(HealthPcie, FakeNvmlIdleLinkTrainsUpUnderTheChecksLoadAndPasses) {
  const fake_link_nvml nv(/*idle_gen=*/1, /*loaded_gen=*/5, /*trained_s=*/0.1);
  ASSERT_TRUE(nv.lib().available()) << nv.lib().reason();
  auto gpus = nv.views();
  EXPECT_EQ(gpus[0].now.at("pcie_gen_current"), 1);  // idle when first read
  EXPECT_EQ(health::read_links_under_load(gpus, nv.lib(), fake_load(0.3)), "");
  EXPECT_EQ(gpus[0].gen_loaded, 5);
  EXPECT_EQ(gpus[0].width_loaded, 16);
  const auto v = health::judge_pcie(gpus);
  EXPECT_FALSE(v.failed()) << v.failure_text();
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_EQ(metric(v, "pcie_gen_min"), 5);
}

TEST(HealthPcie, FakeNvmlLinkStuckLowUnderLoadFails) {
  const fake_link_nvml nv(/*idle_gen=*/1, /*loaded_gen=*/3, /*trained_s=*/0.05);
  auto gpus = nv.views();
  EXPECT_EQ(health::read_links_under_load(gpus, nv.lib(), fake_load(0.2)), "");
  const auto v = health::judge_pcie(gpus);
  ASSERT_TRUE(v.failed());
  EXPECT_TRUE(mentions(v, "PCIe link Gen3 x16 below its maximum Gen5 x16 while this check copied"))
      << v.failure_text();
}

TEST(HealthPcie, FakeNvmlWithoutALoadOnlyWarns) {
  // No CUDA (or the GPU is not visible to it): the readings taken meanwhile are idle ones.
  const fake_link_nvml nv(/*idle_gen=*/1, /*loaded_gen=*/1, /*trained_s=*/0.0);
  auto gpus = nv.views();
  EXPECT_EQ(health::read_links_under_load(gpus, nv.lib(), fake_load(0.02, false)),
            "built without CUDA");
  EXPECT_EQ(gpus[0].gen_loaded, -1);
  const auto v = health::judge_pcie(gpus);
  EXPECT_FALSE(v.failed()) << v.failure_text();
  ASSERT_EQ(v.warnings.size(), 1u);
}

TEST(HealthPcie, ReplaysDuringTheRunAreAWarning) {
  gpu_view g = gpu(0, link_ok);
  g.now["pcie_replay"] = 12;
  g.before = link_ok;
  const auto v = health::judge_pcie({g});
  EXPECT_FALSE(v.failed());
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(metric(v, "pcie_replays_max"), 12);
}

TEST(HealthNvlink, DownLinkAndRecoveryFail) {
  gpu_view down = gpu(0, {});
  down.links = {18, 17, {5}};
  gpu_view retrained = gpu(1, {{"nvlink_recovery", 3}});
  retrained.links = {18, 18, {}};
  retrained.before = counter_set{{"nvlink_recovery", 1}};
  const auto v = health::judge_nvlink({down, retrained});
  EXPECT_TRUE(mentions(v, "GPU 0 (Fake H100): NVLink 5 down (17 of 18 up)"));
  EXPECT_TRUE(mentions(v, "GPU 1 (Fake H100): 2 NVLink recoveries during the run"));
  EXPECT_EQ(metric(v, "nvlinks_active_min"), 17);
  EXPECT_EQ(metric(v, "nvlinks_down"), 1);
}

TEST(HealthNvlink, PcieCardsPassWithZeroLinksForTheBaselineToJudge) {
  const auto v = health::judge_nvlink({gpu(0, {})});
  EXPECT_FALSE(v.failed());
  EXPECT_TRUE(v.skip.empty());
  EXPECT_EQ(metric(v, "nvlinks_active_min"), 0);
}

TEST(HealthEcc, DisabledDoubleBitAndNewSingleBitErrorsFail) {
  gpu_view off = gpu(0, {{"ecc_enabled", 0}});
  gpu_view dbe = gpu(1, {{"ecc_enabled", 1}, {"ecc_dbe_volatile", 2}, {"ecc_sbe_volatile", 0}});
  gpu_view sbe = gpu(2, {{"ecc_enabled", 1}, {"ecc_dbe_volatile", 0}, {"ecc_sbe_volatile", 5}});
  sbe.before = counter_set{{"ecc_sbe_volatile", 4}};
  const auto v = health::judge_ecc({off, dbe, sbe});
  EXPECT_TRUE(mentions(v, "GPU 0 (Fake H100): ECC is disabled"));
  EXPECT_TRUE(mentions(v, "GPU 1 (Fake H100): 2 double-bit ECC errors"));
  EXPECT_TRUE(mentions(v, "GPU 2 (Fake H100): 1 new single-bit ECC errors during the run"));
  EXPECT_EQ(metric(v, "ecc_dbe_volatile_max"), 2);
  EXPECT_EQ(metric(v, "ecc_sbe_new_max"), 1);
}

TEST(HealthEcc, OldSingleBitErrorsPassAndWithoutTelemetryTheGrowthIsNotJudged) {
  const auto v = health::judge_ecc({gpu(0, {{"ecc_enabled", 1}, {"ecc_sbe_volatile", 7}})});
  EXPECT_FALSE(v.failed());
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("telemetry off"), std::string::npos);
  EXPECT_EQ(health::judge_ecc({gpu(0, {})}).skip, "ECC is not supported on these GPUs");
}

TEST(HealthRemap, PendingAndFailedRemapsFail) {
  const auto v = health::judge_remap(
      {gpu(0, {{"remap_pending", 1}, {"remap_failure", 0}, {"remapped_rows_uncorrectable", 1}}),
       gpu(1, {{"remap_pending", 0}, {"remap_failure", 1}}),
       gpu(2, {{"retired_pages_pending", 1}})});
  EXPECT_TRUE(mentions(v, "GPU 0 (Fake H100): a row remap is pending: reset the GPU"));
  EXPECT_TRUE(mentions(v, "GPU 1 (Fake H100): a row remap failed"));
  EXPECT_TRUE(mentions(v, "GPU 2 (Fake H100): retired pages are pending"));
  EXPECT_EQ(metric(v, "remap_pending_max"), 1);
  EXPECT_EQ(metric(v, "remap_failure_max"), 1);
}

TEST(HealthThrottle, ThermalOrHardwareSlowdownFailsThePowerCapDoesNot) {
  gpu_view capped = gpu(0, {});
  capped.reasons_now = 0x4;
  capped.serious_fraction = 0;
  EXPECT_FALSE(health::judge_throttle({capped}).failed());
  gpu_view hot = gpu(1, {});
  hot.reasons_now = 0;
  hot.serious_fraction = 0.25;
  hot.serious_bits = 0x20;
  gpu_view now = gpu(2, {});
  now.reasons_now = 0x8;
  const auto v = health::judge_throttle({capped, hot, now});
  EXPECT_TRUE(mentions(v, "GPU 1 (Fake H100): sw_thermal_slowdown during 25% of the run"));
  EXPECT_TRUE(mentions(v, "GPU 2 (Fake H100): in hw_slowdown now"));
  EXPECT_EQ(metric(v, "thermal_or_hw_slowdown_fraction_max"), 1);
}

TEST(HealthXid, EveryXidFailsWithWhatItMeans) {
  EXPECT_FALSE(health::judge_xid({}, false, "telemetry off").skip.empty());
  EXPECT_FALSE(health::judge_xid({}, true, "").failed());
  telemetry::event e;
  e.t_s = 12;
  e.kind = "xid";
  e.gpu = 3;
  e.text = "XID " + telemetry::describe_xid(48);
  const auto v = health::judge_xid({e}, true, "");
  EXPECT_TRUE(mentions(v, "GPU 3 at 12 s: XID 48: double-bit ECC error"));
  EXPECT_EQ(metric(v, "xid_events"), 1);
}

// Every GPU rule names the GPU(s) behind its evidence (issue 38): the metric a baseline judges
// carries the GPUs that set it, and a failure names the GPUs it blames, as DCGM does.
std::vector<int> gpus_of(const health::verdict& v, const std::string& name) {
  for (const auto& m : v.metrics) {
    if (m.name == name) return m.gpus;
  }
  ADD_FAILURE() << "no metric " << name;
  return {};
}

TEST(HealthAttribution, NvlinkMinimumNamesTheGpuWithTheFewestLinks) {
  std::vector<gpu_view> gpus;
  for (unsigned i = 0; i < 8; ++i) {
    gpus.push_back(gpu(i, {}));
    gpus.back().links = {18, 18, {}};
  }
  gpus[5].links = {18, 17, {7}};
  const auto v = health::judge_nvlink(gpus);
  EXPECT_EQ(metric(v, "nvlinks_active_min"), 17);
  EXPECT_EQ(gpus_of(v, "nvlinks_active_min"), std::vector<int>{5});
  EXPECT_EQ(gpus_of(v, "nvlinks_down"), std::vector<int>{5});
  EXPECT_TRUE(gpus_of(v, "nvlink_errors_max").empty());  // no errors: no GPU behind the 0
  EXPECT_EQ(v.failed_gpus, std::vector<int>{5});
  // Fewer links on a GPU without a link down (a board with fewer): still the GPU at the minimum.
  gpus[5].links = {17, 17, {}};
  const auto fewer = health::judge_nvlink(gpus);
  EXPECT_FALSE(fewer.failed());
  EXPECT_EQ(gpus_of(fewer, "nvlinks_active_min"), std::vector<int>{5});
}

TEST(HealthAttribution, EccRemapThrottlePcieAndXidNameTheirGpus) {
  gpu_view sbe = gpu(2, {{"ecc_enabled", 1}, {"ecc_dbe_volatile", 0}, {"ecc_sbe_volatile", 5}});
  sbe.before = counter_set{{"ecc_sbe_volatile", 4}};
  const auto ecc = health::judge_ecc({gpu(0, {{"ecc_enabled", 1}, {"ecc_dbe_volatile", 0}}),
                                      gpu(1, {{"ecc_enabled", 1}, {"ecc_dbe_volatile", 3}}), sbe});
  EXPECT_EQ(gpus_of(ecc, "ecc_dbe_volatile_max"), std::vector<int>{1});
  EXPECT_EQ(gpus_of(ecc, "ecc_sbe_new_max"), std::vector<int>{2});
  EXPECT_EQ(ecc.failed_gpus, (std::vector<int>{1, 2}));

  const auto remap = health::judge_remap(
      {gpu(0, {{"remap_pending", 0}}), gpu(6, {{"remap_pending", 1}, {"remap_failure", 0}})});
  EXPECT_EQ(gpus_of(remap, "remap_pending_max"), std::vector<int>{6});
  EXPECT_TRUE(gpus_of(remap, "remap_failure_max").empty());
  EXPECT_EQ(remap.failed_gpus, std::vector<int>{6});

  gpu_view hot = gpu(4, {});
  hot.serious_fraction = 0.25;
  hot.serious_bits = 0x20;
  gpu_view cool = gpu(3, {});
  cool.serious_fraction = 0;
  const auto thr = health::judge_throttle({cool, hot});
  EXPECT_EQ(gpus_of(thr, "thermal_or_hw_slowdown_fraction_max"), std::vector<int>{4});
  EXPECT_EQ(thr.failed_gpus, std::vector<int>{4});

  const counter_set link = {{"pcie_gen_current", 5},
                            {"pcie_gen_max", 5},
                            {"pcie_width_current", 16},
                            {"pcie_width_max", 16}};
  gpu_view narrow = gpu(7, link);
  narrow.now["pcie_width_current"] = 8;
  narrow.gen_loaded = 5;
  narrow.width_loaded = 8;
  const auto pcie = health::judge_pcie({gpu(0, link), narrow});
  EXPECT_EQ(gpus_of(pcie, "pcie_width_min"), std::vector<int>{7});
  EXPECT_EQ(gpus_of(pcie, "pcie_gen_min"), (std::vector<int>{0, 7}));
  EXPECT_EQ(pcie.failed_gpus, std::vector<int>{7});

  telemetry::event e;
  e.kind = "xid";
  e.gpu = 3;
  e.text = "XID 79";
  const auto xid = health::judge_xid({e}, true, "");
  EXPECT_EQ(gpus_of(xid, "xid_events"), std::vector<int>{3});
  EXPECT_EQ(xid.failed_gpus, std::vector<int>{3});
}

TEST(HealthCpu, EdacAndMachineChecks) {
  EXPECT_FALSE(health::judge_edac({}, nullptr, "not exposed").skip.empty());
  const counter_set before = {{"edac_ce", 3}, {"edac_ue", 0}, {"mce_events", 1}};
  const counter_set same = before;
  EXPECT_FALSE(health::judge_edac(same, &before, "").failed());
  const counter_set grown = {{"edac_ce", 5}, {"edac_ue", 0}, {"mce_events", 2}};
  EXPECT_TRUE(mentions(health::judge_edac(grown, &before, ""),
                       "2 corrected memory errors (EDAC) during the run"));
  EXPECT_TRUE(mentions(health::judge_edac({{"edac_ce", 0}, {"edac_ue", 1}}, nullptr, ""),
                       "1 uncorrected memory errors"));
  EXPECT_TRUE(mentions(health::judge_mce(grown, &before), "1 machine-check exceptions during"));
  EXPECT_FALSE(health::judge_mce(same, &before).failed());
  EXPECT_FALSE(health::judge_mce({}, nullptr).skip.empty());
}

TEST(HealthCoreSpeed, SlowCoreFailsAndCoreKindsAreComparedApart) {
  // Two performance cores at ~100, two efficiency cores at ~60: none is slow among its kind.
  const std::vector<int> cpus = {0, 1, 2, 3};
  const std::vector<std::string> kinds = {"cpu_core", "cpu_core", "cpu_atom", "cpu_atom"};
  EXPECT_FALSE(health::judge_core_speed({100, 98, 60, 61}, cpus, kinds, 0.15).failed());
  // Compared as one kind, the efficiency cores would look broken.
  EXPECT_TRUE(health::judge_core_speed({100, 98, 60, 61}, cpus, {"all", "all", "all", "all"}, 0.15)
                  .failed());
  const auto v =
      health::judge_core_speed({100, 101, 99, 70}, cpus, {"all", "all", "all", "all"}, 0.15);
  EXPECT_TRUE(mentions(v, "CPU 3 runs at 70% of its siblings' median"));
  EXPECT_NEAR(metric(v, "slowest_core_ratio"), 70.0 / 99.5, 1e-9);
}

// Core speed on a shared machine (issue 44): judged on the rounds no other process ran in; with
// none, a slow reading is not a failure but says why it could not be judged.
TEST(HealthCoreSpeed, JudgedOnQuietRoundsOnlyAndNeverFailedOnABusyMachine) {
  const std::vector<int> cpus = {0, 1, 2, 3};
  const std::vector<std::string> all = {"all", "all", "all", "all"};
  const health::core_round quiet_ok{{100, 101, 99, 100}, true};
  const health::core_round busy_fast{{130, 140, 120, 135}, false};
  const health::core_round busy_slow{{100, 101, 99, 70}, false};
  const health::core_round quiet_slow{{100, 101, 99, 70}, true};
  // The busy round's higher rates do not count: the best is over the quiet rounds.
  const auto b = health::best_of_quiet_rounds({quiet_ok, busy_fast});
  EXPECT_EQ(b.quiet, 1u);
  EXPECT_EQ(b.rounds, 2u);
  EXPECT_EQ(b.best, (std::vector<double>{100, 101, 99, 100}));
  // No quiet round: the best of every round.
  EXPECT_EQ(health::best_of_quiet_rounds({busy_slow, busy_fast}).best,
            (std::vector<double>{130, 140, 120, 135}));
  // A slow core seen in a quiet round fails, whatever the busy rounds said.
  const auto real = health::judge_core_rounds({quiet_slow, busy_slow}, cpus, all, 0.15, "load");
  EXPECT_TRUE(real.v.failed());
  EXPECT_TRUE(real.busy_reason.empty());
  // Slow only in busy rounds, no quiet one: not failed, and the reason says so.
  const auto busy =
      health::judge_core_rounds({busy_slow, busy_slow}, cpus, all, 0.15, "others used 1.2 CPUs");
  EXPECT_FALSE(busy.v.failed());
  EXPECT_NE(busy.busy_reason.find("not judged"), std::string::npos) << busy.busy_reason;
  EXPECT_NE(busy.busy_reason.find("in all 2 rounds (others used 1.2 CPUs)"), std::string::npos)
      << busy.busy_reason;
  EXPECT_NE(busy.busy_reason.find("70%"), std::string::npos) << busy.busy_reason;
  EXPECT_NEAR(metric(busy.v, "slowest_core_ratio"), 70.0 / 99.5, 1e-9);
  // Busy in every round but no core slow: a pass (load only slows a core), nothing to excuse.
  const auto fine = health::judge_core_rounds({busy_fast}, cpus, all, 0.15, "load");
  EXPECT_FALSE(fine.v.failed());
  EXPECT_TRUE(fine.busy_reason.empty());
}

TEST(StressStability, WorstSecondAndDrift) {
  std::vector<double> steady(40, 100.0);
  auto s = stress::analyze(steady);
  EXPECT_EQ(s.seconds, 40u);
  EXPECT_DOUBLE_EQ(s.worst_ratio, 1);
  EXPECT_DOUBLE_EQ(s.drift_pct, 0);
  EXPECT_EQ(s.window_s, 10);
  EXPECT_TRUE(stress::sag_failure(s, 0.1, "GEMM throughput", "TFLOP/s").empty());

  std::vector<double> dip = steady;
  dip[17] = 60;
  s = stress::analyze(dip);
  EXPECT_DOUBLE_EQ(s.worst_ratio, 0.6);
  EXPECT_EQ(
      stress::sag_failure(s, 0.1, "GEMM throughput", "TFLOP/s"),
      "GEMM throughput sagged: worst second 60% of the median (60 of 100 TFLOP/s); limit 90%");

  // Boost clocks for the first 10 s, then a thermal steady state 23% lower: no single second
  // stands out against the median, the drift does.
  std::vector<double> drift(40, 100.0);
  for (int i = 0; i < 10; ++i) drift[static_cast<std::size_t>(i)] = 130;
  s = stress::analyze(drift);
  EXPECT_DOUBLE_EQ(s.worst_ratio, 1);
  EXPECT_NEAR(s.drift_pct, -23.08, 0.01);
  EXPECT_EQ(stress::sag_failure(s, 0.1, "x", "u"),
            "x drifted down 23% from the first 10 s to the last (limit 10%)");
  EXPECT_FALSE(stress::sag_failure(stress::analyze({}), 0.1, "x", "u").empty());
}

TEST(StressGpuRound, GemmsRunBackToBackAndTheChecksStaySmall) {
  // H200, 8192^3 bf16: ~1.55 ms per GEMM, ~1.2 ms for the copy and the checks. A round of 0.2 s
  // is 130 GEMMs: the GEMMs are >99% of the round (one GEMM then the checks was ~45%).
  const int n = stress::gemms_per_round(1.55e-3, 1.2e-3, 0.2, 0.02);
  EXPECT_EQ(n, 130);
  EXPECT_GT(n * 1.55e-3 / (n * 1.55e-3 + 1.2e-3), 0.99);
  // A small GEMM with slow checks: the check share decides, not the round length.
  const int small = stress::gemms_per_round(1e-5, 1e-3, 0.2, 0.02);
  EXPECT_GE(small, 20000);
  EXPECT_LE(1e-3 / (small * 1e-5), 0.02 + 1e-9);
  // Degenerate timings: at least one GEMM, never an unbounded round.
  EXPECT_EQ(stress::gemms_per_round(0, 1, 0.2, 0.02), 1);
  EXPECT_EQ(stress::gemms_per_round(1e-12, 1, 0.2, 0.02), 100000);
  EXPECT_EQ(stress::gemms_per_round(10, 0, 0.2, 0.02), 1);
}

TEST(StressStability, PerSecondBucketsLeaveThePartialSecondOut) {
  stress::per_second a, b;
  a.add(0.2, 1);
  a.add(0.9, 2);
  a.add(1.5, 4);
  b.add(1.1, 8);
  b.add(2.5, 100);  // in the partial third second
  a.merge(b);
  EXPECT_EQ(a.complete(2.7), (std::vector<double>{3, 12}));
  EXPECT_EQ(a.complete(4.0), (std::vector<double>{3, 12, 100, 0}));
}

TEST(StressFmaKernel, ResultsAreBitForBitRepeatableAndAFlipIsCaught) {
  std::vector<float> ref, again;
  stress::fma_block(5000, ref);
  stress::fma_block(5000, again);
  ASSERT_FALSE(ref.empty());
  EXPECT_EQ(stress::fma_mismatches(again, ref), 0u);
  // No recurrence has settled: one more step changes every accumulator.
  std::vector<float> longer;
  stress::fma_block(5001, longer);
  EXPECT_EQ(stress::fma_mismatches(longer, ref), ref.size());
  // One flipped low bit, as a faulty unit would make, is a mismatch.
  std::uint32_t bits;
  std::memcpy(&bits, &again[7], 4);
  bits ^= 1u;
  std::memcpy(&again[7], &bits, 4);
  EXPECT_EQ(stress::fma_mismatches(again, ref), 1u);
  EXPECT_GT(stress::fma_flops_per_iteration(), 0);
}

}  // namespace
}  // namespace infrabench
