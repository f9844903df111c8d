#include "judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace infrabench::health {
namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

bool get(const counter_set& c, const std::string& key, double* out) {
  const auto it = c.find(key);
  if (it == c.end()) return false;
  *out = it->second;
  return true;
}

// now - before for a counter both have, else -1 (not judged: no counters from the start of the
// run, telemetry off).
double growth(const counter_set& now, const counter_set* before, const std::string& key) {
  double a = 0, b = 0;
  if (!before || !get(*before, key, &a) || !get(now, key, &b)) return -1;
  return b - a;
}

double grew_by(const gpu_view& g, const std::string& key) {
  return growth(g.now, g.before ? &*g.before : nullptr, key);
}

enum class growth_is { failure, warning };

// Judges GPU counter `key` by its growth during the run: when it grew, `worst` keeps the largest
// growth seen and the verdict gets "<GPU>: <message(growth)>" as a failure (naming the GPU) or a
// warning. Returns the growth (-1: not judged).
double judge_growth(const gpu_view& g, const std::string& key, double& worst, verdict& v,
                    growth_is kind, const std::function<std::string(double)>& message) {
  const double d = grew_by(g, key);
  if (d > 0) {
    worst = std::max(worst, d);
    const std::string line = g.label() + ": " + message(d);
    if (kind == growth_is::failure)
      v.fail_gpu(g.index, line);
    else
      v.warnings.push_back(line);
  }
  return d;
}

metric_value count_metric(std::string name, double v, std::string method,
                          std::vector<int> gpus = {}) {
  return {std::move(name), "count", v, false, std::move(method), std::move(gpus)};
}

}  // namespace

std::string verdict::failure_text() const {
  std::string s;
  for (const auto& f : failures) s += (s.empty() ? "" : "; ") + f;
  return s;
}

void verdict::fail_gpu(unsigned gpu, std::string line) {
  failures.push_back(std::move(line));
  const int g = static_cast<int>(gpu);
  const auto at = std::lower_bound(failed_gpus.begin(), failed_gpus.end(), g);
  if (at == failed_gpus.end() || *at != g) failed_gpus.insert(at, g);
}

std::vector<int> gpus_at(const std::vector<gpu_reading>& readings, double extreme,
                         std::optional<double> none_at) {
  std::vector<int> out;
  if (none_at && extreme == *none_at) return out;
  for (const auto& r : readings) {
    if (r.value == extreme) out.push_back(static_cast<int>(r.gpu));
  }
  return out;
}

std::string gpu_view::label() const {
  return "GPU " + std::to_string(index) + (name.empty() ? "" : " (" + name + ")");
}

verdict judge_pcie(const std::vector<gpu_view>& gpus) {
  verdict v;
  double gen_min = 1e9, width_min = 1e9, replays = 0;
  std::vector<gpu_reading> gens, widths, replay_growth;
  bool any = false;
  for (const auto& g : gpus) {
    double gen = 0, width = 0, max_gen = 0, max_width = 0;
    if (!get(g.now, "pcie_gen_current", &gen) || !get(g.now, "pcie_gen_max", &max_gen) ||
        !get(g.now, "pcie_width_current", &width) || !get(g.now, "pcie_width_max", &max_width)) {
      v.warnings.push_back(g.label() + ": NVML does not report its PCIe link");
      continue;
    }
    any = true;
    // An idle GPU lowers its link generation to save power: judge the best seen under load.
    gen = std::max({gen, g.gen_seen, g.gen_loaded});
    width = std::max({width, g.width_seen, g.width_loaded});
    gen_min = std::min(gen_min, gen);
    width_min = std::min(width_min, width);
    gens.push_back({g.index, gen});
    widths.push_back({g.index, width});
    if (gen < max_gen || width < max_width) {
      const std::string below = g.label() + ": PCIe link Gen" + num(gen) + " x" + num(width) +
                                " below its maximum Gen" + num(max_gen) + " x" + num(max_width);
      if (g.gen_loaded >= 0) {
        v.fail_gpu(g.index, below +
                                " while this check copied to it (the best seen under that load)"
                                ": reseat the card, check the slot/riser and the BIOS PCIe speed "
                                "setting");
      } else {
        // Without a load of our own the GPU may simply have been idle: a healthy GPU must not
        // fail, so this is a warning that says how to judge it.
        v.warnings.push_back(
            below + (g.gen_seen < 0 ? " (read once, idle" : " (the best the run's telemetry saw") +
            ", with no copy load of this check's own on it: GPUs lower the link when idle, so it "
            "is not judged; a CUDA build loads the GPU while it reads the link)");
      }
    }
    const double grew =
        judge_growth(g, "pcie_replay", replays, v, growth_is::warning, [](double d) {
          return num(d) +
                 " PCIe replays during the run (link errors retried): watch the counter; a "
                 "growing count points at the slot or riser";
        });
    replay_growth.push_back({g.index, grew});
  }
  if (!any) {
    v.skip = "NVML reports no PCIe link for any GPU";
    return v;
  }
  v.metrics.push_back({"pcie_gen_min", "generation", gen_min, true,
                       "lowest PCIe generation over the GPUs (the best each reached under this "
                       "check's copy load or during the run)",
                       gpus_at(gens, gen_min)});
  v.metrics.push_back({"pcie_width_min", "lanes", width_min, true,
                       "narrowest PCIe link width over the GPUs", gpus_at(widths, width_min)});
  v.metrics.push_back(count_metric("pcie_replays_max", replays,
                                   "most PCIe replays one GPU counted during the run",
                                   gpus_at(replay_growth, replays, 0.0)));
  return v;
}

