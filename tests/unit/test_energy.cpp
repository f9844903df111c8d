// The energy meter (energy.h): NVML's total-energy counter from the fake NVML, RAPL package
// counters from a fake powercap tree, the joules and per-joule metrics of a result, the reasons
// where there are none, a wrapped counter, a window too short; and compare --power's basis.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_paths.h"
#include "fake_nvml_config.h"
#include "infrabench/energy.h"
#include "infrabench/metric_decl.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/reports/compare.h"
#include "test_reports_util.h"

namespace infrabench {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// A powercap tree under a temporary root: intel-rapl:N with energy_uj and max_energy_range_uj.
class fake_powercap {
 public:
  explicit fake_powercap(int packages, double max_range_uj = 262143328850.0) {
    m_root = fs::temp_directory_path() /
             ("fake-powercap-" + std::to_string(::getpid()) + "-" + std::to_string(++s_count));
    for (int p = 0; p < packages; ++p) {
      const fs::path dir = m_root / "sys/class/powercap" / ("intel-rapl:" + std::to_string(p));
      fs::create_directories(dir);
      std::ofstream(dir / "max_energy_range_uj") << static_cast<long long>(max_range_uj) << "\n";
      set(p, 0);
      // A subzone (core, dram) is not a package: never counted.
      fs::create_directories(m_root / "sys/class/powercap" /
                             ("intel-rapl:" + std::to_string(p) + ":0"));
    }
    fs::create_directories(m_root / "sys/class");
  }
  ~fake_powercap() { fs::remove_all(m_root); }
  void set(int package, double uj) {
    std::ofstream(m_root / "sys/class/powercap" / ("intel-rapl:" + std::to_string(package)) /
                  "energy_uj")
        << static_cast<long long>(uj) << "\n";
  }
  [[nodiscard]] std::string root() const { return m_root.string(); }

