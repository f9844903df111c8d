// Telemetry: the NVML loader against the fake NVML (sim/nvml), the CPU sources against a
// fixture tree, and a sampler session end to end (its summaries, its report object, its events).
#include <unistd.h>
#include <cmath>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_paths.h"
#include "fake_nvml_config.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/telemetry.h"

namespace infrabench {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using test_support::fake_nvml_config;

json healthy_gpu() {
  return {{"name", "Fake H100"},
          {"sm_clock_mhz", 1980},
          {"mem_clock_mhz", 2619},
          {"power_w", 412.5},
          {"temp_c", 55},
          {"throttle_reasons", 4},
          {"pcie_gen", 5},
          {"pcie_width", 16},
          {"pcie_max_gen", 5},
          {"pcie_max_width", 16},
          {"pcie_replay", 0},
          {"ecc_enabled", true},
          {"ecc_sbe_volatile", 0},
          {"ecc_dbe_volatile", 0},
          {"ecc_sbe_aggregate", 3},
          {"ecc_dbe_aggregate", 0},
          {"remapped_rows_correctable", 1},
          {"remapped_rows_uncorrectable", 0},
          {"remap_pending", false},
          {"remap_failure", false},
          {"nvlinks", 18},
          {"nvlink_crc_flit", 0},
          {"nvlink_crc_data", 0},
          {"nvlink_replay", 0},
          {"nvlink_recovery", 0}};
}

TEST(NvmlLoader, MissingLibraryIsUnavailableWithTheReason) {
  nvml::library lib("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(lib.available());
  EXPECT_NE(lib.reason().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << lib.reason();
  EXPECT_EQ(lib.device_count(), 0u);
  EXPECT_TRUE(std::isnan(lib.sample(0).sm_clock_mhz));
  EXPECT_TRUE(lib.counters(0).empty());
}

TEST(NvmlLoader, InitFailureIsUnavailableWithNvmlsText) {
  fake_nvml_config cfg(json{{"init_error", 9}, {"gpus", json::array()}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  EXPECT_FALSE(lib.available());
  EXPECT_EQ(lib.reason(), "nvmlInit_v2: Driver Not Loaded");
}

TEST(NvmlLoader, ReadsSamplesCountersAndLinksFromTheFake) {
  json down = healthy_gpu();
  down["nvlinks_down"] = {3, 7};
  down.erase("remap_pending");  // a GPU without row remapping: the query is not supported
  fake_nvml_config cfg(json{{"driver_version", "580.1-fake"}, {"gpus", {healthy_gpu(), down}}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  ASSERT_TRUE(lib.available()) << lib.reason();
  ASSERT_EQ(lib.device_count(), 2u);
  EXPECT_EQ(lib.name(0), "Fake H100");
  EXPECT_EQ(lib.driver_version(), "580.1-fake");
  const nvml::gpu_sample s = lib.sample(0);
  EXPECT_EQ(s.sm_clock_mhz, 1980);
  EXPECT_EQ(s.mem_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(s.power_w, 412.5);
  EXPECT_EQ(s.temp_c, 55);
  EXPECT_EQ(s.throttle_reasons, 4);
  EXPECT_EQ(s.pcie_gen, 5);
  const auto c = lib.counters(0);
  for (const char* key : {"pcie_gen_max", "pcie_width_current", "ecc_enabled", "ecc_sbe_aggregate",
                          "remap_pending", "nvlink_active", "nvlink_crc_flit", "nvlink_recovery"}) {
    EXPECT_TRUE(c.count(key)) << key;
  }
  EXPECT_EQ(c.at("ecc_sbe_aggregate"), 3);
  EXPECT_EQ(c.at("nvlink_present"), 18);
  EXPECT_FALSE(lib.counters(1).count("remap_pending"));  // not supported: absent, not zero
  const auto links = lib.nvlinks(1);
  EXPECT_EQ(links.present, 18);
  EXPECT_EQ(links.active, 16);
  EXPECT_EQ(links.down, (std::vector<int>{3, 7}));
  EXPECT_EQ(lib.ecc_volatile(0).size(), 2u);
}

TEST(NvmlLoader, DecodesThrottleReasonBits) {
  EXPECT_EQ(nvml::reason_names(0), "none");
  EXPECT_EQ(nvml::reason_names(0x4 | 0x40), "sw_power_cap, hw_thermal_slowdown");
}

TEST(NvmlLoader, DeliversXidEventsOnceAfterTheyAreDue) {
  json g = healthy_gpu();
  g["xids"] = {{{"at_s", 0.0}, {"xid", 79}}, {{"at_s", 0.2}, {"xid", 48}}};
  fake_nvml_config cfg(json{{"gpus", {healthy_gpu(), g}}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  lib.watch_xids();
  ASSERT_TRUE(lib.watching_xids()) << lib.xid_reason();
  auto first = lib.poll_xids();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].gpu, 1u);
  EXPECT_EQ(first[0].xid, 79u);
  EXPECT_TRUE(lib.poll_xids().empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const auto second = lib.poll_xids();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].xid, 48u);
  EXPECT_NE(telemetry::describe_xid(79).find("fallen off the bus"), std::string::npos);
}

TEST(TelemetryCpu, ReadsTheFixtureTree) {
  telemetry::cpu_source src(INFRABENCH_SYSFS_FIXTURE);
  ASSERT_TRUE(src.has_freq() && src.has_temp() && src.has_power());
  auto r = src.read();
  EXPECT_DOUBLE_EQ(r.freq_mhz_mean, 2600);
  EXPECT_DOUBLE_EQ(r.freq_mhz_min, 2000);
  EXPECT_DOUBLE_EQ(r.freq_mhz_max, 3200);
  EXPECT_DOUBLE_EQ(r.package_temp_c, 61);      // the package sensor, not the 99 C core or the NVMe
  EXPECT_TRUE(std::isnan(r.package_power_w));  // the first reading only starts the energy count
  r = src.read();
  EXPECT_DOUBLE_EQ(r.package_power_w, 0);  // the fixture's counter does not move
  const auto c = src.counters();
  EXPECT_EQ(c.at("edac_ce"), 3);
  EXPECT_EQ(c.at("edac_ue"), 0);
  EXPECT_EQ(c.at("mce_events"), 1);
}

TEST(TelemetryCpu, SaysWhatIsMissing) {
  telemetry::cpu_source src("/nonexistent-root");
  EXPECT_FALSE(src.has_freq() || src.has_temp() || src.has_power());
  const auto r = src.read();
  EXPECT_TRUE(std::isnan(r.freq_mhz_mean) && std::isnan(r.package_temp_c));
  EXPECT_TRUE(src.counters().empty());
  EXPECT_NE(src.sources()["edac"].get<std::string>().find("not exposed"), std::string::npos);
}

TEST(TelemetryStats, LeavesNanOut) {
  const auto s = telemetry::stats_of({3, NAN, 1, 2, 10});
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_EQ(telemetry::stats_of({NAN}).n, 0u);
}

const metric* find_metric(const result& r, const std::string& name) {
  for (const auto& m : r.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// A session over the fake GPUs and the fixture CPU: summaries per window, the report object in
// the shape the HTML report plots, the counters before and after, events.
TEST(TelemetrySession, SummarizesWindowsAndWritesTheReportShape) {
  json hot = healthy_gpu();
  hot["sm_clock_mhz"] = 1500;
  hot["temp_c"] = 88;
  hot["throttle_reasons"] = 0x40 | 0x4;  // hardware thermal slowdown and the power cap
  hot["changes"] = {{{"at_s", 0.15}, {"ecc_sbe_volatile", 2}}};
  hot["xids"] = {{{"at_s", 0.05}, {"xid", 79}}};
  fake_nvml_config cfg(json{{"gpus", {healthy_gpu(), hot}}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  ASSERT_TRUE(lib.available());
  telemetry::session::options o;
  o.interval_s = 0.02;
  o.sysfs_root = INFRABENCH_SYSFS_FIXTURE;
  o.nvml = &lib;
  o.host = "fixture";
  telemetry::session s(o);
  s.start();
  s.begin_window();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past one error poll (1 s)
  result r;
  s.end_window(r);
  s.stop();

  const metric* sm_min = find_metric(r, "gpu_sm_clock_mhz_min");
  ASSERT_NE(sm_min, nullptr);
  EXPECT_EQ(sm_min->value, 1500);
  EXPECT_EQ(sm_min->role, metric_role::information);
  EXPECT_EQ(find_metric(r, "gpu_sm_clock_mhz_max")->value, 1980);
  EXPECT_EQ(find_metric(r, "gpu_temp_c_max")->value, 88);
  EXPECT_DOUBLE_EQ(find_metric(r, "gpu_power_w_mean")->value, 412.5);
  EXPECT_DOUBLE_EQ(find_metric(r, "gpu_throttled_fraction")->value, 1.0);  // both power capped
  EXPECT_DOUBLE_EQ(find_metric(r, "gpu_throttle_hw_thermal_slowdown_fraction")->value, 0.5);
  EXPECT_DOUBLE_EQ(find_metric(r, "cpu_freq_mhz_median")->value, 2600);
  EXPECT_DOUBLE_EQ(find_metric(r, "cpu_package_temp_c_max")->value, 61);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("GPU 1 in thermal or hardware slowdown for 100%"), std::string::npos)
      << r.warnings[0];

  const json j = s.to_json();
  ASSERT_EQ(j["gpus"].size(), 2u);
  const auto& trace = j["gpus"][1]["trace"];
  const std::size_t n = trace["t_s"].size();
  EXPECT_GE(n, 10u);
  for (const char* key : {"sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "throttle_reasons"})
    EXPECT_EQ(trace[key].size(), n) << key;
  for (const char* key : {"freq_mhz_mean", "package_temp_c", "package_power_w"})
    EXPECT_EQ(j["cpu"]["trace"][key].size(), n) << key;
  EXPECT_EQ(j["gpus"][1]["counters_before"]["ecc_sbe_volatile"], 0);
  EXPECT_EQ(j["gpus"][1]["counters_after"]["ecc_sbe_volatile"], 2);
  EXPECT_EQ(j["cpu"]["counters_after"]["edac_ce"], 3);
  bool xid = false, ecc = false;
  for (const auto& e : j["events"]) {
    xid = xid || (e["kind"] == "xid" && e["gpu"] == 1 && e["value"] == 79);
    ecc = ecc || (e["kind"] == "ecc_sbe" && e["gpu"] == 1);
  }
  EXPECT_TRUE(xid) << j["events"].dump();
  EXPECT_TRUE(ecc) << j["events"].dump();
  EXPECT_DOUBLE_EQ(s.gpu_trace_max(0, "pcie_gen"), 5);
  EXPECT_EQ(s.events_since(0).size(), j["events"].size());
}

// A skipped or failed result keeps no metrics (the runner's rule), but the slowdown note stays.
TEST(TelemetrySession, FailedResultGetsNotesOnly) {
  json hot = healthy_gpu();
  hot["throttle_reasons"] = 0x8;
  fake_nvml_config cfg(json{{"gpus", json::array({hot})}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  telemetry::session::options o;
  o.interval_s = 0.02;
  o.sysfs_root = "/nonexistent-root";
  o.nvml = &lib;
  telemetry::session s(o);
  s.start();
  s.begin_window();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  result r;
  r.st = status::failed;
  s.end_window(r);
  EXPECT_TRUE(r.metrics.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("hw_slowdown"), std::string::npos);
}

// Paused, the sampler takes no tick samples (only those asked for at a window's edges).
TEST(TelemetrySession, PausedSamplerTakesNoTickSamples) {
  telemetry::session::options o;
  o.interval_s = 0.01;
  o.sysfs_root = "/nonexistent-root";
  telemetry::session s(o);
  s.start();
  s.set_paused(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a tick in flight may finish
  const std::size_t before = s.sample_count();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(s.sample_count(), before);
  s.set_paused(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_GT(s.sample_count(), before + 5);
  const json j = s.to_json();
  EXPECT_TRUE(j["gpus"].empty());
  EXPECT_EQ(j["nvml"]["available"], false);
}

}  // namespace
}  // namespace infrabench