std::string read_links_under_load(std::vector<gpu_view>& gpus, const nvml::library& lib,
                                  const copy_load& load) {
  std::vector<double> gen(gpus.size(), -1), width(gpus.size(), -1);
  const copy_load_result r = load([&] {
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      const nvml::gpu_sample s = lib.sample(gpus[k].index);
      if (!std::isnan(s.pcie_gen)) gen[k] = std::max(gen[k], s.pcie_gen);
      if (!std::isnan(s.pcie_width)) width[k] = std::max(width[k], s.pcie_width);
    }
  });
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    if (std::find(r.gpus.begin(), r.gpus.end(), gpus[k].index) == r.gpus.end()) continue;
    gpus[k].gen_loaded = gen[k];
    gpus[k].width_loaded = width[k];
  }
  if (r.gpus.empty()) return r.why_not.empty() ? "no GPU was loaded" : r.why_not;
  return {};
}

verdict judge_nvlink(const std::vector<gpu_view>& gpus) {
  verdict v;
  double active_min = 1e9, down_total = 0, errors_max = 0;
  std::vector<gpu_reading> active, errors;
  std::vector<int> with_down;
  for (const auto& g : gpus) {
    active_min = std::min(active_min, static_cast<double>(g.links.active));
    active.push_back({g.index, static_cast<double>(g.links.active)});
    down_total += static_cast<double>(g.links.down.size());
    if (!g.links.down.empty()) {
      with_down.push_back(static_cast<int>(g.index));
      std::string which;
      for (int l : g.links.down) which += (which.empty() ? "" : ",") + std::to_string(l);
      v.fail_gpu(g.index,
                 g.label() + ": NVLink " + which + " down (" + std::to_string(g.links.active) +
                     " of " + std::to_string(g.links.present) +
                     " up): check the fabric manager and the NVLink connections, reset the "
                     "GPU; replace the baseboard/GPU if it stays down");
    }
    double worst = 0;  // this GPU's largest growth
    (void)judge_growth(g, "nvlink_recovery", worst, v, growth_is::failure, [](double d) {
      return num(d) +
             " NVLink recoveries during the run (a link retrained): check the NVLink connections";
    });
    for (const std::string k : {"nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay"}) {
      (void)judge_growth(g, k, worst, v, growth_is::warning,
                         [&k](double d) { return k + " grew by " + num(d) + " during the run"; });
    }
    errors_max = std::max(errors_max, worst);
    errors.push_back({g.index, worst});
  }
  if (gpus.empty()) {
    v.skip = "no GPU";
    return v;
  }
  if (active_min == 0 && down_total == 0)
    v.warnings.push_back("no NVLink on these GPUs (PCIe cards, or NVML lists none)");
  v.metrics.push_back({"nvlinks_active_min", "links", active_min, true,
                       "fewest NVLinks up on one GPU (a baseline states how many a node has)",
                       gpus_at(active, active_min)});
  v.metrics.push_back(count_metric("nvlinks_down", down_total,
                                   "NVLinks present but down, over every GPU", with_down));
  v.metrics.push_back(count_metric("nvlink_errors_max", errors_max,
                                   "largest growth of an NVLink error counter (CRC, replay, "
                                   "recovery) on one GPU during the run",
                                   gpus_at(errors, errors_max, 0.0)));
  return v;
}

