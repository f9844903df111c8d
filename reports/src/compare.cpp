#include "infrabench/reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "compare_stats.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/reports/text.h"
#include "infrabench/reports/values.h"
#include "infrabench/text_layout.h"

namespace infrabench::reports {

using detail::nan_v;

namespace {

using detail::log_sample;
using detail::logs_of;
using json = nlohmann::json;

std::string describe(const report_view& r) {
  std::string d = r.path.empty() ? r.label : r.path;
  std::string extra = r.primary_hostname();
  if (!r.started_utc.empty())
    extra += (extra.empty() ? "" : ", ") + r.started_utc.substr(0, 16) + "Z";
  const std::string commit = r.git_commit();
  if (!commit.empty())
    extra += (extra.empty() ? "" : ", ") + std::string("commit ") + commit.substr(0, 12);
  if (r.multi_node()) extra += ", " + std::to_string(r.nodes().size()) + " nodes";
  return extra.empty() ? d : d + " (" + extra + ")";
}

// Flattens a section the model keeps as written (run settings, the suite's own fields) the way
// report_io flattens inventories: objects by "a.b", arrays of objects by "a[0]".
void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i)
      flatten(j[i], prefix + "[" + std::to_string(i) + "]", out);
  } else {
    out[prefix] = j.is_string() ? j.get<std::string>() : json_text(j);
  }
}

bool volatile_key(const std::string& k) {
  // Things that change between two runs on the same machine and say nothing about it.
  // (hwloc's per-NUMA-node memory is the free memory, too.)
  if (k.rfind("numa[", 0) == 0 && k.ends_with("memory_bytes")) return true;
  static const char* const skip[] = {"timestamp_utc", "available_bytes", "memory_available_bytes"};
  for (const char* s : skip) {
    if (k.size() >= std::strlen(s) &&
        k.compare(k.size() - std::strlen(s), std::string::npos, s) == 0)
      return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(change c) {
  switch (c) {
    case change::same:
      return "same";
    case change::better:
      return "BETTER";
    case change::worse:
      return "WORSE";
    case change::not_significant:
      return "~ (noise)";
    case change::missing:
      return "missing";
    case change::not_gated:
      return "not gated";
    case change::inconclusive:
      return "inconclusive";
    case change::invalid:
      return "INVALID";
    case change::failed:
      return "FAILED";
    case change::machine_drift:
      return "machine drift";
  }
  return "?";
}

std::map<std::string, double> parse_label_values(const std::string& text, const std::string& what) {
  std::map<std::string, double> out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t comma = text.find(',', i);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(i, comma - i);
    const auto eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw user_error(what + ": \"" + item +
                       "\" is not LABEL=NUMBER (labels are the report file names without .json)");
    }
    const std::string label = item.substr(0, eq), num = item.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (end == num.c_str() || *end != '\0' || !(v > 0) || !std::isfinite(v)) {
      throw user_error(what + ": \"" + num + "\" for " + label + " is not a positive number");
    }
    if (!out.emplace(label, v).second) throw user_error(what + ": " + label + " given twice");
    i = comma + 1;
  }
  return out;
}

namespace {

// The options that only name a file the run writes: -o/--output, and every option registered as an
// output (--junit, --html...; options.h's file_use). Two runs writing a.json and b.json ran the
// same way.
const std::set<std::string>& output_options() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s = {"-o", "--output"};
    for (const auto& o : option_registry::instance().all()) {
      if (o->file == run_option::file_use::output) s.insert("--" + o->name);
    }
    return s;
  }();
  return names;
}

// The command line as typed, less the values of the output options.
std::string command_text(const std::vector<std::string>& cl) {
  const auto& outputs = output_options();
  std::string out;
  bool skip = false;
  for (const std::string& arg : cl) {
    if (skip) {
      skip = false;
      continue;
    }
    if (outputs.count(arg)) {
      skip = true;
      out += " " + arg + " FILE";
      continue;
    }
    const auto eq = arg.find('=');
    if (eq != std::string::npos && outputs.count(arg.substr(0, eq))) {
      out += " " + arg.substr(0, eq) + "=FILE";
      continue;
    }
    out += (out.empty() ? "" : " ") + arg;
  }
  return out;
}

// The settings' values of the output options (run.settings.options.junit) read FILE when set: as
// on the command line, where a run writes is not how it ran.
void mask_output_settings(std::map<std::string, std::string>& out) {
  for (const auto& name : output_options()) {
    if (name.rfind("--", 0) != 0) continue;
    const std::string key = "run.settings.options." + name.substr(2);
    const auto it = out.find(key);
    if (it != out.end() && !it->second.empty()) it->second = "FILE";
  }
}

