// The energy meter: NVML's total-energy counter and RAPL's package counters around a
// configuration's samples, and the joules and per-joule rates of a result (energy.h).
#include "infrabench/energy.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>

#include "infrabench/metric_decl.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/probe_detail.h"
#include "infrabench/simulation.h"
#include "infrabench/telemetry.h"

namespace infrabench::energy {

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

double seconds_between(const reading& a, const reading& b) {
  return std::chrono::duration<double>(b.t - a.t).count();
}

std::string short_number(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

metric energy_metric(std::string name, std::string unit, double value, bool higher_is_better,
                     std::string method) {
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.value = m.best = value;
  m.higher_is_better = higher_is_better;
  m.method = std::move(method);
  // Context, never gated: a second copy of the benchmark's speed divided by a power reading.
  m.role = metric_role::information;
  return m;
}

// GFLOP/J, GB/J and <item>s/J of `work` x `iterations` over `joules`, each only where the result
// declares that work.
void per_joule_metrics(const std::string& prefix, const work_counts& work, double iterations,
                       double joules, const std::string& over, result& r) {
  const double bytes = work.bytes_read + work.bytes_written;
  const std::string iters = short_number(iterations) + " iterations";
  if (work.flops > 0)
    r.metrics.push_back(energy_metric(prefix + "gflop_per_j", "GFLOP/J",
                                      work.flops * iterations / 1e9 / joules, true,
                                      "floating-point operations of the " + iters + " in " + over +
                                          " / its joules, GFLOP = 1e9"));
  if (bytes > 0)
    r.metrics.push_back(energy_metric(
        prefix + "gb_per_j", "GB/J", bytes * iterations / 1e9 / joules, true,
        "bytes read + written by the " + iters + " in " + over + " / its joules, GB = 1e9 B"));
  if (work.items > 0)
    r.metrics.push_back(
        energy_metric(prefix + work.item_name + "s_per_j", work.item_name + "s/J",
                      work.items * iterations / joules, true,
                      work.item_name + "s of the " + iters + " in " + over + " / its joules"));
}

// A CUDA device's NVML index, by the PCI bus id the CUDA probe reports (CUDA and NVML may order
// GPUs differently: CUDA_VISIBLE_DEVICES, PCI vs fastest-first). Asked once per process.
int nvml_index_by_bus_id(nvml::library* lib, int cuda_index) {
  static std::mutex mu;
  static std::optional<std::vector<std::string>> bus_ids;
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu);
    if (!bus_ids) {
      bus_ids.emplace();
      for (const auto& g : detail::describe_gpus()) {
        const auto it = g.find("pci_bus_id");
        bus_ids->push_back(it != g.end() && it->is_string() ? it->get<std::string>() : "");
      }
    }
    ids = *bus_ids;
  }
  if (!lib || cuda_index < 0 || static_cast<std::size_t>(cuda_index) >= ids.size() ||
      ids[static_cast<std::size_t>(cuda_index)].empty())
    return -1;
  return lib->index_of_bus_id(ids[static_cast<std::size_t>(cuda_index)]);
}

}  // namespace

double counter_delta(double before, double after, double max_range) {
  if (std::isnan(before) || std::isnan(after)) return nan_v;
  if (after >= before) return after - before;
  // RAPL's energy_uj counts up to max_energy_range_uj and starts again at 0; one wrap at most
  // (at a package's full power a wrap takes minutes, longer than any configuration's window).
  if (max_range > 0 && before <= max_range) return max_range - before + after;
  return nan_v;
}

measured judge_window(double delta_j, double seconds, double min_window_s,
                      const std::string& counter) {
  measured m;
  if (std::isnan(delta_j)) {
    m.why = counter + " went backwards with no known range to wrap at";
  } else if (seconds < min_window_s) {
    m.why = "timed window " + short_number(seconds) + " s is shorter than the " +
            short_number(min_window_s) + " s " + counter + " needs to resolve the energy";
  } else if (delta_j <= 0) {
    m.why = counter + " did not move over the " + short_number(seconds) + " s timed window";
  } else {
    m.ok = true;
    m.joules = delta_j;
  }
  return m;
}

meter::meter(options o) : m_opt(std::move(o)) {
  for (const auto& p : telemetry::find_rapl_packages(m_opt.sysfs_root, &m_rapl_reason)) {
    m_rapl_files.push_back(p.energy_file);
    m_rapl_range.push_back(p.max_range_uj);
  }
  if (m_rapl_files.empty()) m_rapl_reason = "RAPL " + m_rapl_reason;
  if (!m_opt.nvml_index_of) {
    nvml::library* lib = m_opt.nvml;
    m_opt.nvml_index_of = [lib](int cuda) { return nvml_index_by_bus_id(lib, cuda); };
  }
}

