#include "common.h"

#include <cmath>

namespace infrabench::health {

std::vector<gpu_view> read_gpus() {
  const nvml::library& lib = nvml::library::instance();
  telemetry::session* tele = telemetry::active();
  std::vector<gpu_view> out;
  for (unsigned i = 0; i < lib.device_count(); ++i) {
    gpu_view g;
    g.index = i;
    g.name = lib.name(i);
    g.now = lib.counters(i);
    g.links = lib.nvlinks(i);
    const nvml::gpu_sample s = lib.sample(i);
    if (!std::isnan(s.throttle_reasons)) g.reasons_now = s.throttle_reasons;
    if (tele && i < tele->gpu_count()) {
      g.before = tele->gpu_counters_before(i);
      const double gen = tele->gpu_trace_max(i, "pcie_gen");
      const double width = tele->gpu_trace_max(i, "pcie_width");
      if (!std::isnan(gen)) g.gen_seen = gen;
      if (!std::isnan(width)) g.width_seen = width;
      unsigned long long serious = 0;
      for (const auto& b : nvml::reason_bits()) {
        if (b.serious) serious |= b.bit;
      }
      const double frac = tele->gpu_reason_fraction(i, serious, 0, tele->now_s());
      if (!std::isnan(frac)) g.serious_fraction = frac;
      for (const auto& b : nvml::reason_bits()) {
        if (b.serious && tele->gpu_reason_fraction(i, b.bit, 0, tele->now_s()) > 0)
          g.serious_bits |= b.bit;
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

cpu_counters read_cpu_counters() {
  const telemetry::cpu_source src(telemetry::sysfs_root());
  cpu_counters c;
  c.now = src.counters();
  if (const auto* tele = telemetry::active()) c.before = tele->cpu_counters_before();
  c.edac_source = src.sources().value("edac", std::string("not exposed"));
  return c;
}

void finish(state& st, const verdict& v) {
  if (!v.skip.empty()) st.skip(v.skip);
  for (const auto& m : v.metrics) {
    st.add_metric(m.name, m.unit, m.value, m.higher_is_better, m.method, metric_role::verification);
    if (!m.gpus.empty()) st.set_metric_gpus(m.name, m.gpus);
  }
  for (const auto& w : v.warnings) st.add_warning(w);
  if (v.failed()) {
    st.blame_gpus(v.failed_gpus);
    st.fail(v.failure_text());
  }
}

}  // namespace infrabench::health