 private:
  static inline int s_count = 0;
  fs::path m_root;
};

using test_support::fake_nvml_config;

// A passed result whose iterations each did 1 GFLOP, 2 GB and 4 tokens.
result gemm_like(int gpu) {
  result r;
  r.benchmark = "test/energy";
  r.gpu = gpu;
  r.work.flops = 1e9;
  r.work.bytes_read = 2e9;
  r.work.items = 4;
  r.work.item_name = "token";
  return r;
}

const metric* find(const result& r, const std::string& name) {
  for (const auto& m : r.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// A window of `seconds` between two readings taken now (the meter's clock is moved, not slept).
energy::window window_of(const energy::meter& m, double seconds, double iterations,
                         const std::function<void()>& between) {
  energy::window w;
  w.before = m.read();
  between();
  w.after = m.read();
  w.after.t = w.before.t + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  w.iterations = iterations;
  return w;
}

TEST(Energy, CounterDeltaWrapsAtTheRange) {
  EXPECT_DOUBLE_EQ(energy::counter_delta(100, 350, 1000), 250);
  // Wrapped: from 900 up to the range (100 more), then 0 to 50.
  EXPECT_DOUBLE_EQ(energy::counter_delta(900, 50, 1000), 150);
  EXPECT_TRUE(std::isnan(energy::counter_delta(900, 50, 0)));  // no range: not a number
  EXPECT_TRUE(std::isnan(energy::counter_delta(std::nan(""), 50, 1000)));
}

TEST(Energy, ShortOrStillWindowsGiveNoNumber) {
  const auto short_w = energy::judge_window(10, 0.2, 1.0, "NVML's total-energy counter");
  EXPECT_FALSE(short_w.ok);
  EXPECT_NE(short_w.why.find("shorter than the 1 s"), std::string::npos) << short_w.why;
  const auto still = energy::judge_window(0, 2.0, 1.0, "NVML's total-energy counter");
  EXPECT_FALSE(still.ok);
  EXPECT_NE(still.why.find("did not move"), std::string::npos) << still.why;
  const auto good = energy::judge_window(10, 2.0, 1.0, "x");
  EXPECT_TRUE(good.ok);
  EXPECT_DOUBLE_EQ(good.joules, 10);
}

TEST(Energy, RaplPackagesGiveJoulesAndPerJouleOfACpuResult) {
  fake_powercap tree(2);
  energy::meter m({nullptr, tree.root(), {}, false});
  EXPECT_TRUE(m.rapl_reason().empty()) << m.rapl_reason();
  const auto w = window_of(m, 0.5, 10, [&] {
    tree.set(0, 3e6);  // 3 J
    tree.set(1, 2e6);  // 2 J
  });
  result r = gemm_like(-1);
  m.account(w, r);
  const metric* j = find(r, "cpu_package_energy_j");
  ASSERT_NE(j, nullptr);
  EXPECT_DOUBLE_EQ(j->value, 5);
  EXPECT_EQ(j->unit, "J");
  EXPECT_EQ(j->role, metric_role::information);
  EXPECT_NE(j->method.find("RAPL"), std::string::npos);
  // 10 iterations of 1 GFLOP, 2 GB and 4 tokens over 5 J.
  ASSERT_NE(find(r, "cpu_package_gflop_per_j"), nullptr);
  EXPECT_DOUBLE_EQ(find(r, "cpu_package_gflop_per_j")->value, 2);
  EXPECT_DOUBLE_EQ(find(r, "cpu_package_gb_per_j")->value, 4);
  ASSERT_NE(find(r, "cpu_package_tokens_per_j"), nullptr);
  EXPECT_DOUBLE_EQ(find(r, "cpu_package_tokens_per_j")->value, 8);
  EXPECT_EQ(find(r, "cpu_package_tokens_per_j")->unit, "tokens/J");
  EXPECT_EQ(find(r, "gpu_energy_j"), nullptr);  // no GPU: nothing said about one
  EXPECT_TRUE(r.withheld.empty());
  // Each is one the harness declares, of the kind its unit says.
  for (const auto& x : r.metrics) {
    const metric_decl* d = find_declaration(telemetry_metric_decls(), x.name);
    ASSERT_NE(d, nullptr) << x.name;
    EXPECT_EQ(kind_for_unit(x.unit, x.role),
              x.unit == "J" ? metric_kind::energy : metric_kind::energy_efficiency);
  }
}

TEST(Energy, OnlyDeclaredWorkGetsAPerJouleRate) {
  fake_powercap tree(1);
  energy::meter m({nullptr, tree.root(), {}, false});
  const auto w = window_of(m, 1.0, 1, [&] { tree.set(0, 1e6); });
  result r;
  r.work.bytes_written = 1e9;
  m.account(w, r);
  EXPECT_NE(find(r, "cpu_package_gb_per_j"), nullptr);
  EXPECT_EQ(find(r, "cpu_package_gflop_per_j"), nullptr);
  EXPECT_EQ(find(r, "cpu_package_items_per_j"), nullptr);
}

TEST(Energy, WrappedRaplCounterIsCountedAcrossTheWrap) {
  fake_powercap tree(1, 1e7);
  tree.set(0, 9.5e6);
  energy::meter m({nullptr, tree.root(), {}, false});
  const auto w = window_of(m, 1.0, 1, [&] { tree.set(0, 0.5e6); });
  result r = gemm_like(-1);
  m.account(w, r);
  ASSERT_NE(find(r, "cpu_package_energy_j"), nullptr) << r.withheld["cpu_package_energy_j"];
  EXPECT_DOUBLE_EQ(find(r, "cpu_package_energy_j")->value, 1.0);  // 0.5 J to the top, 0.5 after
}

TEST(Energy, AbsentCountersAreWithheldWithTheReason) {
  fake_powercap tree(0);  // a VM: no powercap domains
  nvml::library none("/nonexistent/libnvidia-ml.so.1");
  energy::meter m({&none, tree.root(), [](int) { return 0; }, false});
  EXPECT_NE(m.rapl_reason().find("RAPL not exposed"), std::string::npos) << m.rapl_reason();
  const auto w = window_of(m, 2.0, 5, [] {});
  result r = gemm_like(0);
  m.account(w, r);
  EXPECT_TRUE(r.metrics.empty());  // never a zero
  EXPECT_NE(r.withheld["cpu_package_energy_j"].find("RAPL not exposed"), std::string::npos);
  EXPECT_EQ(r.withheld["gpu_energy_j"].rfind("no NVML", 0), 0u) << r.withheld["gpu_energy_j"];
  // A result that did not pass gets nothing, not even reasons.
  result failed = gemm_like(0);
  failed.st = status::failed;
  m.account(w, failed);
  EXPECT_TRUE(failed.withheld.empty());
}

TEST(Energy, NvmlTotalEnergyGivesTheGpusJoulesAndPerJoule) {
  json gpu = {{"name", "Fake H100"}, {"total_energy_mj", 5000}, {"energy_power_w", 0}};
  json old = {{"name", "Fake P100"}};  // before Volta: no energy counter
  fake_nvml_config cfg(json{{"gpus", {gpu, old}}});
  nvml::library lib(infrabench::build_paths::fake_nvml);
  ASSERT_TRUE(lib.available()) << lib.reason();
  const auto c = lib.total_energy(0);
  ASSERT_TRUE(c.ok) << c.why;
  EXPECT_EQ(c.mj, 5000u);
  EXPECT_EQ(lib.total_energy(1).why,
            "NVML total energy not supported on this GPU (nvmlDeviceGetTotalEnergyConsumption)");

  fake_powercap tree(0);
  // 400 W for 2 s: the fake counter grows with its clock, so the window's energy is read as the
  // counter moved while the test slept; the window's length is then set to 2 s.
  json busy = gpu;
  busy["energy_power_w"] = 400;
  fake_nvml_config cfg2(json{{"gpus", {busy, old}}});
  nvml::library lib2(infrabench::build_paths::fake_nvml);
  // CUDA 0 is NVML 0, CUDA 1 is NVML 1.
  energy::meter m2({&lib2, tree.root(), [](int cuda) { return cuda; }, false});
  const auto w =
      window_of(m2, 2.0, 100, [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
  result r = gemm_like(0);
  m2.account(w, r);
  const metric* j = find(r, "gpu_energy_j");
  ASSERT_NE(j, nullptr) << r.withheld["gpu_energy_j"];
  const double joules = static_cast<double>(w.after.gpus[0].mj - w.before.gpus[0].mj) / 1e3;
  EXPECT_GT(joules, 0);
  EXPECT_DOUBLE_EQ(j->value, joules);
  EXPECT_NE(j->method.find("nvmlDeviceGetTotalEnergyConsumption"), std::string::npos);
  ASSERT_NE(find(r, "gpu_tokens_per_j"), nullptr);
  EXPECT_DOUBLE_EQ(find(r, "gpu_tokens_per_j")->value, 400 / joules);
  EXPECT_DOUBLE_EQ(find(r, "gpu_gflop_per_j")->value, 100 / joules);
  // The GPU did the work: no per-joule rate of the CPU packages; their reason is kept.
  EXPECT_EQ(find(r, "cpu_package_gflop_per_j"), nullptr);
  EXPECT_FALSE(r.withheld["cpu_package_energy_j"].empty());

  // The GPU without the counter says so.
  result old_r = gemm_like(1);
  m2.account(w, old_r);
  EXPECT_EQ(find(old_r, "gpu_energy_j"), nullptr);
  EXPECT_NE(old_r.withheld["gpu_energy_j"].find("not supported on this GPU"), std::string::npos);

  // A window shorter than the counter resolves: no number, the reason.
  const auto short_w = window_of(m2, 0.2, 10, [] {});
  result short_r = gemm_like(0);
  m2.account(short_w, short_r);
  EXPECT_EQ(find(short_r, "gpu_energy_j"), nullptr);
  EXPECT_NE(short_r.withheld["gpu_energy_j"].find("shorter than the 1 s"), std::string::npos)
      << short_r.withheld["gpu_energy_j"];

  // A counter that has not updated over the window (it moves every energy_update_s).
  json stepped = gpu;
  stepped["energy_power_w"] = 400;
  stepped["energy_update_s"] = 1000;
  fake_nvml_config cfg3(json{{"gpus", {stepped}}});
  nvml::library lib3(infrabench::build_paths::fake_nvml);
  energy::meter m3({&lib3, tree.root(), [](int cuda) { return cuda; }, false});
  result still = gemm_like(0);
  m3.account(window_of(m3, 1.5, 10, [] {}), still);
  EXPECT_NE(still.withheld["gpu_energy_j"].find("did not move"), std::string::npos)
      << still.withheld["gpu_energy_j"];

  // The simulated node's fake NVML gives no energy, and says why.
  energy::meter sim({&lib2, tree.root(), [](int cuda) { return cuda; }, true});
  result sim_r = gemm_like(0);
  sim.account(w, sim_r);
  EXPECT_EQ(find(sim_r, "gpu_energy_j"), nullptr);
  EXPECT_NE(sim_r.withheld["gpu_energy_j"].find("simulated"), std::string::npos);
}

// compare --power: measured work per joule where both reports have it, typed watts otherwise.
reports::report_view energy_report(const std::string& label, double gflops,
                                   std::optional<double> gflop_per_j) {
  using ib_test::m;
  std::vector<m> ms = {{"gflops", "GFLOP/s", gflops}};
  if (gflop_per_j)
    ms.push_back({"gpu_gflop_per_j", "GFLOP/J", *gflop_per_j, true, {}, "information"});
  auto j = ib_test::report(
      json::array({ib_test::result("gemm/x", {{"n", 1}}, ms),
                   ib_test::result("gemm/y", {{"n", 1}}, {{"gflops", "GFLOP/s", gflops}})}));
  for (const char* b : {"gemm/x", "gemm/y"}) {
    j["run"]["benchmark_metadata"][b] = {
        {"requires", json::array()},
        {"axes", json::object()},
        {"metrics", json::array({metric_decl_json(
                        {"gflops", "GFLOP/s", better::higher, metric_role::performance, true})})}};
  }
  auto r = reports::parse_report(j.dump(), label + ".json");
  r.label = label;
  return r;
}

TEST(Energy, ComparePowerUsesMeasuredEnergyAndSaysWhich) {
  reports::compare_options opt;
  opt.power = reports::parse_label_values("A=700,B=350", "--power");
  // B: the same speed at half the typed watts; measured, B does 1.5x the GFLOP per joule.
  const auto c =
      reports::compare_reports({energy_report("A", 100, 10.0), energy_report("B", 100, 15.0)}, opt);
  const reports::metric_row* x = nullptr;
  const reports::metric_row* y = nullptr;
  for (const auto& r : c.rows) {
    if (r.metric == "gflops" && r.benchmark == "gemm/x") x = &r;
    if (r.metric == "gflops" && r.benchmark == "gemm/y") y = &r;
  }
  ASSERT_TRUE(x && y);
  EXPECT_EQ(x->per_joule_metric, "gpu_gflop_per_j");
  EXPECT_EQ(x->energy_basis[1], "measured");
  EXPECT_NEAR(x->perf_per_energy[1], 1.5, 1e-9);
  EXPECT_EQ(y->energy_basis[1], "typed watts");  // gemm/y carries no energy
  EXPECT_NEAR(y->perf_per_energy[1], 2.0, 1e-9);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].energy_basis[1], "measured 1, typed watts 1");
  EXPECT_NEAR(c.groups[0].perf_per_watt[1], std::sqrt(1.5 * 2.0), 1e-9);
  std::ostringstream t;
  reports::print_comparison_table(t, c);
  EXPECT_NE(t.str().find("perf/energy"), std::string::npos) << t.str();
  EXPECT_NE(t.str().find("(measured 1, typed watts 1)"), std::string::npos) << t.str();
  const json js = reports::comparison_json(c);
  EXPECT_EQ(js["groups"][0]["reports"][1]["energy_basis"], "measured 1, typed watts 1");

  // Without --power, measured energy alone still gives the column, and only where it is.
  const auto measured_only =
      reports::compare_reports({energy_report("A", 100, 10.0), energy_report("B", 100, 15.0)}, {});
  EXPECT_EQ(measured_only.groups[0].energy_basis[1], "measured");
  EXPECT_NEAR(measured_only.groups[0].perf_per_watt[1], 1.5, 1e-9);

  // One side without energy: typed watts for that row, said so.
  const auto one_side = reports::compare_reports(
      {energy_report("A", 100, 10.0), energy_report("B", 100, std::nullopt)}, opt);
  EXPECT_EQ(one_side.groups[0].energy_basis[1], "typed watts");
  EXPECT_NEAR(one_side.groups[0].perf_per_watt[1], 2.0, 1e-9);
}

}  // namespace
}  // namespace infrabench