// How the run was made: settings, suite (name, source, filter, axis overrides, the benchmarks
// it selected and the axis values each ran with), command line, launcher and world size (the
// repetitions are a setting: run.settings.repetitions); keys start with "run.".
void flatten_run(const report_view& r, std::map<std::string, std::string>& out) {
  const run_view& run = r.run_info;
  if (!run.settings.is_null()) flatten(run.settings, "run.settings", out);
  mask_output_settings(out);
  if (run.suite) {
    std::string benches;
    for (const auto& b : run.suite->benchmarks) {
      benches += (benches.empty() ? "" : ", ") + b.name;
      // The values each axis ran with (thread counts, sizes), keyed by benchmark, not by
      // position: another filter must not shift every row.
      for (const auto& [axis, values] : b.axes)
        out["run.suite.axes." + b.name + "." + axis] = json_text(values);
    }
    flatten(run.suite->other, "run.suite", out);
    out["run.suite.benchmarks"] = benches;
  }
  if (run.command_line) out["run.command_line"] = command_text(*run.command_line);
  if (!run.launcher.is_null()) out["run.launcher"] = json_text(run.launcher);
  if (run.world_size_given) out["run.world_size"] = std::to_string(r.world_size);
}

}  // namespace

std::vector<inventory_change> diff_inventories(const std::vector<report_view>& reports) {
  std::vector<std::map<std::string, std::string>> flat(reports.size());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!reports[i].inventories.empty()) {
      for (const auto& [k, v] : reports[i].inventories.front().fields) flat[i][k] = v;
    }
    flatten_run(reports[i], flat[i]);
    for (const auto& [k, v] : flat[i]) keys.insert(k);
  }
  std::vector<inventory_change> out;
  for (const auto& k : keys) {
    if (volatile_key(k)) continue;
    inventory_change ch;
    ch.key = k;
    ch.system = k.rfind("run.", 0) != 0;
    bool differs = false;
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const auto it = flat[i].find(k);
      ch.values.push_back(it == flat[i].end() ? "-" : it->second);
      if (i > 0 && ch.values[i] != ch.values[0]) differs = true;
    }
    if (differs) out.push_back(std::move(ch));
  }
  return out;
}

namespace {

// Labels, descriptions, and the prices and powers per report (NaN where not given); a price or
// power for a label no report has is refused.
void set_reports(comparison& c, const std::vector<report_view>& reports,
                 const compare_options& opt) {
  for (const auto& r : reports) {
    c.labels.push_back(r.label.empty() ? "report " + std::to_string(c.labels.size() + 1) : r.label);
    c.descriptions.push_back(describe(r));
    c.rooflines.push_back(r.roofline);
    machine_canary m;
    if (r.run_info.canary) {
      m.fma_gflops = r.run_info.canary->fma_gflops;
      m.stream_gbps = r.run_info.canary->stream_gbps;
      m.cache_gbps = r.run_info.canary->cache_gbps;
      m.all_fma_gflops = r.run_info.canary->all_fma_gflops;
      m.all_cache_gbps = r.run_info.canary->all_cache_gbps;
      m.all_cpus = r.run_info.canary->all_cpus;
      m.seconds_each = r.run_info.canary->seconds_each;
    }
    m.ratio = canary_ratio(reports.front().run_info.canary, r.run_info.canary);
    c.canary.push_back(m);
  }
  for (const auto* table : {&opt.price, &opt.power}) {
    for (const auto& [label, v] : *table) {
      if (std::find(c.labels.begin(), c.labels.end(), label) != c.labels.end()) continue;
      std::string known;
      for (const auto& l : c.labels) known += (known.empty() ? "" : ", ") + l;
      throw user_error(std::string(table == &opt.price ? "--price" : "--power") +
                       ": no report labelled \"" + label + "\" (labels: " + known + ")");
    }
  }
  for (const auto& l : c.labels) {
    c.price.push_back(opt.price.count(l) ? opt.price.at(l) : nan_v);
    c.power.push_back(opt.power.count(l) ? opt.power.at(l) : nan_v);
  }
}

// Every report's results by identity, and the identities in first-seen order.
struct result_index {
  std::vector<std::map<std::string, const result_view*>> per_report;
  std::vector<std::string> order;

