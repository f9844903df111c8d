#include "infrabench/reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;
const double nan_v = std::nan("");

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
    case change::no_samples:
      return "no samples";
    case change::not_gated:
      return "not gated";
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

std::vector<inventory_change> diff_inventories(const std::vector<report_view>& reports) {
  std::vector<std::map<std::string, std::string>> flat(reports.size());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].hosts.is_array() && !reports[i].hosts.empty())
      flatten(reports[i].hosts[0], "", flat[i]);
    std::map<std::string, std::string> settings;
    if (reports[i].run.is_object() && reports[i].run.contains("settings")) {
      flatten(reports[i].run["settings"], "run.settings", settings);
      flat[i].insert(settings.begin(), settings.end());
    }
    for (const auto& [k, v] : flat[i]) keys.insert(k);
  }
  std::vector<inventory_change> out;
  for (const auto& k : keys) {
    if (volatile_key(k)) continue;
    inventory_change ch;
    ch.key = k;
    ch.system = k.rfind("run.settings", 0) != 0;
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

result_index index_results(const std::vector<report_view>& reports) {
  result_index x;
  x.per_report.resize(reports.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].results) {
      const std::string key = reports[i].identity(r);
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

change judge_change(const metric_view& base, const metric_view& m, const compare_options& opt,
                    double* p_value) {
  const double ratio = m.value / base.value;
  const double perf = m.higher_is_better ? ratio : 1 / ratio;
  if (base.samples.size() < 2 || m.samples.size() < 2) return change::no_samples;
  *p_value = mann_whitney_u(base.samples, m.samples).p_value;
  const bool big = std::fabs(perf - 1) >= opt.min_effect;
  // The samples of one run share that run's conditions (clock, placement, neighbours), so the U
  // test sees within-run noise only. A difference that does not even leave either run's own 95%
  // interval of the median is not called a change.
  const double ci =
      std::max(median_ci95_half_width(base.samples), median_ci95_half_width(m.samples));
  const bool beyond_ci = !(std::fabs(m.value - base.value) <= ci);
  if (*p_value < opt.alpha && big && beyond_ci) return perf > 1 ? change::better : change::worse;
  return big ? change::not_significant : change::same;
}

metric_row compare_metric(const std::vector<const result_view*>& rs, const std::string& name,
                          const compare_options& opt) {
  metric_row row;
  row.metric = name;
  const metric_view* base = nullptr;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const metric_view* m = rs[i] && rs[i]->status == "passed" ? rs[i]->find_metric(name) : nullptr;
    if (i == 0) base = m;
    if (m && row.unit.empty()) {
      row.unit = m->unit;
      row.higher_is_better = m->higher_is_better;
      row.role = m->role;
    }
    row.value.push_back(m ? m->value : nan_v);
    row.valid.push_back(rs[i] && rs[i]->valid);
    row.n.push_back(m ? m->samples.size() : 0);
    double ratio = nan_v, p = nan_v;
    change v = change::missing;
    if (i == 0) {
      v = m ? change::same : change::missing;
      ratio = m ? 1.0 : nan_v;
    } else if (base && m && std::isfinite(base->value) && std::isfinite(m->value) &&
               base->value != 0) {
      ratio = m->value / base->value;
      // A clock or a verification error is context, not a speed: shown, never judged.
      v = m->is_performance() ? judge_change(*base, *m, opt, &p) : change::not_gated;
    }
    row.ratio.push_back(ratio);
    row.perf.push_back(
        std::isfinite(ratio) && ratio > 0 ? (row.higher_is_better ? ratio : 1 / ratio) : nan_v);
    row.p_value.push_back(p);
    row.ci_half.push_back(m ? median_ci95_half_width(m->samples) : nan_v);
    row.verdict.push_back(v);
  }
  return row;
}

std::vector<group_summary> summarize_groups(const comparison& c) {
  std::vector<std::string> groups;
  for (const auto& row : c.rows) {
    if (row.role == metric_role::performance &&
        std::find(groups.begin(), groups.end(), row.group) == groups.end())
      groups.push_back(row.group);
  }
  std::vector<group_summary> out;
  for (const auto& g : groups) {
    group_summary s;
    s.group = g;
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      std::vector<double> perfs;
      std::size_t better = 0, worse = 0;
      for (const auto& row : c.rows) {
        if (row.group != g || row.role != metric_role::performance || !std::isfinite(row.perf[i]))
          continue;
        perfs.push_back(row.perf[i]);
        better += row.verdict[i] == change::better;
        worse += row.verdict[i] == change::worse;
      }
      const double gm = geometric_mean(perfs);
      s.geomean_perf.push_back(gm);
      s.metrics.push_back(perfs.size());
      s.better.push_back(better);
      s.worse.push_back(worse);
      s.perf_per_price.push_back(gm * c.price[0] / c.price[i]);
      s.perf_per_watt.push_back(gm * c.power[0] / c.power[i]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

comparison compare_reports(const std::vector<report_view>& reports, const compare_options& opt) {
  if (reports.size() < 2) throw user_error("compare needs at least two reports");
  comparison c;
  c.options = opt;
  set_reports(c, reports, opt);
  const result_index index = index_results(reports);
  std::vector<const report_view*> ptrs;
  for (const auto& r : reports) ptrs.push_back(&r);
  const auto varying = varying_axes(ptrs);
  const bool per_rank = reports[0].world_size > 1 || reports[0].multi_node();
  std::size_t common_configs = 0;
  for (const auto& key : index.order) {
    const auto rs = index.row(key);
    const auto present = std::count_if(rs.begin(), rs.end(), [](const auto* r) { return r; });
    if (!rs[0] || present < 2) continue;
    ++common_configs;
    const result_view& first = *rs[0];
    std::string config = first.axes_label(&varying.at(first.benchmark));
    if (per_rank)
      config += std::string(config.empty() ? "" : " ") + "rank=" + std::to_string(first.rank);
    for (const auto& name : metric_names(rs)) {
      metric_row row = compare_metric(rs, name, opt);
      const bool comparable = std::any_of(row.ratio.begin() + 1, row.ratio.end(),
                                          [](double r) { return std::isfinite(r); });
      if (!comparable) continue;
      row.benchmark = first.benchmark;
      row.group = first.group();
      row.config = config;
      row.key = key + "#" + name;
      c.rows.push_back(std::move(row));
    }
  }
  c.only_in = only_in(c.labels, index);
  if (c.rows.empty()) refuse_nothing_in_common(c, reports, common_configs);
  c.groups = summarize_groups(c);
  c.inventory = diff_inventories(reports);
  return c;
}

double median_ci95_half_width(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  const auto n = static_cast<double>(v.size());
  if (v.size() < 2) return nan_v;
  std::sort(v.begin(), v.end());
  const double d = 0.98 * std::sqrt(n);  // 1.96 / 2 * sqrt(n): binomial(n, 1/2), normal approx.
  const auto lo = static_cast<std::size_t>(std::clamp(std::floor(n / 2 - d), 0.0, n - 1));
  const auto hi = static_cast<std::size_t>(std::clamp(std::ceil(n / 2 + d) - 1, 0.0, n - 1));
  return (v[hi] - v[lo]) / 2;
}

std::vector<std::string> regressions(const comparison& c, double pct,
                                     std::vector<std::string>* not_counted) {
  std::vector<std::string> out;
  for (const auto& row : c.rows) {
    if (row.role != metric_role::performance) continue;  // never judged: see compare_metric
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      if (row.verdict[i] != change::worse) continue;
      const double loss = 1 - row.perf[i];
      if (loss * 100 <= pct) continue;
      const bool counted = row.valid[0] && row.valid[i];
      if (!counted && !not_counted) continue;
      (counted ? out : *not_counted)
          .push_back(c.labels[i] + ": " + row.benchmark +
                     (row.config.empty() ? "" : " " + row.config) + " " + row.metric + " " +
                     format_value(row.value[0], row.unit) + " -> " +
                     format_value(row.value[i], row.unit) + " (" +
                     format_percent(row.ratio[i] - 1) + ", p " + format_p(row.p_value[i]) + ")");
    }
  }
  return out;
}

namespace {

std::string ratio_text(double r) {
  if (!std::isfinite(r)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fx", r);
  return buf;
}

// "clock_ghz (information)": a metric that is not gated says so where it is listed.
std::string metric_label(const metric_row& row) {
  if (row.role == metric_role::performance) return row.metric;
  return row.metric + " (" + std::string(to_string(row.role)) + ")";
}

std::vector<std::vector<std::string>> metric_rows(const comparison& c, const std::string& benchmark,
                                                  bool markdown) {
  const std::size_t nr = c.labels.size();
  std::vector<std::string> header = {"configuration", "metric", c.labels[0]};
  for (std::size_t i = 1; i < nr; ++i) {
    header.push_back(c.labels[i]);
    header.push_back(c.labels[i] + "/" + c.labels[0]);
    header.push_back("p");
    header.push_back("verdict");
  }
  if (markdown) header.insert(header.begin(), "benchmark");
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& row : c.rows) {
    if (!benchmark.empty() && row.benchmark != benchmark) continue;
    std::vector<std::string> cells = {
        row.config.empty() ? "-" : row.config, metric_label(row),
        format_value(row.value[0], row.unit) + (row.valid[0] ? "" : " (invalid)")};
    for (std::size_t i = 1; i < nr; ++i) {
      cells.push_back(format_value(row.value[i], row.unit) +
                      (row.valid[i] || !std::isfinite(row.value[i]) ? "" : " (invalid)"));
      cells.push_back(ratio_text(row.ratio[i]));
      cells.push_back(format_p(row.p_value[i]));
      std::string v(to_string(row.verdict[i]));
      if (row.verdict[i] == change::better || row.verdict[i] == change::worse)
        v += " " + format_percent(row.perf[i] - 1);
      if (row.verdict[i] == change::worse && !(row.valid[0] && row.valid[i]))
        v += " (INVALID: not gated)";
      cells.push_back(v);
    }
    if (markdown) cells.insert(cells.begin(), row.benchmark);
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::vector<bool> metric_right(std::size_t nr, bool markdown) {
  std::vector<bool> right = {false, false, true};
  for (std::size_t i = 1; i < nr; ++i) {
    right.push_back(true);
    right.push_back(true);
    right.push_back(true);
    right.push_back(false);
  }
  if (markdown) right.insert(right.begin(), false);
  return right;
}

std::vector<std::vector<std::string>> summary_rows(const comparison& c) {
  const std::size_t nr = c.labels.size();
  const bool prices = std::isfinite(c.price[0]);
  const bool watts = std::isfinite(c.power[0]);
  std::vector<std::string> header = {"group"};
  for (std::size_t i = 1; i < nr; ++i) {
    header.push_back(c.labels[i] + "/" + c.labels[0]);
    if (prices) header.push_back("perf/$");
    if (watts) header.push_back("perf/W");
    header.push_back("better");
    header.push_back("worse");
    header.push_back("metrics");
  }
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& g : c.groups) {
    std::vector<std::string> cells = {g.group};
    for (std::size_t i = 1; i < nr; ++i) {
      cells.push_back(ratio_text(g.geomean_perf[i]));
      if (prices) cells.push_back(ratio_text(g.perf_per_price[i]));
      if (watts) cells.push_back(ratio_text(g.perf_per_watt[i]));
      cells.push_back(std::to_string(g.better[i]));
      cells.push_back(std::to_string(g.worse[i]));
      cells.push_back(std::to_string(g.metrics[i]));
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::vector<std::vector<std::string>> inventory_rows(const comparison& c, bool system,
                                                     std::size_t limit, std::size_t* left) {
  std::vector<std::vector<std::string>> rows = {{"what"}};
  for (const auto& l : c.labels) rows[0].push_back(l);
  std::size_t shown = 0;
  *left = 0;
  for (const auto& ch : c.inventory) {
    if (ch.system != system) continue;
    if (shown++ >= limit) {
      ++*left;
      continue;
    }
    std::vector<std::string> cells = {ch.key};
    for (const auto& v : ch.values) cells.push_back(v.size() > 60 ? v.substr(0, 57) + "..." : v);
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::string differing_system_summary(const comparison& c) {
  // The headline keys: what makes "a regression" a different machine.
  static const char* const important[] = {"cpu.model",
                                          "cpu.microcode",
                                          "cpu.sockets",
                                          "cpu.cores",
                                          "os.kernel",
                                          "os.name",
                                          "memory.total_bytes",
                                          "libraries.cuda_driver",
                                          "libraries.cuda_runtime",
                                          "libraries.nccl",
                                          "libraries.cublas",
                                          "build.compiler",
                                          "build.cxx_flags",
                                          "build.git_commit",
                                          "hostname",
                                          "virtualization.hypervisor_vendor"};
  std::string out;
  for (const auto& ch : c.inventory) {
    bool hit = ch.key.rfind("gpus", 0) == 0 && ch.key.find("name") != std::string::npos;
    for (const char* k : important) hit |= ch.key == k;
    if (hit) out += (out.empty() ? "" : ", ") + ch.key;
  }
  return out;
}

}  // namespace

void print_comparison_table(std::ostream& out, const comparison& c) {
  const std::size_t nr = c.labels.size();
  out << "comparing " << nr << " reports against " << c.labels[0] << ":\n";
  for (std::size_t i = 0; i < nr; ++i)
    out << "  " << c.labels[i] << " = " << c.descriptions[i] << "\n";
  out << "  a change is called when Mann-Whitney p < " << format_number(c.options.alpha)
      << " on the samples and the ratio moves by >= " << format_number(c.options.min_effect * 100)
      << "% and out of both runs' 95% intervals of the median\n"
      << "  (within-run samples only: run-to-run variance is not in them; see history trend)\n\n";
  std::vector<std::string> benches;
  for (const auto& row : c.rows) {
    if (std::find(benches.begin(), benches.end(), row.benchmark) == benches.end())
      benches.push_back(row.benchmark);
  }
  for (const auto& b : benches) {
    out << b << "\n";
    print_text_table(out, metric_rows(c, b, false), metric_right(nr, false));
    out << "\n";
  }
  out << "summary: geometric mean of performance ratios per group (> 1: better than " << c.labels[0]
      << ")\n";
  std::vector<bool> right(32, true);
  right[0] = false;
  print_text_table(out, summary_rows(c), right);
  for (const auto& o : c.only_in) out << "  " << o << "\n";
  std::size_t left = 0;
  const auto sys = inventory_rows(c, true, 25, &left);
  out << "\nsystem differences";
  if (sys.size() == 1) {
    out << ": none (same hardware and software as recorded)\n";
  } else {
    out << ":\n";
    print_text_table(out, sys, {});
    if (left) out << "  ... and " << left << " more (--format json for all)\n";
    const std::string headline = differing_system_summary(c);
    if (!headline.empty())
      out << "  note: the systems differ (" << headline
          << "): a change may come from the machine, not the code\n";
  }
  const auto settings = inventory_rows(c, false, 25, &left);
  if (settings.size() > 1) {
    out << "\nrun settings differ:\n";
    print_text_table(out, settings, {});
  }
}

void print_comparison_markdown(std::ostream& out, const comparison& c) {
  const std::size_t nr = c.labels.size();
  out << "### infrabench compare\n\n";
  for (std::size_t i = 0; i < nr; ++i)
    out << "- **" << markdown_text(c.labels[i]) << "**: " << markdown_text(c.descriptions[i])
        << "\n";
  out << "\nA change is called when Mann–Whitney p < " << format_number(c.options.alpha)
      << " on the raw samples and the ratio moves by ≥ "
      << format_number(c.options.min_effect * 100)
      << "% and out of both runs' 95% intervals of the median.\n\n";
  out << "#### Summary (geometric mean of performance ratios, > 1 is better than "
      << markdown_text(c.labels[0]) << ")\n\n";
  std::vector<bool> right(32, true);
  right[0] = false;
  print_markdown_table(out, summary_rows(c), right);
  std::vector<std::string> noisy;
  const auto regs = regressions(c, 0, &noisy);
  if (!regs.empty()) {
    out << "\n**Significant regressions:**\n\n";
    for (const auto& r : regs) out << "- " << markdown_text(r) << "\n";
  }
  if (!noisy.empty()) {
    out << "\n**Worse, but on INVALID (noisy) results, not counted:**\n\n";
    for (const auto& r : noisy) out << "- " << markdown_text(r) << "\n";
  }
  out << "\n<details><summary>All metrics (" << c.rows.size() << ")</summary>\n\n";
  print_markdown_table(out, metric_rows(c, "", true), metric_right(nr, true));
  out << "\n</details>\n";
  std::size_t left = 0;
  const auto sys = inventory_rows(c, true, 40, &left);
  out << "\n#### System differences\n\n";
  if (sys.size() == 1) {
    out << "None (same hardware and software as recorded).\n";
  } else {
    print_markdown_table(out, sys, {});
    if (left) out << "\n… and " << left << " more.\n";
  }
  for (const auto& o : c.only_in) out << "\n- " << markdown_text(o);
  if (!c.only_in.empty()) out << "\n";
}

namespace {

json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json reports_json(const comparison& c) {
  json reports = json::array();
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    reports.push_back({{"label", c.labels[i]},
                       {"description", c.descriptions[i]},
                       {"price", num(c.price[i])},
                       {"power_w", num(c.power[i])}});
  }
  return reports;
}

json metric_row_json(const comparison& c, const metric_row& row) {
  json per = json::array();
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    json e = {{"report", c.labels[i]},
              {"value", num(row.value[i])},
              {"valid", row.valid[i]},
              {"samples", row.n[i]},
              {"ratio", num(row.ratio[i])},
              {"perf_ratio", num(row.perf[i])},
              {"p_value", num(row.p_value[i])},
              {"ci95_half_width", num(row.ci_half[i])},
              {"verdict", std::string(to_string(row.verdict[i]))}};
    if (row.higher_is_better && std::isfinite(c.price[i]))
      e["value_per_price"] = num(row.value[i] / c.price[i]);
    if (row.higher_is_better && std::isfinite(c.power[i]))
      e["value_per_watt"] = num(row.value[i] / c.power[i]);
    per.push_back(e);
  }
  return {{"benchmark", row.benchmark},
          {"group", row.group},
          {"configuration", row.config},
          {"metric", row.metric},
          {"unit", row.unit},
          {"better", row.higher_is_better ? "higher" : "lower"},
          {"role", std::string(to_string(row.role))},
          {"reports", per}};
}

json groups_json(const comparison& c) {
  json groups = json::array();
  for (const auto& g : c.groups) {
    json per = json::array();
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      per.push_back({{"report", c.labels[i]},
                     {"geomean_perf_ratio", num(g.geomean_perf[i])},
                     {"perf_per_price_ratio", num(g.perf_per_price[i])},
                     {"perf_per_watt_ratio", num(g.perf_per_watt[i])},
                     {"metrics", g.metrics[i]},
                     {"better", g.better[i]},
                     {"worse", g.worse[i]}});
    }
    groups.push_back({{"group", g.group}, {"reports", per}});
  }
  return groups;
}

}  // namespace

json comparison_json(const comparison& c) {
  std::vector<std::string> noisy;
  const auto regs = regressions(c, 0, &noisy);
  json rows = json::array();
  for (const auto& row : c.rows) rows.push_back(metric_row_json(c, row));
  json inv = json::array();
  for (const auto& ch : c.inventory)
    inv.push_back(
        {{"key", ch.key}, {"values", ch.values}, {"kind", ch.system ? "system" : "run_setting"}});
  return {{"reports", reports_json(c)},
          {"method",
           {{"test", "Mann-Whitney U, two-sided, on per-sample metric values"},
            {"alpha", c.options.alpha},
            {"min_effect", c.options.min_effect},
            {"guard", "the difference of the medians exceeds both reports' 95% CI half-widths"},
            {"gated", "performance metrics only (information and verification are shown)"},
            {"not_gated", "regressions on INVALID results"}}},
          {"metrics", rows},
          {"groups", groups_json(c)},
          {"differences", inv},
          {"only_in", c.only_in},
          {"regressions", regs},
          {"regressions_not_counted", noisy}};
}

}  // namespace infrabench::reports