verdict judge_ecc(const std::vector<gpu_view>& gpus) {
  verdict v;
  double dbe_max = 0, sbe_new_max = 0;
  std::vector<gpu_reading> dbes, sbes;
  bool any = false, new_judged = false;
  for (const auto& g : gpus) {
    double enabled = 0;
    if (!get(g.now, "ecc_enabled", &enabled)) continue;
    any = true;
    if (enabled == 0) {
      v.fail_gpu(g.index, g.label() + ": ECC is disabled: enable it (nvidia-smi -i " +
                              std::to_string(g.index) + " -e 1) and reset the GPU");
      continue;
    }
    double dbe = 0, agg = 0;
    if (get(g.now, "ecc_dbe_volatile", &dbe) && dbe > 0) {
      v.fail_gpu(g.index, g.label() + ": " + num(dbe) +
                              " double-bit ECC errors since the driver loaded: reset the GPU; "
                              "replace it if they return");
    }
    dbe_max = std::max(dbe_max, dbe);
    dbes.push_back({g.index, dbe});
    if (get(g.now, "ecc_dbe_aggregate", &agg) && agg > 0 && dbe == 0) {
      v.warnings.push_back(g.label() + ": " + num(agg) +
                           " double-bit ECC errors in its lifetime (aggregate)");
    }
    const double sbe_new =
        judge_growth(g, "ecc_sbe_volatile", sbe_new_max, v, growth_is::failure, [](double d) {
          return num(d) +
                 " new single-bit ECC errors during the run: the memory is degrading; check the "
                 "row remapping and plan to replace the GPU";
        });
    if (sbe_new >= 0) new_judged = true;
    sbes.push_back({g.index, sbe_new});
  }
  if (!any) {
    v.skip = "ECC is not supported on these GPUs";
    return v;
  }
  if (!new_judged)
    v.warnings.push_back(
        "new single-bit errors not judged: no counters from the start of the run "
        "(telemetry off)");
  v.metrics.push_back(count_metric("ecc_dbe_volatile_max", dbe_max,
                                   "most volatile double-bit ECC errors on one GPU",
                                   gpus_at(dbes, dbe_max, 0.0)));
  v.metrics.push_back(count_metric("ecc_sbe_new_max", sbe_new_max,
                                   "most single-bit ECC errors one GPU gained during the run",
                                   gpus_at(sbes, sbe_new_max, 0.0)));
  return v;
}

verdict judge_remap(const std::vector<gpu_view>& gpus) {
  verdict v;
  double pending_max = 0, failure_max = 0, unc_max = 0;
  std::vector<gpu_reading> pendings, failures, uncs;
  bool any = false;
  for (const auto& g : gpus) {
    double pending = 0, failure = 0, unc = 0, retired_pending = 0;
    if (get(g.now, "remap_pending", &pending)) {
      any = true;
      get(g.now, "remap_failure", &failure);
      get(g.now, "remapped_rows_uncorrectable", &unc);
      if (failure > 0)
        v.fail_gpu(g.index, g.label() +
                                ": a row remap failed (no spare rows left): replace the "
                                "GPU");
      if (pending > 0)
        v.fail_gpu(g.index, g.label() +
                                ": a row remap is pending: reset the GPU (nvidia-smi -r -i " +
                                std::to_string(g.index) + ") or reboot to apply it");
      if (unc > 0)
        v.warnings.push_back(g.label() + ": " + num(unc) +
                             " rows remapped for uncorrectable errors");
    } else if (get(g.now, "retired_pages_pending", &retired_pending)) {
      any = true;  // before Ampere: page retirement instead of row remapping
      pending = retired_pending;
      if (pending > 0)
        v.fail_gpu(g.index, g.label() +
                                ": retired pages are pending: reset the GPU or reboot to "
                                "retire them");
    }
    pending_max = std::max(pending_max, pending);
    failure_max = std::max(failure_max, failure);
    unc_max = std::max(unc_max, unc);
    pendings.push_back({g.index, pending});
    failures.push_back({g.index, failure});
    uncs.push_back({g.index, unc});
  }
  if (!any) {
    v.skip = "neither row remapping nor page retirement is reported for these GPUs";
    return v;
  }
  v.metrics.push_back(count_metric("remap_pending_max", pending_max,
                                   "1 when a GPU has a row remap (or page retirement) pending",
                                   gpus_at(pendings, pending_max, 0.0)));
  v.metrics.push_back(count_metric("remap_failure_max", failure_max,
                                   "1 when a GPU's row remapping failed",
                                   gpus_at(failures, failure_max, 0.0)));
  v.metrics.push_back(count_metric("remapped_rows_uncorrectable_max", unc_max,
                                   "most rows one GPU remapped for uncorrectable errors",
                                   gpus_at(uncs, unc_max, 0.0)));
  return v;
}

