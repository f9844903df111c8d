// Reading the roofline's inputs from a report (docs/roofline.md): which benchmarks declare each
// hop, the configuration nearest the job, and the declared headline's rate in base units.
#include <cmath>
#include <cstdio>
#include <limits>

#include "roofline_internal.h"

namespace infrabench::reports::detail {
namespace {

using json = nlohmann::json;

}  // namespace

// ---- where each hop is measured

// Every benchmark declares, on its headline, which hop of a training job it measures
// (metric_decl.h: data_hop), and a whole-step benchmark declares which hop each of its phase times
// is: the roofline picks its inputs by these declarations, never by a benchmark's or a metric's
// name. A report written before the declarations existed declares no hop; every hop of it is "not
// measured", with a note saying why (docs/roofline.md).

// The benchmarks of the report whose headline declares `hop`, on the job's device when `gpu` says
// (a benchmark runs on a GPU when it requires one), by name (the order of the report's map).
std::vector<std::string> hop_benchmarks(const report_view& report, data_hop hop,
                                        std::optional<bool> gpu) {
  std::vector<std::string> out;
  for (const auto& [bench, meta] : report.benchmarks) {
    const metric_decl* d = report.headline_of(bench);
    if (d == nullptr || d->hop != hop) continue;
    if (gpu && report.runs_on_gpu(bench).value_or(false) != *gpu) continue;
    out.push_back(bench);
  }
  return out;
}

// Whether any benchmark of the report declares a hop (a report of this build does).
bool declares_hops(const report_view& report) {
  for (const auto& [bench, meta] : report.benchmarks) {
    for (const auto& d : meta.metrics) {
      if (d.hop != data_hop::none) return true;
    }
  }
  return false;
}

// The declared metrics of `bench` that are `hop` and not its headline (phase times, a byte rate in
// that hop's unit), in declaration order; empty when none is.
std::vector<const metric_decl*> parts_of(const report_view& report, const std::string& bench,
                                         data_hop hop) {
  std::vector<const metric_decl*> out;
  const auto it = report.benchmarks.find(bench);
  if (it == report.benchmarks.end()) return out;
  for (const auto& d : it->second.metrics) {
    if (!d.headline && d.hop == hop) out.push_back(&d);
  }
  return out;
}

// Multiplier from a declared unit to base units (bytes/s, FLOP/s, s, items/s); nullopt when the
// unit is not one a hop can use.
std::optional<double> unit_scale(const std::string& unit) {
  static const std::map<std::string, double> scales = {
      {"B/s", 1},      {"KB/s", 1e3},   {"MB/s", 1e6},    {"GB/s", 1e9},
      {"TB/s", 1e12},  {"FLOP/s", 1},   {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12},
      {"s", 1},        {"ms", 1e-3},    {"us", 1e-6},     {"ns", 1e-9},
      {"images/s", 1}, {"tokens/s", 1}, {"samples/s", 1}, {"B", 1},
  };
  const auto it = scales.find(unit);
  if (it == scales.end()) return std::nullopt;
  return it->second;
}

std::optional<double> number_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const double d = std::stod(v.get<std::string>(), &used);
      if (used == v.get<std::string>().size()) return d;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

std::optional<double> axis_number(const result_view& r, const std::string& axis) {
  const auto it = r.axes.find(axis);
  if (it == r.axes.end()) return std::nullopt;
  return number_of(it->second);
}

std::string fmt(double v) {
  char buf[64];
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e4)
    std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The usable CPUs of the report's first host (threads=0 means them), 0 when not said.
int host_cpus(const report_view& report) {
  if (report.inventories.empty()) return 0;
  for (const auto& [key, text] : report.inventories.front().fields) {
    if (key != "cpu.logical_cpus_usable") continue;
    const auto n = number_of(json(text));
    return n && *n >= 1 && *n == std::floor(*n) ? static_cast<int>(*n) : 0;
  }
  return 0;
}

// An axis's value when the result wrote it as text ("256", "4096x4096x4096"); nullopt otherwise.
std::optional<std::string> axis_text(const result_view& r, const std::string& axis) {
  const auto it = r.axes.find(axis);
  if (it == r.axes.end() || !it->second.is_string()) return std::nullopt;
  return it->second.get<std::string>();
}

// ---- choosing a configuration
// ----------------------------------------------------------------------

namespace {

double distance(const result_view& r, const config_want& want) {
  double d = 0;
  for (const auto& [axis, target] : want.near) {
    auto v = axis_number(r, axis);
    if (!v) continue;
    if (*v == 0 && axis == "threads" && want.cpus > 0) v = want.cpus;
    if (*v <= 0 || target <= 0) {
      d += 100;  // a value nearness cannot compare: last resort
      continue;
    }
    d += std::fabs(std::log2(*v / target));
  }
  return want.extra ? d + want.extra(r) : d;
}

}  // namespace

// The value a hop reads from `r` for a declared metric: the metric itself or, for a declared family
// of cells (bandwidth_gbps_*: one per GPU of a copy matrix), the slowest cell, the GPU that holds a
// synchronous job back. Hop metrics are rates (headline_rate checks the unit), so slowest = lowest.
const metric_view* declared_metric(const result_view& r, const std::string& name) {
  const auto named = r.metrics_named(name);
  if (name.find('*') == std::string::npos) return named.empty() ? nullptr : named.front();
  const metric_view* slowest = nullptr;
  for (const metric_view* m : named) {
    if (!std::isfinite(m->value) || m->value <= 0) continue;
    if (slowest == nullptr || m->value < slowest->value) slowest = m;
  }
  return slowest;
}

namespace {

// The passed result of `bench` nearest `want` that carries a finite value of `metric`; *best_d is
// its distance (lowered only when one is found nearer than it was).
const result_view* pick(const report_view& report, const std::string& bench,
                        const std::string& metric, const config_want& want, double* best_d) {
  const result_view* best = nullptr;
  for (const auto& r : report.results) {
    if (r.benchmark != bench || r.status != status::passed) continue;
    const metric_view* m = declared_metric(r, metric);
    if (m == nullptr || !std::isfinite(m->value) || m->value <= 0) continue;
    bool ok = true;
    for (const auto& [axis, value] : want.exact) {
      if (r.axes.count(axis) != 0 && !r.axes_match(json{{axis, value}})) ok = false;
    }
    if (!ok) continue;
    const double d = distance(r, want);
    if (d < *best_d) {
      *best_d = d;
      best = &r;
    }
  }
  return best;
}

}  // namespace

read_rate headline_rate(const report_view& report, data_hop hop, std::optional<bool> gpu,
                        const config_want& want) {
  read_rate out;
  const std::string hop_name(to_string(hop));
  const auto benches = hop_benchmarks(report, hop, gpu);
  if (benches.empty()) {
    out.why = "no benchmark in the report declares the " + hop_name + " hop" +
              (gpu ? (*gpu ? " on a GPU" : " on the CPU") : "");
    return out;
  }
  double best_d = std::numeric_limits<double>::infinity();
  const metric_decl* best_decl = nullptr;
  for (const auto& bench : benches) {
    const metric_decl* d = report.headline_of(bench);
    if (!unit_scale(d->unit)) {
      out.why = bench + "'s headline " + d->name + " is in " + d->unit + ", not a rate a hop uses";
      continue;
    }
    if (const result_view* r = pick(report, bench, d->name, want, &best_d)) {
      out.result = r;
      best_decl = d;
    }
  }
  if (out.result == nullptr) {
    if (out.why.empty()) out.why = "no passed result of " + hop_name + "'s benchmark in the report";
    return out;
  }
  const metric_view* m = declared_metric(*out.result, best_decl->name);
  out.source = {out.result->benchmark, out.result->config_label(), m->name, m->value,
                best_decl->unit};
  out.base = m->value * *unit_scale(best_decl->unit);
  out.why.clear();
  return out;
}

}  // namespace infrabench::reports::detail
