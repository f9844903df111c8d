#include "infrabench/scorecard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "infrabench/reason.h"
#include "infrabench/report.h"
#include "infrabench/text_layout.h"

namespace infrabench {

std::string_view to_string(scorecard_status s) {
  switch (s) {
    case scorecard_status::measured:
      return "measured";
    case scorecard_status::simulated:
      return "simulated";
    case scorecard_status::invalid:
      return "invalid";
    case scorecard_status::failed:
      return "failed";
    case scorecard_status::skipped:
      return "skipped";
    case scorecard_status::not_run:
      return "not run";
  }
  return "not run";
}

std::string_view hop_title(data_hop hop) {
  switch (hop) {
    case data_hop::storage_read:
      return "storage read";
    case data_hop::preprocess:
      return "CPU preprocessing";
    case data_hop::h2d:
      return "host to GPU";
    case data_hop::compute:
      return "compute";
    case data_hop::allreduce:
      return "all-reduce";
    case data_hop::step:
      return "training step";
    case data_hop::none:
      break;
  }
  return "other";
}

namespace {

using model::report_view;
using model::result_view;

// The hops a training job's data is carried through, in order (storage to the whole step).
constexpr data_hop path_order[] = {data_hop::storage_read, data_hop::preprocess, data_hop::h2d,
                                   data_hop::compute,      data_hop::allreduce,  data_hop::step};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One configuration of a hop's benchmark: its headline over the ranks whose result passed.
struct configuration {
  const result_view* first = nullptr;  // the first passed result (its axes and fractions)
  std::vector<double> values;          // the headline of each passed result
  std::size_t invalid = 0;             // how many of them are INVALID
  std::string invalid_reason;          // the first one's reason
};

// The axes in which a benchmark's results of the report differ: what tells a configuration apart.
std::set<std::string> varying_axes(const report_view& report, const std::string& bench) {
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& r : report.results) {
    if (r.benchmark != bench) continue;
    for (const auto& [axis, shown] : r.axes_display) seen[axis].insert(shown);
  }
  std::set<std::string> out;
  for (const auto& [axis, values] : seen) {
    if (values.size() > 1) out.insert(axis);
  }
  return out;
}

std::vector<scorecard_fraction> fractions_of(const report_view& report, const result_view& r) {
  std::vector<scorecard_fraction> out;
  const auto it = report.benchmarks.find(r.benchmark);
  if (it == report.benchmarks.end()) return out;
  for (const auto& d : it->second.metrics) {
    if (d.relation.kind != relation_kind::fraction_of || d.role == metric_role::verification)
      continue;
    for (const auto* m : r.metrics_named(d.name)) {
      if (std::isfinite(m->value)) out.push_back({m->name, m->value, m->unit, d.relation.of});
    }
  }
  return out;
}

// Whether `a` is a better headline value than `b`.
bool better_than(double a, double b, bool higher) {
  return higher ? a > b : a < b;
}

// What the results of a hop's benchmarks `benches` say: each configuration's headline values (by
// config_key, the same across ranks), and the first failure and skip.
struct hop_results {
  std::map<std::string, configuration> configs;
  std::string first_failure, first_skip;
  std::size_t failed = 0;
};

hop_results collect(const report_view& report, const std::vector<std::string>& benches) {
  hop_results out;
  for (const auto& r : report.results) {
    if (std::find(benches.begin(), benches.end(), r.benchmark) == benches.end()) continue;
    if (r.status == status::failed) {
      if (out.failed++ == 0) out.first_failure = r.benchmark + ": " + r.reason;
      continue;
    }
    if (r.status == status::skipped) {
      // A node-local benchmark left to its host's first rank is not a skip of the hop.
      if (r.reason_code != reason_code::node_local && out.first_skip.empty())
        out.first_skip = r.benchmark + ": " + r.reason;
      continue;
    }
    const metric_decl* h = report.headline_of(r.benchmark);
    const auto* m = h != nullptr ? r.find_metric(h->name) : nullptr;
    if (m == nullptr || !std::isfinite(m->value)) continue;
    configuration& c = out.configs[r.config_key()];
    if (c.first == nullptr) c.first = &r;
    c.values.push_back(m->value);
    if (!r.valid && c.invalid++ == 0)
      c.invalid_reason = r.invalid_reasons.empty() ? "INVALID" : r.invalid_reasons.front();
  }
  return out;
}

// The configuration the row shows: the best median, valid or not (its status says which: the
// same workload from run to run, not whichever happened to be quiet); only those in the unit of
// the first one chosen are compared. Sets the row's unit; null when no configuration passed.
const configuration* best_configuration(const report_view& report, const hop_results& h,
                                        scorecard_row& row, double& value) {
  const configuration* best = nullptr;
  for (const auto& [key, c] : h.configs) {
    const metric_decl* d = report.headline_of(c.first->benchmark);
    if (!row.unit.empty() && d->unit != row.unit) continue;  // another unit: not comparable
    const double x = median_of(c.values);
    if (best == nullptr || better_than(x, value, d->direction == better::higher)) {
      best = &c;
      value = x;
      row.unit = d->unit;
    }
  }
  return best;
}

// The row of `hop` on one device, from the results of `benches` (each declares the hop on its
// headline).
scorecard_row hop_row(const report_view& report, data_hop hop, bool gpu,
                      const std::vector<std::string>& benches) {
  scorecard_row row;
  row.hop = hop;
  row.gpu = gpu;
  row.benchmark = benches.front();
  const hop_results found = collect(report, benches);
  row.configurations = found.configs.size();
  double value = 0;
  const configuration* best = best_configuration(report, found, row, value);
  if (best == nullptr) {
    row.status = found.failed > 0 ? scorecard_status::failed : scorecard_status::skipped;
    row.why = found.failed > 0 ? found.first_failure : found.first_skip;
    if (row.why.empty()) row.why = "no result of its benchmarks carries the headline";
    return row;
  }
  const metric_decl* h = report.headline_of(best->first->benchmark);
  const bool valid = best->invalid == 0;
  row.status = valid ? scorecard_status::measured : scorecard_status::invalid;
  row.benchmark = best->first->benchmark;
  const auto varying = varying_axes(report, row.benchmark);
  row.configuration = best->first->axes_label(&varying);
  row.metric = h->name;
  row.higher_is_better = h->direction == better::higher;
  row.value = value;
  row.results = best->values.size();
  row.fractions = fractions_of(report, *best->first);
  if (!valid) row.why = best->invalid_reason;
  return row;
}

// Whether the report carries its benchmarks' metric declarations (schema 1.5.0 on): without them
// no hop can be found, which is not the same as a run that measured none.
bool carries_declarations(const report_view& report) {
  for (const auto& [bench, meta] : report.benchmarks) {
    if (!meta.metrics.empty()) return true;
  }
  return false;
}

}  // namespace