  // The result of `key` in each report (null where absent).
  [[nodiscard]] std::vector<const result_view*> row(const std::string& key) const {
    std::vector<const result_view*> rs;
    for (const auto& idx : per_report) {
      const auto it = idx.find(key);
      rs.push_back(it == idx.end() ? nullptr : it->second);
    }
    return rs;
  }
};

// Whether a report's results are told apart by rank (mpirun, several nodes).
bool per_rank(const report_view& r) {
  return r.world_size > 1 || r.multi_node();
}

// `ranked`: some report is per rank, and every report's results are keyed with their rank, so a
// single process's (rank 0) meet rank 0's of an `mpirun -np N` run of the same configuration
// (issue 40 item 14: they had "nothing in common").
result_index index_results(const std::vector<report_view>& reports, bool ranked) {
  result_index x;
  x.per_report.resize(reports.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].results) {
      const std::string key =
          ranked ? result_identity(r.benchmark, r.axes, r.rank) : reports[i].identity(r);
      x.per_report[i].emplace(key, &r);
      if (seen.insert(key).second) x.order.push_back(key);
    }
  }
  return x;
}

// Every metric any of the results has, in the first report's order.
std::vector<std::string> metric_names(const std::vector<const result_view*>& rs) {
  std::vector<std::string> names;
  for (const auto* r : rs) {
    if (!r) continue;
    for (const auto& m : r->metrics) {
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    }
  }
  return names;
}

// "only in B: 3 configuration(s) of gemm/cpu_fp32", per report and benchmark.
std::vector<std::string> only_in(const std::vector<std::string>& labels, const result_index& x) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < x.per_report.size(); ++i) {
    std::map<std::string, std::size_t> only;
    for (const auto& [key, r] : x.per_report[i]) {
      std::size_t elsewhere = 0;
      for (std::size_t j = 0; j < x.per_report.size(); ++j)
        elsewhere += j != i && x.per_report[j].count(key);
      if (elsewhere == 0) ++only[r->benchmark];
    }
    for (const auto& [bench, n] : only) {
      out.push_back("only in " + labels[i] + ": " + std::to_string(n) + " configuration(s) of " +
                    bench);
    }
  }
  return out;
}

// Beside other reports' ranks, a single process's results stand for rank 0: its description
// says so, so that what was matched is never a guess.
void say_single_process_matching(comparison& c, const std::vector<report_view>& reports,
                                 bool ranked) {
  if (!ranked) return;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!per_rank(reports[i]))
      c.descriptions[i] += "; one process: its results are compared with rank 0's of the others";
  }
}

[[noreturn]] void refuse_nothing_in_common(const comparison& c,
                                           const std::vector<report_view>& reports,
                                           std::size_t common_configs) {
  std::string what;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    std::set<std::string> benches;
    for (const auto& r : reports[i].results) benches.insert(r.benchmark);
    std::string list;
    for (const auto& b : benches) list += (list.empty() ? "" : ", ") + b;
    what +=
        (what.empty() ? "" : "; ") + c.labels[i] + " has " + (list.empty() ? "no results" : list);
  }
  throw user_error(
      "nothing in common to compare: no configuration has a measured metric in the first report "
      "and another (" +
      what + (common_configs ? "; the common configurations were skipped or failed" : "") + ")");
}

}  // namespace

namespace {

// The reason a result is INVALID, for its row ("noisy: robust CV 12% > 10%").
std::string invalid_text(const result_view& r) {
  if (r.valid) return "";
  return r.invalid_reasons.empty() ? "INVALID" : r.invalid_reasons.front();
}

// Each repetition's value of the metric; the value alone when the report kept none.
std::vector<double> repetition_values(const metric_view& m) {
  return m.repetitions.empty() ? std::vector<double>{m.value} : m.repetitions;
}

// A gated value that is no measurement (0 GB/s, a negative time, null) is a failed result on
// its side, and the comparison of it with the first report's is FAILED both ways: never a ratio,
// never "same" (issue 40 item 11). A first report with no measurement fails every other.
metric_row mark_failed_values(metric_row row, metric_kind kind) {
  for (std::size_t i = 0; i < row.value.size(); ++i) {  // repetitions 0: absent on that side
    row.failed_value.push_back(
        row.repetitions[i] > 0 ? impossible_value(kind, row.role, row.value[i], row.unit) : "");
  }
  if (!row.gated) return row;
  for (std::size_t i = 1; i < row.verdict.size(); ++i) {
    if (row.repetitions[i] == 0) continue;  // absent on this side: nothing to compare
    if (row.failed_value[0].empty() && row.failed_value[i].empty()) continue;
    row.verdict[i] = change::failed;
    row.ratio[i] = row.perf[i] = row.p_value[i] = nan_v;
  }
  if (!row.failed_value[0].empty()) row.verdict[0] = change::failed;
  return row;
}

}  // namespace