reading meter::read() const {
  reading r;
  // RAPL first, then NVML, and the time between: the two sets are microseconds apart.
  r.rapl_uj.reserve(m_rapl_files.size());
  for (const auto& f : m_rapl_files) r.rapl_uj.push_back(telemetry::read_sysfs_number(f));
  if (m_opt.nvml && m_opt.nvml->available()) {
    for (unsigned i = 0; i < m_opt.nvml->device_count(); ++i) {
      auto c = m_opt.nvml->total_energy(i);
      r.gpus.push_back({c.ok, c.mj, std::move(c.why)});
    }
  }
  r.t = std::chrono::steady_clock::now();
  return r;
}

// The CPU packages' joules over the window (every result: the host spends it whatever device
// did the work), or why none.
measured meter::cpu_joules(const window& w, double seconds) const {
  measured cpu;
  if (m_rapl_files.empty()) {
    cpu.why = m_rapl_reason;
  } else if (w.before.rapl_uj.size() != m_rapl_files.size() ||
             w.after.rapl_uj.size() != m_rapl_files.size()) {
    cpu.why = "RAPL not read around the timed samples";
  } else {
    double uj = 0;
    for (std::size_t i = 0; i < m_rapl_files.size(); ++i)
      uj += counter_delta(w.before.rapl_uj[i], w.after.rapl_uj[i], m_rapl_range[i]);
    cpu = judge_window(uj / 1e6, seconds, rapl_min_window_s, "the RAPL package counter");
  }
  return cpu;
}

// The joules of CUDA GPU `cuda_gpu` (the one the result ran on) over the window, or why none.
measured meter::gpu_joules(const window& w, double seconds, int cuda_gpu) const {
  measured gpu;
  const int index = m_opt.nvml_index_of ? m_opt.nvml_index_of(cuda_gpu) : -1;
  if (m_opt.simulated) {
    // The simulated node's NVML is the fake one: its energy would be a number made up, not a
    // simulated measurement, so none is produced (docs/simulation.md).
    gpu.why = "simulated GPU node: no energy is measured";
  } else if (!m_opt.nvml || !m_opt.nvml->available()) {
    gpu.why = "no NVML: " + (m_opt.nvml ? m_opt.nvml->reason() : std::string("not loaded"));
  } else if (index < 0 || static_cast<std::size_t>(index) >= w.before.gpus.size() ||
             static_cast<std::size_t>(index) >= w.after.gpus.size()) {
    gpu.why = "NVML index of CUDA GPU " + std::to_string(cuda_gpu) + " unknown (no PCI bus id)";
  } else {
    const auto& a = w.before.gpus[static_cast<std::size_t>(index)];
    const auto& b = w.after.gpus[static_cast<std::size_t>(index)];
    if (!a.ok || !b.ok) {
      gpu.why = !a.ok ? a.why : b.why;
    } else {
      gpu =
          judge_window(counter_delta(static_cast<double>(a.mj), static_cast<double>(b.mj), 0) / 1e3,
                       seconds, gpu_min_window_s, "NVML's total-energy counter");
    }
  }
  return gpu;
}

void meter::account(const window& w, result& r) const {
  // Energy per unit of work is only for a run that passed: a failed one keeps what it measured
  // (the runner), not rates derived from a window it may not have finished.
  if (r.st != status::passed) return;
  const double seconds = seconds_between(w.before, w.after);
  const std::string over = short_number(seconds) + " s of timed samples";

  const measured cpu = cpu_joules(w, seconds);
  const std::string cpu_method =
      "RAPL package energy (energy_uj, wrap-around at "
      "max_energy_range_uj) of " +
      std::to_string(m_rapl_files.size()) + " package(s) over the timed window: " + over;
  if (cpu.ok)
    r.metrics.push_back(energy_metric("cpu_package_energy_j", "J", cpu.joules, false, cpu_method));
  else
    r.withheld["cpu_package_energy_j"] = cpu.why;

  // The GPU the result ran on (one per result: result::gpu), and per joule of the device the
  // work ran on.
  if (r.gpu >= 0) {
    const measured gpu = gpu_joules(w, seconds, r.gpu);
    if (gpu.ok) {
      r.metrics.push_back(
          energy_metric("gpu_energy_j", "J", gpu.joules, false,
                        "NVML total energy (nvmlDeviceGetTotalEnergyConsumption) of GPU " +
                            std::to_string(r.gpu) + " over the timed window: " + over));
      per_joule_metrics("gpu_", r.work, w.iterations, gpu.joules, over, r);
    } else {
      r.withheld["gpu_energy_j"] = gpu.why;
    }
  } else if (cpu.ok) {
    per_joule_metrics("cpu_package_", r.work, w.iterations, cpu.joules, over, r);
  }
}

const meter* meter_for_run(const option_values* options) {
  if (!options) return nullptr;
  const auto it = options->find("telemetry");
  if (it != options->end() && it->second == "off") return nullptr;
  static std::once_flag once;
  static std::unique_ptr<meter> the_meter;
  std::call_once(once, [] {
    meter::options o;
    o.nvml = &nvml::library::instance();
    o.sysfs_root = telemetry::sysfs_root();
    o.simulated = simulation::active();
    the_meter = std::make_unique<meter>(std::move(o));
  });
  return the_meter.get();
}

}  // namespace infrabench::energy