std::vector<scorecard_row> make_scorecard(const report_view& report) {
  std::vector<scorecard_row> rows;
  const bool declared = carries_declarations(report);
  for (const data_hop hop : path_order) {
    std::vector<std::string> on_device[2];  // [0] CPU, [1] GPU
    for (const auto& [bench, meta] : report.benchmarks) {
      const metric_decl* h = report.headline_of(bench);
      if (h == nullptr || h->hop != hop) continue;
      on_device[report.runs_on_gpu(bench).value_or(false) ? 1 : 0].push_back(bench);
    }
    if (on_device[0].empty() && on_device[1].empty()) {
      scorecard_row row;
      row.hop = hop;
      row.why = declared ? "no benchmark of this run measures it"
                         : "the report carries no metric declarations (written before schema "
                           "1.5), so no hop can be found";
      rows.push_back(std::move(row));
      continue;
    }
    for (int gpu = 0; gpu < 2; ++gpu) {
      if (!on_device[gpu].empty()) rows.push_back(hop_row(report, hop, gpu == 1, on_device[gpu]));
    }
  }
  // A simulated node's values are no measurement: never `measured`, wherever the rows go.
  for (auto& r : rows) {
    if (report.simulated && r.status == scorecard_status::measured)
      r.status = scorecard_status::simulated;
  }
  return rows;
}

bool scorecard_has_value(const scorecard_row& r) {
  return r.status == scorecard_status::measured || r.status == scorecard_status::simulated ||
         r.status == scorecard_status::invalid;
}

nlohmann::json scorecard_json(const std::vector<scorecard_row>& rows) {
  auto out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {
        {"hop", to_string(r.hop)},
        {"device", r.gpu ? nlohmann::json(*r.gpu ? "gpu" : "cpu") : nlohmann::json(nullptr)},
        {"status", to_string(r.status)}};
    if (scorecard_has_value(r)) {
      auto fractions = nlohmann::json::array();
      for (const auto& f : r.fractions)
        fractions.push_back(
            {{"metric", f.metric}, {"value", f.value}, {"unit", f.unit}, {"of", f.of}});
      j.update({{"benchmark", r.benchmark},
                {"configuration", r.configuration},
                {"metric", r.metric},
                {"value", r.value},
                {"unit", r.unit},
                {"better", r.higher_is_better ? "higher" : "lower"},
                {"results", r.results},
                {"configurations", r.configurations},
                {"fractions", fractions}});
    } else if (r.gpu) {
      j["benchmark"] = r.benchmark;
    }
    if (!r.why.empty()) j["why"] = r.why;
    out.push_back(std::move(j));
  }
  return {{"method",
           "per hop of the data path and device, the best headline value over the configurations "
           "of the hop's benchmarks (those that declare it on their headline), each the median "
           "over the ranks that ran it; INVALID when any of those results is, with its reason"},
          {"rows", out}};
}

namespace {

std::string fraction_text(const scorecard_fraction& f) {
  return f.metric + " " + format_scaled(f.value, f.unit);
}

}  // namespace

std::vector<std::string> scorecard_lines(const std::vector<scorecard_row>& rows, bool simulated,
                                         std::size_t width) {
  std::vector<std::string> out = {
      simulated ? "Scorecard (SIMULATED GPU node: no row is a measurement of hardware)"
                : "Scorecard: each hop of a training job's data path, its best result"};
  // One panel within 120 columns: the benchmark last and clipped, one fraction (the report has
  // them all).
  text_table t;
  t.header = {"hop", "device", "headline", "status", "of peak or reference", "benchmark"};
  t.right = {false, false, true, false, false, false};
  t.key_columns = 2;
  footnotes notes;
  for (const auto& r : rows) {
    const bool has_value = scorecard_has_value(r);
    std::string status = std::string(to_string(r.status));
    if (r.status == scorecard_status::invalid) status = "INVALID";
    if (!r.why.empty()) status += " [" + notes.mark({r.why}) + "]";
    t.rows.push_back({std::string(hop_title(r.hop)), r.gpu ? (*r.gpu ? "GPU" : "CPU") : "-",
                      has_value ? format_scaled(r.value, r.unit) : "-", status,
                      r.fractions.empty() ? "-" : fraction_text(r.fractions.front()),
                      has_value && !r.configuration.empty() ? r.benchmark + " " + r.configuration
                                                            : r.benchmark});
  }
  for (auto& line : layout_table(t, width, 36)) out.push_back(std::move(line));
  for (auto& line : notes.lines(width)) out.push_back(std::move(line));
  return out;
}

}  // namespace infrabench