verdict judge_throttle(const std::vector<gpu_view>& gpus) {
  verdict v;
  double worst = 0;
  std::vector<gpu_reading> fractions;
  bool any = false;
  for (const auto& g : gpus) {
    unsigned long long serious_now = 0;
    if (g.reasons_now >= 0) {
      any = true;
      for (const auto& b : nvml::reason_bits()) {
        if (b.serious && (static_cast<unsigned long long>(g.reasons_now) & b.bit))
          serious_now |= b.bit;
      }
    }
    if (g.serious_fraction >= 0) any = true;
    const double frac = std::max(g.serious_fraction, serious_now ? 1.0 : 0.0);
    worst = std::max(worst, frac);
    fractions.push_back({g.index, frac});
    if (serious_now) {
      v.fail_gpu(g.index,
                 g.label() + ": in " + nvml::reason_names(serious_now) +
                     " now: check cooling (fans, airflow, inlet temperature) and the power "
                     "supply / power-brake signal");
    } else if (g.serious_fraction > 0) {
      v.fail_gpu(
          g.index,
          g.label() + ": " + nvml::reason_names(g.serious_bits) + " during " +
              num(100 * g.serious_fraction) +
              "% of the run so far: check cooling (fans, airflow, inlet temperature) and power");
    }
  }
  if (!any) {
    v.skip = "NVML reports no clock event reasons for these GPUs";
    return v;
  }
  v.metrics.push_back({"thermal_or_hw_slowdown_fraction_max", "ratio", worst, false,
                       "largest share of the run so far one GPU spent in thermal or hardware "
                       "slowdown (NVML clock event reasons; 1 when it is in one now)",
                       gpus_at(fractions, worst, 0.0)});
  return v;
}

verdict judge_xid(const std::vector<telemetry::event>& events, bool watching,
                  const std::string& why_not) {
  verdict v;
  if (!watching) {
    v.skip = "XID events not watched: " + why_not;
    return v;
  }
  double n = 0;
  for (const auto& e : events) {
    if (e.kind != "xid") continue;
    ++n;
    const std::string line = "GPU " + std::to_string(e.gpu) + " at " + num(e.t_s) + " s: " + e.text;
    if (e.gpu >= 0)
      v.fail_gpu(static_cast<unsigned>(e.gpu), line);
    else
      v.failures.push_back(line);
  }
  v.metrics.push_back(count_metric(
      "xid_events", n, "XID events NVML reported during the run so far", v.failed_gpus));
  return v;
}

verdict judge_edac(const counter_set& now, const counter_set* before, const std::string& why_not) {
  verdict v;
  double ce = 0, ue = 0;
  if (!get(now, "edac_ce", &ce) || !get(now, "edac_ue", &ue)) {
    v.skip = "EDAC " + why_not;
    return v;
  }
  if (ue > 0)
    v.failures.push_back(num(ue) +
                         " uncorrected memory errors (EDAC) since boot: find the DIMM "
                         "(edac-util -v or rasdaemon) and replace it");
  const double ce_new = growth(now, before, "edac_ce");
  if (ce_new > 0)
    v.failures.push_back(num(ce_new) +
                         " corrected memory errors (EDAC) during the run: a DIMM is "
                         "degrading: find it (edac-util -v) and replace it");
  else if (ce > 0)
    v.warnings.push_back(num(ce) + " corrected memory errors (EDAC) since boot");
  if (ce_new < 0)
    v.warnings.push_back(
        "new corrected errors not judged: no counters from the start of the run "
        "(telemetry off)");
  v.metrics.push_back(count_metric("edac_ue", ue, "uncorrected memory errors since boot (EDAC)"));
  v.metrics.push_back(count_metric("edac_ce_new", std::max(0.0, ce_new),
                                   "corrected memory errors during the run (EDAC)"));
  return v;
}