namespace {

// Report i's between-run test of `row` against the first report (untested: `t` as constructed),
// and the spread of its own repetitions (m: its metric, nullptr where absent).
void push_test(metric_row& row, const metric_view* m, const between_runs& t) {
  row.p_value.push_back(t.p_value);
  const log_sample own = m ? logs_of(m->repetitions) : log_sample{};
  row.spread.push_back(m ? std::sqrt(own.var) : nan_v);
  row.log_n.push_back(own.n);
  row.log_diff.push_back(t.log_diff);
  row.assumed_noise.push_back(t.assumed_noise);
  row.one_sided.push_back(false);
  row.q_value.push_back(nan_v);
}

}  // namespace

metric_row compare_metric(const std::vector<const result_view*>& rs, const std::string& name,
                          const compare_options& opt, const metric_gate& gate,
                          const metric_decl* decl) {
  metric_row row;
  row.metric = name;
  auto passed_metric = [&](std::size_t i) {
    return rs[i] && rs[i]->status == status::passed ? rs[i]->find_metric(name) : nullptr;
  };
  // The unit, direction and role as the first report that has the metric says; then the gate, once.
  for (std::size_t i = 0; i < rs.size() && row.unit.empty(); ++i) {
    if (const metric_view* m = passed_metric(i)) {
      row.unit = m->unit;
      row.higher_is_better = m->higher_is_better;
      row.role = m->role;
    }
  }
  row.gated = gate.gated && row.role == metric_role::performance;
  row.gate_note = row.role != metric_role::performance ? std::string(to_string(row.role))
                                                       : (row.gated ? "" : gate.note);
  const metric_kind kind = decl != nullptr && decl->kind != metric_kind::unspecified
                               ? decl->kind
                               : kind_for_unit(row.unit, row.role);
  row.noise = std::isnan(opt.noise) ? default_run_noise(kind) : opt.noise;
  const metric_view* base = nullptr;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const metric_view* m = passed_metric(i);
    if (i == 0) base = m;
    row.value.push_back(m ? m->value : nan_v);
    row.valid.push_back(rs[i] && rs[i]->valid);
    row.invalid_reason.push_back(rs[i] ? invalid_text(*rs[i]) : "");
    row.n.push_back(m ? m->samples.size() : 0);
    row.repetitions.push_back(m ? std::max<std::size_t>(1, m->repetitions.size()) : 0);
    double ratio = nan_v;
    between_runs t;
    change v = change::missing;
    if (i == 0) {
      v = m ? change::same : change::missing;
      ratio = m ? 1.0 : nan_v;
    } else if (base && m && std::isfinite(base->value) && std::isfinite(m->value) &&
               base->value != 0) {
      ratio = m->value / base->value;
      v = change::not_gated;
      // INVALID (noisy) results are tested too, by their repetitions' spread: less precise, not no
      // evidence (issue 44); verdict_text says INVALID beside the verdict.
      if (row.gated) {
        t = test_between_runs(repetition_values(*base), repetition_values(*m), row.noise);
        v = change::same;  // decided in decide_verdicts, with the other rows' p values
      }
    }
    row.ratio.push_back(ratio);
    row.perf.push_back(
        std::isfinite(ratio) && ratio > 0 ? (row.higher_is_better ? ratio : 1 / ratio) : nan_v);
    push_test(row, m, t);
    row.needed.push_back(0);
    row.ci_half.push_back(m ? median_ci95_half_width(m->samples) : nan_v);
    row.verdict.push_back(v);
  }
  return mark_failed_values(std::move(row), kind);
}