verdict judge_mce(const counter_set& now, const counter_set* before) {
  verdict v;
  double n = 0;
  if (!get(now, "mce_events", &n)) {
    v.skip = "the kernel lists no machine-check exception count (no MCE line in /proc/interrupts)";
    return v;
  }
  const double fresh = growth(now, before, "mce_events");
  if (fresh > 0)
    v.failures.push_back(num(fresh) +
                         " machine-check exceptions during the run: read the kernel "
                         "log (mcelog/rasdaemon) for the failing CPU or DIMM");
  else if (n > 0)
    v.warnings.push_back(num(n) + " machine-check exceptions since boot: read the kernel log");
  if (fresh < 0) v.warnings.push_back("machine checks during the run not judged (telemetry off)");
  v.metrics.push_back(count_metric("mce_new", std::max(0.0, fresh),
                                   "machine-check exceptions during the run (/proc/interrupts)"));
  return v;
}

verdict judge_core_speed(const std::vector<double>& rate, const std::vector<int>& cpus,
                         const std::vector<std::string>& core_class, double max_deviation) {
  verdict v;
  std::map<std::string, std::vector<double>> by_class;
  for (std::size_t i = 0; i < rate.size(); ++i) by_class[core_class[i]].push_back(rate[i]);
  double worst = 1;
  for (std::size_t i = 0; i < rate.size(); ++i) {
    auto values = by_class[core_class[i]];
    std::sort(values.begin(), values.end());
    const std::size_t h = values.size() / 2;
    const double median = values.size() % 2 ? values[h] : (values[h - 1] + values[h]) / 2;
    if (!(median > 0)) continue;
    const double ratio = rate[i] / median;
    worst = std::min(worst, ratio);
    if (ratio < 1 - max_deviation) {
      v.failures.push_back("CPU " + std::to_string(cpus[i]) + " runs at " + num(100 * ratio) +
                           "% of its siblings' median" +
                           (by_class.size() > 1 ? " (" + core_class[i] + " cores)" : "") +
                           ": check its frequency (cpupower frequency-info), thermal paste or a "
                           "BIOS limit; a core that stays slow needs the CPU replaced");
    }
  }
  v.metrics.push_back({"slowest_core_ratio", "ratio", worst, true,
                       "slowest core's FMA rate over the median of its class (best of the rounds "
                       "per core, every core loaded at once; rates per second of CPU time)"});
  return v;
}

core_bests best_of_quiet_rounds(const std::vector<core_round>& rounds) {
  core_bests out;
  out.rounds = rounds.size();
  for (const auto& r : rounds) out.quiet += r.quiet ? 1 : 0;
  for (const auto& r : rounds) {
    if (out.quiet > 0 && !r.quiet) continue;
    if (out.best.size() < r.rate.size()) out.best.resize(r.rate.size(), 0.0);
    for (std::size_t t = 0; t < r.rate.size(); ++t) out.best[t] = std::max(out.best[t], r.rate[t]);
  }
  return out;
}

core_speed_outcome judge_core_rounds(const std::vector<core_round>& rounds,
                                     const std::vector<int>& cpus,
                                     const std::vector<std::string>& core_class,
                                     double max_deviation, const std::string& load_text) {
  const core_bests b = best_of_quiet_rounds(rounds);
  core_speed_outcome out{judge_core_speed(b.best, cpus, core_class, max_deviation), ""};
  metric_value& m = out.v.metrics.back();
  if (b.quiet > 0) {
    m.method += "; judged on the " + std::to_string(b.quiet) + " of " + std::to_string(b.rounds) +
                " rounds no other process ran in";
    return out;
  }
  m.method += "; other processes ran in every round: not judged below the bound";
  if (!out.v.failed()) return out;
  out.busy_reason = "core speed not judged: other processes ran on the CPUs in all " +
                    std::to_string(b.rounds) + " rounds (" + load_text +
                    "); the slowest core read " + num(100 * m.value) +
                    "% of its siblings' median, which that load explains: rerun on an idle node";
  out.v.failures.clear();
  return out;
}

}  // namespace infrabench::health