namespace {

// Repetitions per side that would decide row's undecided change against report i at `level`: from
// the larger observed spread (the assumed noise with one repetition), and never fewer than one
// more than were run, since those did not decide it.
std::size_t needed_to_decide(const metric_row& row, std::size_t i, double level, double min_effect,
                             double scatter_var) {
  double sd = std::max(row.spread[0], row.spread[i]);
  if (row.assumed_noise[i] || !std::isfinite(sd)) sd = row.noise;
  // The runs' scatter as if it were each repetition's: an underestimate where the machine stays
  // in one state for a whole run (more runs, not more repetitions, decide that).
  sd = std::sqrt(sd * sd + scatter_var);
  const double log_effect = std::max(std::fabs(std::log(row.perf[i])), std::log1p(min_effect));
  const std::size_t n = repetitions_needed(sd, log_effect, level);
  return std::max(n, std::max(row.repetitions[0], row.repetitions[i]) + 1);
}

// A side whose one repetition is INVALID (its run disturbed, issue 44): one run cannot estimate the
// between-run noise, and a disturbance that lasted the whole run leaves no trace in its samples'
// spread (same-binary pairs of such runs differed by -45% to -75% on a loaded VM). No loss is too
// large for other processes to explain, so no rule on one such run can tell a regression from
// them: the change is at most inconclusive, with the repetitions that would decide it.
bool rests_on_one_invalid_repetition(const metric_row& row, std::size_t i) {
  const auto one_invalid = [&](std::size_t k) { return row.repetitions[k] <= 1 && !row.valid[k]; };
  return one_invalid(0) || one_invalid(i);
}

// Both sides tested with their own spread (two or more repetitions each).
bool own_spreads(const metric_row& row, std::size_t i) {
  return !row.assumed_noise[i] && row.log_n[0] >= 2 && row.log_n[i] >= 2;
}

// The comparison's typical variance of one repetition's log value against report i: the median of
// both sides' variances over the rows tested with their own spreads (NaN: none).
double typical_variance(const std::vector<metric_row*>& family, std::size_t i) {
  std::vector<double> v;
  for (const metric_row* row : family) {
    if (!own_spreads(*row, i)) continue;
    v.push_back(row->spread[0] * row->spread[0]);
    v.push_back(row->spread[i] * row->spread[i]);
  }
  if (v.empty()) return nan_v;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

struct run_scatter {
  double var = 0;        // the scatter's variance (of a log ratio); 0: none beyond the repetitions
  std::size_t rows = 0;  // the configurations it was estimated over
};
// The lower of the two middle values for an even count (the "lo-median"): a change in exactly
// half of the configurations then leaves the centre, and half the deviations, in one half, and
// the scatter at that half's (R's mad(low = TRUE)); the average of the two would put the centre
// between a 30% step and no step and call the step scatter.
double low_median(std::vector<double> v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// How far a comparison's configurations moved between its two runs beyond their repetitions'
// spread: the runs' repetitions are seconds apart, the runs minutes, and a machine shared with
// others (a VM whose host's caches, memory and disks its neighbours use) can sit in one state for
// a whole run and another for the next. Issue 44 on a 2-vCPU EPYC VM: same-binary runs read DRAM
// latency 193-324 ns, each run's three repetitions within a few %; 76 of 325 same-binary pairs
// fired a 5% gate. That scatter is seen across configurations: the log ratios of a pair's
// configurations spread far more than their repetitions allow. Robustly (a real change in a few
// configurations does not move it; one in all of them alike does not either, since the spread is
// taken around their median), the MAD of the log ratios, as an SD, less the median squared
// standard error of the log ratios, is added to every row's variance.
run_scatter scatter_of(const std::vector<metric_row*>& family, std::size_t i) {
  run_scatter out;
  std::vector<double> x, se2;
  for (const metric_row* row : family) {
    if (!own_spreads(*row, i)) continue;
    x.push_back(row->log_diff[i]);
    se2.push_back(row->spread[0] * row->spread[0] / static_cast<double>(row->log_n[0]) +
                  row->spread[i] * row->spread[i] / static_cast<double>(row->log_n[i]));
  }
  out.rows = x.size();
  if (x.size() < min_scatter_rows) return out;
  const double mid = low_median(x);
  std::vector<double> dev;
  for (double v : x) dev.push_back(std::fabs(v - mid));
  const double sd = 1.4826 * low_median(dev);  // the MAD as a normal SD
  // Beyond chance: a MAD of a handful of values is itself noisy (its variance estimate can be
  // twice the truth where the runs did not scatter at all: then no scatter is added).
  const double se2_mid = median_of(se2);
  if (sd * sd >= min_scatter_ratio * se2_mid) out.var = sd * sd - se2_mid;
  return out;
}

// A row's p when its runs moved beyond their repetitions (scatter_of): one t test, the scatter's
// variance added to Welch's (the standard error of the log ratio from each side's repetitions),
// on the degrees of freedom of the scatter's estimate (its configurations less one), which
// dominates it. (Welch's and the moderated test, the smaller doubled, as without a scatter: the
// doubling then cost a 70% loss among configurations scattering 26%, q 0.018.)
double scattered_p(const metric_row& row, std::size_t i, const run_scatter& rs) {
  const double se2 = row.spread[0] * row.spread[0] / static_cast<double>(row.log_n[0]) +
                     row.spread[i] * row.spread[i] / static_cast<double>(row.log_n[i]);
  return student_t_two_sided_p(row.log_diff[i] / std::sqrt(se2 + rs.var),
                               static_cast<double>(rs.rows - 1));
}

// Welch's p and the moderated test's, the smaller doubled (Bonferroni over the two tests). Welch's
// alone, at three repetitions a side, has 2-4 degrees of freedom: one disturbed repetition (a
// vCPU taken by the host for a quarter second) hid a -50% loss (issue 44: 2 of 8 `taskset -c 0`
// pairs caught). The moderated test alone would hide a small change in a steady metric behind the
// comparison's typical, larger variance. Measured on the issue's protocol (docs/reports.md).
double combined_p(const metric_row& row, std::size_t i, double prior_var, const run_scatter& rs) {
  if (rs.var > 0 && own_spreads(row, i)) return scattered_p(row, i, rs);
  const double welch = row.p_value[i];
  if (!own_spreads(row, i)) return welch;
  between_runs t;
  t.spread_base = row.spread[0];
  t.spread = row.spread[i];
  t.n_base = row.log_n[0];
  t.n = row.log_n[i];
  t.log_diff = row.log_diff[i];
  const double moderated = moderated_p(t, prior_var, moderation_prior_df);
  if (std::isnan(moderated)) return welch;
  return std::min(1.0, 2 * std::min(welch, moderated));
}

// The direction of a row's change against report i, known before its values are: one run was
// launched with less, by its own cgroup CPU quota (it throttled that run's result and not the
// other's) or by fewer CPUs to run on (affinity, a cpuset). Both are recorded beside the values
// (sampling_load), not read from them. -1: report i is the one with less, so slower if anything;
// +1: the first report is; 0: no prediction (neither, both alike, or the two disagree).
int own_making_predicts(const metric_row& row, std::size_t i) {
  if (row.load.size() <= i || !row.load[0] || !row.load[i]) return 0;
  const model::cpu_load_view& a = *row.load[0];
  const model::cpu_load_view& b = *row.load[i];
  const int quota = a.throttled == b.throttled ? 0 : b.throttled ? -1 : 1;
  const int cpus = b.cpus < a.cpus ? -1 : a.cpus < b.cpus ? 1 : 0;
  if (quota != 0 && cpus != 0 && quota != cpus) return 0;
  return quota != 0 ? quota : cpus;
}

// The two-sided p made one-sided toward `direction` (-1: report i slower, +1: faster).
double one_sided_p(const metric_row& row, std::size_t i, int direction) {
  const int observed = row.perf[i] < 1 ? -1 : 1;
  const double half = row.p_value[i] / 2;
  return observed == direction ? half : 1 - half;
}

// Benjamini-Hochberg over one family of report i's gated rows, then each one's verdict. Returns the
// level an undecided change of the family must reach: with R of m p values below BH's line, one
// more joins them at p <= (R + 1) alpha / m (BH's step-up), so that is the level `needed` is
// computed at, not Bonferroni's alpha / m.
double decide_family(const std::vector<metric_row*>& family, std::size_t i,
                     const compare_options& opt, double scatter_var) {
  std::vector<double> p;
  for (const metric_row* row : family) p.push_back(row->p_value[i]);
  const auto q = benjamini_hochberg(p);
  const auto rejected = static_cast<double>(
      std::count_if(q.begin(), q.end(), [&](double x) { return x < opt.alpha; }));
  const double level =
      std::min(opt.alpha, opt.alpha * (rejected + 1) /
                              static_cast<double>(std::max<std::size_t>(1, p.size())));
  for (std::size_t k = 0; k < family.size(); ++k) {
    metric_row& row = *family[k];
    row.q_value[i] = q[k];
    const bool big = std::fabs(row.perf[i] - 1) >= opt.min_effect;
    if (q[k] < opt.alpha) {
      row.verdict[i] = !big ? change::same : row.perf[i] > 1 ? change::better : change::worse;
      continue;
    }
    if (!row.assumed_noise[i] && !big) continue;  // same: small, and the spread is known
    row.verdict[i] = row.assumed_noise[i] ? change::inconclusive : change::not_significant;
    row.needed[i] =
        needed_to_decide(row, i, level * (row.one_sided[i] ? 2 : 1), opt.min_effect, scatter_var);
  }
  return level;
}

}  // namespace

// Two families per report, each with its own Benjamini-Hochberg. The rows whose direction one
// run's own making predicted (own_making_predicts) are tested one-sided that way: issue 44's
// 1.7-CPU quota took 15-34% from every CPU result, as much as a 2-vCPU VM's between-run noise,
// and the two-sided test at 3 vs 3 caught 3 of 8 such pairs. The prediction comes from the runs'
// records (cgroup throttling, the CPUs they could use), not from their values, so it does not
// select the rows that happened to move; same-binary pairs on one machine are never in it. A
// change against the prediction is not called there. The others are tested two-sided, with the
// runs' scatter beyond their repetitions (scatter_of) added to each one's variance.
void decide_verdicts(comparison& c) {
  const compare_options& opt = c.options;
  c.run_scatter.assign(c.labels.size(), 0);
  c.run_scatter_rows.assign(c.labels.size(), 0);
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    std::vector<metric_row*> family, predicted, undecidable;
    for (auto& row : c.rows) {
      if (!row.gated || row.verdict[i] != change::same || std::isnan(row.p_value[i])) continue;
      // Not tested, so not in Benjamini-Hochberg's family (it would only dilute the others).
      if (rests_on_one_invalid_repetition(row, i)) {
        undecidable.push_back(&row);
        continue;
      }
      (own_making_predicts(row, i) != 0 ? predicted : family).push_back(&row);
    }
    std::vector<metric_row*> all = family;
    all.insert(all.end(), predicted.begin(), predicted.end());
    const double prior_var = typical_variance(all, i);
    const run_scatter scatter = scatter_of(family, i);
    c.run_scatter[i] = std::sqrt(scatter.var);
    c.run_scatter_rows[i] = scatter.rows;
    for (metric_row* row : family) row->p_value[i] = combined_p(*row, i, prior_var, scatter);
    for (metric_row* row : predicted) {
      row->p_value[i] = combined_p(*row, i, prior_var, run_scatter{});
      row->one_sided[i] = true;
      row->p_value[i] = one_sided_p(*row, i, own_making_predicts(*row, i));
    }
    const double level = decide_family(family, i, opt, scatter.var);
    const double predicted_level = decide_family(predicted, i, opt, 0);
    for (metric_row* row : undecidable) {
      if (std::fabs(row->perf[i] - 1) < opt.min_effect) continue;  // same: too small to matter
      row->verdict[i] = change::inconclusive;
      const bool directed = own_making_predicts(*row, i) != 0;
      row->needed[i] = needed_to_decide(*row, i, directed ? 2 * predicted_level : level,
                                        opt.min_effect, directed ? 0 : scatter.var);
    }
  }
}

std::vector<group_summary> summarize_groups(const comparison& c) {
  std::vector<std::string> groups;
  for (const auto& row : c.rows) {
    if (row.gated && std::find(groups.begin(), groups.end(), row.group) == groups.end())
      groups.push_back(row.group);
  }
  std::vector<group_summary> out;
  for (const auto& g : groups) {
    group_summary s;
    s.group = g;
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      std::vector<double> perfs, per_energy;
      std::size_t better = 0, worse = 0, measured = 0, typed = 0;
      for (const auto& row : c.rows) {
        // One number per measurement; an INVALID result's median counts as its verdict does.
        if (row.group != g || !row.gated || !std::isfinite(row.perf[i])) continue;
        perfs.push_back(row.perf[i]);
        if (i < row.perf_per_energy.size() && std::isfinite(row.perf_per_energy[i])) {
          per_energy.push_back(row.perf_per_energy[i]);
          measured += row.energy_basis[i] == "measured";
          typed += row.energy_basis[i] == "typed watts";
        }
        better += row.verdict[i] == change::better;
        worse += row.verdict[i] == change::worse;
      }
      const double gm = geometric_mean(perfs);
      s.geomean_perf.push_back(gm);
      s.metrics.push_back(perfs.size());
      s.better.push_back(better);
      s.worse.push_back(worse);
      s.perf_per_price.push_back(gm * c.price[0] / c.price[i]);
      // Rows of one basis alone, or the mix said: a measured row and a typed one are not the
      // same kind of number, so the summary names how many of each it holds.
      s.perf_per_watt.push_back(per_energy.empty() ? nan_v : geometric_mean(per_energy));
      s.energy_basis.push_back(measured && typed ? "measured " + std::to_string(measured) +
                                                       ", typed watts " + std::to_string(typed)
                               : measured ? "measured"
                               : typed    ? "typed watts"
                                          : "");
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// The energy meter's work per joule (energy.h) of a gated row's results: the first
// energy-efficiency metric of the first report's result, found by its unit's kind (never by its
// name), and the same metric of the others.
void set_per_joule(const std::vector<const result_view*>& rs, metric_row& row) {
  row.per_joule.assign(rs.size(), nan_v);
  if (!rs[0]) return;
  for (const auto& m : rs[0]->metrics) {
    if (kind_for_unit(m.unit, m.role) != metric_kind::energy_efficiency) continue;
    row.per_joule_metric = m.name;
    break;
  }
  if (row.per_joule_metric.empty()) return;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const metric_view* m = rs[i] ? rs[i]->find_metric(row.per_joule_metric) : nullptr;
    if (m && std::isfinite(m->value) && m->value > 0) row.per_joule[i] = m->value;
  }
}

}  // namespace

void set_perf_per_energy(comparison& c) {
  const std::size_t n = c.labels.size();
  for (auto& row : c.rows) {
    row.perf_per_energy.assign(n, nan_v);
    row.energy_basis.assign(n, "");
    if (!row.gated || row.per_joule.size() != n) continue;
    for (std::size_t i = 0; i < n; ++i) {
      // Measured: work per joule is already performance per energy, whatever the time did.
      if (std::isfinite(row.per_joule[0]) && std::isfinite(row.per_joule[i])) {
        row.perf_per_energy[i] = row.per_joule[i] / row.per_joule[0];
        row.energy_basis[i] = "measured";
      } else if (std::isfinite(row.perf[i]) && std::isfinite(c.power[0]) &&
                 std::isfinite(c.power[i])) {
        row.perf_per_energy[i] = row.perf[i] * c.power[0] / c.power[i];
        row.energy_basis[i] = "typed watts";
      }
    }
  }
}

comparison compare_reports(const std::vector<report_view>& reports, const compare_options& opt) {
  if (reports.size() < 2) throw user_error("compare needs at least two reports");
  comparison c;
  c.options = opt;
  set_reports(c, reports, opt);
  const bool ranked = std::any_of(reports.begin(), reports.end(), per_rank);
  const result_index index = index_results(reports, ranked);
  say_single_process_matching(c, reports, ranked);
  std::vector<const report_view*> ptrs;
  for (const auto& r : reports) ptrs.push_back(&r);
  const auto varying = varying_axes(ptrs);
  std::size_t common_configs = 0;
  // Each benchmark's declarations, found once: declarations_of scans the reports.
  std::map<std::string, const std::vector<metric_decl>*> decls_of;
  for (const auto& key : index.order) {
    const auto rs = index.row(key);
    const auto present = std::count_if(rs.begin(), rs.end(), [](const auto* r) { return r; });
    if (!rs[0] || present < 2) continue;
    ++common_configs;
    const result_view& first = *rs[0];
    std::string config = first.axes_label(&varying.at(first.benchmark));
    if (ranked)
      config += std::string(config.empty() ? "" : " ") + "rank=" + std::to_string(first.rank);
    const auto [decls, added] = decls_of.try_emplace(first.benchmark, nullptr);
    if (added) decls->second = declarations_of(reports, first.benchmark, opt.catalog);
    for (const auto& name : metric_names(rs)) {
      metric_row row =
          compare_metric(rs, name, opt, headline_gate(decls->second, name),
                         decls->second ? find_declaration(*decls->second, name) : nullptr);
      const bool comparable =
          std::any_of(row.ratio.begin() + 1, row.ratio.end(),
                      [](double r) { return std::isfinite(r); }) ||
          std::count(row.verdict.begin() + 1, row.verdict.end(), change::failed) > 0;
      if (!comparable) continue;
      row.benchmark = first.benchmark;
      row.group = first.group();
      row.config = config;
      for (const auto& [axis, value] : first.axes) row.axes[axis] = value;
      row.key = key + "#" + name;
      if (row.gated) set_per_joule(rs, row);
      for (const auto* r : rs) row.load.push_back(r ? r->load : std::nullopt);
      c.rows.push_back(std::move(row));
    }
  }
  c.only_in = only_in(c.labels, index);
  if (c.rows.empty()) refuse_nothing_in_common(c, reports, common_configs);
  decide_verdicts(c);
  detail::attribute_machine_drift(c);
  detail::attribute_busy_machine(c);
  set_perf_per_energy(c);
  c.groups = summarize_groups(c);
  c.inventory = diff_inventories(reports);
  return c;
}

}  // namespace infrabench::reports
