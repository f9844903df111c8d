#include "infrabench/reports/baseline.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/report.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/text.h"
#include "infrabench/suite.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

const std::regex& benchmark_name_re() {
  static const std::regex re("^[a-z0-9_]+/[a-z0-9_]+$");
  return re;
}
const std::regex& metric_name_re() {
  static const std::regex re("^[a-z0-9_]+$");
  return re;
}
// A rule's metric may be a pattern: `*` stands for any run of name characters.
const std::regex& metric_pattern_re() {
  static const std::regex re("^[a-z0-9_*]+$");
  return re;
}

class rule_reader {
 public:
  rule_reader(std::string origin, std::string where)
      : m_origin(std::move(origin)), m_where(std::move(where)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw user_error(m_origin + ": " + m_where + ": " + what);
  }
  double number(const json& j, const std::string& what) const {
    if (!j.is_number()) fail(what + ": expected a number, got " + std::string(j.type_name()));
    const double d = j.get<double>();
    if (!std::isfinite(d)) fail(what + ": not a finite number");
    return d;
  }
  std::optional<double> optional_number(const json& j, const std::string& what) const {
    if (j.is_null()) return std::nullopt;
    return number(j, what);
  }
  std::string string(const json& j, const std::string& what) const {
    if (!j.is_string()) fail(what + ": expected a string, got " + std::string(j.type_name()));
    return j.get<std::string>();
  }
  void set_where(std::string w) { m_where = std::move(w); }

 private:
  std::string m_origin, m_where;
};

void check_axes_object(const rule_reader& rd, const json& axes, const std::string& key) {
  if (!axes.is_object())
    rd.fail("\"" + key + "\": expected an object of axis values, got " +
            std::string(axes.type_name()));
  for (const auto& [k, v] : axes.items()) {
    if (!v.is_string() && !v.is_number())
      rd.fail("\"" + key + "\"." + k + ": expected a number or a string");
  }
}

rule parse_rule(const json& j, std::size_t index, const std::string& origin,
                bool default_require_valid, double default_max_deviation) {
  rule_reader rd(origin, "rules[" + std::to_string(index) + "]");
  if (!j.is_object()) rd.fail("expected an object, got " + std::string(j.type_name()));
  if (const auto id = j.find("id"); id != j.end()) {
    rd.set_where("rules[" + std::to_string(index) + "] (\"" + rd.string(*id, "id") + "\")");
  }
  static const std::set<std::string> known = {"id",
                                              "benchmark",
                                              "axes",
                                              "metric",
                                              "unit",
                                              "min",
                                              "max",
                                              "reference",
                                              "fraction_of_peak",
                                              "no_outlier_nodes",
                                              "require_valid",
                                              "waived",
                                              "note",
                                              "source"};
  for (const auto& [k, v] : j.items()) {
    if (!known.count(k)) {
      rd.fail(
          "unknown key \"" + k +
          "\" (expected one of: id, benchmark, axes, metric, unit, min, max, "
          "reference, fraction_of_peak, no_outlier_nodes, require_valid, waived, note, source)");
    }
  }
  rule r;
  r.require_valid = default_require_valid;
  r.max_deviation = default_max_deviation;
  if (!j.contains("benchmark")) rd.fail("missing \"benchmark\"");
  r.benchmark = rd.string(j["benchmark"], "benchmark");
  if (!std::regex_match(r.benchmark, benchmark_name_re())) {
    rd.fail("benchmark \"" + r.benchmark + "\" is not of the form group/name");
  }
  if (!j.contains("metric")) rd.fail("missing \"metric\"");
  r.metric = rd.string(j["metric"], "metric");
  if (!std::regex_match(r.metric, metric_pattern_re()))
    rd.fail("metric \"" + r.metric + "\" is not a metric name (a-z, 0-9, _; * as a pattern)");
  if (j.contains("id")) r.id = j["id"].get<std::string>();
  if (j.contains("axes")) {
    check_axes_object(rd, j["axes"], "axes");
    r.axes = j["axes"];
  }
  if (j.contains("unit")) r.unit = rd.string(j["unit"], "unit");
  if (j.contains("note")) r.note = rd.string(j["note"], "note");
  if (j.contains("source")) rd.string(j["source"], "source");
  if (j.contains("waived")) {
    r.waived = rd.string(j["waived"], "waived");
    if (r.waived.empty()) rd.fail("\"waived\" needs a reason");
  }
  if (j.contains("require_valid")) {
    if (!j["require_valid"].is_boolean()) rd.fail("require_valid: expected true or false");
    r.require_valid = j["require_valid"].get<bool>();
  }

  int kinds = 0;
  if (j.contains("min") || j.contains("max")) {
    ++kinds;
    r.kind = rule_kind::bounds;
    if (j.contains("min")) r.min = rd.number(j["min"], "min");
    if (j.contains("max")) r.max = rd.number(j["max"], "max");
    if (r.min && r.max && *r.min > *r.max)
      rd.fail("min " + format_number(*r.min) + " > max " + format_number(*r.max));
  }
  if (j.contains("reference")) {
    ++kinds;
    r.kind = rule_kind::reference;
    const json& ref = j["reference"];
    json value, lower, upper;
    if (ref.is_array()) {
      // ReFrame's form: [reference, lower threshold, upper threshold(, unit)].
      if (ref.size() < 3 || ref.size() > 4)
        rd.fail("reference: expected [value, lower, upper] or [value, lower, upper, unit]");
      value = ref[0];
      lower = ref[1];
      upper = ref[2];
      if (ref.size() == 4) {
        const std::string u = rd.string(ref[3], "reference unit");
        if (!r.unit.empty() && u != r.unit)
          rd.fail("reference unit \"" + u + "\" differs from unit \"" + r.unit + "\"");
        r.unit = u;
      }
    } else if (ref.is_object()) {
      for (const auto& [k, v] : ref.items()) {
        if (k != "value" && k != "lower" && k != "upper")
          rd.fail("reference: unknown key \"" + k + "\" (value, lower, upper)");
      }
      if (!ref.contains("value")) rd.fail("reference: missing \"value\"");
      value = ref["value"];
      lower = ref.value("lower", json());
      upper = ref.value("upper", json());
    } else {
      rd.fail("reference: expected [value, lower, upper] or {\"value\", \"lower\", \"upper\"}");
    }
    r.ref = rd.number(value, "reference value");
    if (!(r.ref > 0)) rd.fail("reference value must be positive (thresholds are fractions of it)");
    r.lower = rd.optional_number(lower, "reference lower threshold");
    r.upper = rd.optional_number(upper, "reference upper threshold");
    if (!r.lower && !r.upper)
      rd.fail("reference: lower and upper thresholds are both null: nothing to check");
    if (r.lower && (*r.lower > 0 || *r.lower < -1))
      rd.fail("reference lower threshold must be in [-1, 0] (e.g. -0.1 for 10% below)");
    if (r.upper && *r.upper < 0)
      rd.fail("reference upper threshold must be >= 0 (e.g. 0.1 for 10% above)");
  }
  if (j.contains("fraction_of_peak")) {
    ++kinds;
    r.kind = rule_kind::fraction_of_peak;
    const json& f = j["fraction_of_peak"];
    if (!f.is_object())
      rd.fail(
          "fraction_of_peak: expected an object {\"min\": 0.8, \"peak\": N | \"peak_metric\": "
          "NAME}");
    for (const auto& [k, v] : f.items()) {
      if (k != "min" && k != "peak" && k != "peak_metric" && k != "peak_benchmark" &&
          k != "peak_axes" && k != "peak_source") {
        rd.fail("fraction_of_peak: unknown key \"" + k +
                "\" (min, peak, peak_source, peak_metric, peak_benchmark, peak_axes)");
      }
    }
    if (!f.contains("min"))
      rd.fail("fraction_of_peak: missing \"min\" (the smallest acceptable fraction, e.g. 0.8)");
    r.min_fraction = rd.number(f["min"], "fraction_of_peak.min");
    if (!(r.min_fraction > 0 && r.min_fraction <= 1.5))
      rd.fail("fraction_of_peak.min must be in (0, 1.5]");
    const bool literal = f.contains("peak"), from_report = f.contains("peak_metric");
    if (literal == from_report)
      rd.fail(
          "fraction_of_peak: give exactly one of \"peak\" (a number) and \"peak_metric\" (a metric "
          "in the report)");
    if (literal) {
      r.peak = rd.number(f["peak"], "fraction_of_peak.peak");
      if (!(*r.peak > 0)) rd.fail("fraction_of_peak.peak must be positive");
      if (f.contains("peak_benchmark") || f.contains("peak_axes"))
        rd.fail("fraction_of_peak: peak_benchmark/peak_axes go with peak_metric");
    } else {
      r.peak_metric = rd.string(f["peak_metric"], "fraction_of_peak.peak_metric");
      if (!std::regex_match(r.peak_metric, metric_name_re()))
        rd.fail("fraction_of_peak.peak_metric is not a metric name");
      if (f.contains("peak_benchmark")) {
        r.peak_benchmark = rd.string(f["peak_benchmark"], "fraction_of_peak.peak_benchmark");
        if (!std::regex_match(r.peak_benchmark, benchmark_name_re()))
          rd.fail("fraction_of_peak.peak_benchmark is not of the form group/name");
      }
      if (f.contains("peak_axes")) {
        check_axes_object(rd, f["peak_axes"], "peak_axes");
        r.peak_axes = f["peak_axes"];
      }
    }
    if (f.contains("peak_source")) rd.string(f["peak_source"], "fraction_of_peak.peak_source");
  }
  if (j.contains("no_outlier_nodes")) {
    ++kinds;
    r.kind = rule_kind::no_outlier_nodes;
    const json& o = j["no_outlier_nodes"];
    if (o.is_boolean()) {
      if (!o.get<bool>()) rd.fail("no_outlier_nodes: false checks nothing (remove the rule)");
    } else if (o.is_object()) {
      for (const auto& [k, v] : o.items()) {
        if (k != "max_deviation")
          rd.fail("no_outlier_nodes: unknown key \"" + k + "\" (max_deviation)");
      }
      if (o.contains("max_deviation"))
        r.max_deviation = rd.number(o["max_deviation"], "no_outlier_nodes.max_deviation");
    } else {
      rd.fail("no_outlier_nodes: expected true or {\"max_deviation\": 0.1}");
    }
    if (!(r.max_deviation > 0 && r.max_deviation < 1))
      rd.fail("no_outlier_nodes.max_deviation must be in (0, 1)");
    // Nodes are compared per configuration and metric; a pattern would mix metrics.
    if (r.metric.find('*') != std::string::npos)
      rd.fail("no_outlier_nodes: give one metric, not a pattern (\"" + r.metric + "\")");
  }
  if (kinds != 1) {
    rd.fail(kinds == 0
                ? "no check: give one of min/max, reference, fraction_of_peak, no_outlier_nodes"
                : "more than one check: give exactly one of min/max, reference, fraction_of_peak, "
                  "no_outlier_nodes (write several rules)");
  }
  return r;
}

std::string axes_text(const json& axes) {
  std::string out;
  for (const auto& [k, v] : axes.items())
    out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// A result's value worse than another's, in the metric's direction.
bool worse(double a, double b, bool higher_is_better) {
  return higher_is_better ? a < b : a > b;
}

struct judged {
  const result_view* result = nullptr;
  double value = std::nan("");
  double shown = std::nan("");  // what to print (the fraction, for fraction_of_peak)
  bool ok = true;
  std::string why;
};

}  // namespace

std::string_view to_string(verdict_status s) {
  switch (s) {
    case verdict_status::pass:
      return "PASS";
    case verdict_status::fail:
      return "FAIL";
    case verdict_status::waived:
      return "WAIVED";
  }
  return "?";
}

std::string rule::expectation() const {
  switch (kind) {
    case rule_kind::bounds:
      if (min && max) return "in [" + format_number(*min) + ", " + format_value(*max, unit) + "]";
      if (min) return ">= " + format_value(*min, unit);
      return "<= " + format_value(*max, unit);
    case rule_kind::reference: {
      std::string s;
      if (lower) s += ">= " + format_value(ref * (1 + *lower), unit);
      if (upper)
        s += std::string(s.empty() ? "" : " and ") + "<= " + format_value(ref * (1 + *upper), unit);
      s += " (ref " + format_value(ref, unit) + " " + (lower ? format_percent(*lower) : "-inf") +
           "/" + (upper ? format_percent(*upper) : "+inf") + ")";
      return s;
    }
    case rule_kind::fraction_of_peak:
      if (peak)
        return ">= " + format_number(min_fraction * 100) + "% of peak " + format_value(*peak, unit);
      return ">= " + format_number(min_fraction * 100) + "% of " +
             (peak_benchmark.empty() ? "" : peak_benchmark + " ") + peak_metric;
    case rule_kind::no_outlier_nodes:
      return "no node worse than the median of the nodes by more than " +
             format_number(max_deviation * 100) + "%";
  }
  return "";
}

baseline parse_baseline(std::string_view text, const std::string& origin) {
  const json doc = parse_json_text(text, origin);
  if (!doc.is_object())
    throw user_error(origin + ": expected a JSON object (an infrabench baseline)");
  const auto ver = doc.find("infrabench_baseline");
  if (ver == doc.end()) {
    if (doc.value("tool", json()) == "infrabench") {
      throw user_error(
          origin +
          ": this is a report, not a baseline (make one with: infrabench baseline create " +
          origin + " -o FILE)");
    }
    throw user_error(origin + ": not an infrabench baseline (no \"infrabench_baseline\": 1)");
  }
  if (!ver->is_number_integer())
    throw user_error(origin + ": \"infrabench_baseline\" must be the format version, an integer");
  if (ver->get<long long>() > baseline_format_version) {
    throw user_error(origin + ": baseline format " + ver->dump() +
                     " is newer than this infrabench reads (" +
                     std::to_string(baseline_format_version) + "): upgrade infrabench");
  }
  if (ver->get<long long>() < 1)
    throw user_error(origin + ": baseline format " + ver->dump() + " does not exist");
  static const std::set<std::string> known = {
      "$schema",     "infrabench_baseline", "name",       "description", "source",   "machine",
      "created_utc", "created_from",        "derivation", "notes",       "defaults", "rules",
      "suite"};
  for (const auto& [k, v] : doc.items()) {
    if (!known.count(k)) throw user_error(origin + ": unknown top-level key \"" + k + "\"");
  }
  baseline b;
  b.path = origin;
  auto str = [&](const char* key) {
    const auto it = doc.find(key);
    if (it == doc.end()) return std::string();
    if (!it->is_string()) throw user_error(origin + ": \"" + key + "\" must be a string");
    return it->get<std::string>();
  };
  b.name = str("name");
  b.description = str("description");
  b.source = str("source");
  str("machine");
  b.suite = str("suite");
  if (doc.contains("suite")) {
    // Refused now rather than when `accept` runs it: a missing built-in or file, or a bad suite.
    try {
      (void)load_suite(suite_to_run(b));
    } catch (const user_error& e) {
      throw user_error(origin + ": \"suite\": " + e.what());
    }
  }
  bool default_require_valid = false;
  double default_max_dev = 0.1;
  if (const auto d = doc.find("defaults"); d != doc.end()) {
    if (!d->is_object()) throw user_error(origin + ": \"defaults\" must be an object");
    for (const auto& [k, v] : d->items()) {
      if (k == "require_valid") {
        if (!v.is_boolean())
          throw user_error(origin + ": defaults.require_valid must be true or false");
        default_require_valid = v.get<bool>();
      } else if (k == "max_deviation") {
        if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 1)) {
          throw user_error(origin + ": defaults.max_deviation must be a number in (0, 1)");
        }
        default_max_dev = v.get<double>();
      } else {
        throw user_error(origin + ": defaults: unknown key \"" + k +
                         "\" (require_valid, max_deviation)");
      }
    }
  }
  const auto rules = doc.find("rules");
  if (rules == doc.end() || !rules->is_array())
    throw user_error(origin + ": missing \"rules\" (an array)");
  if (rules->empty()) throw user_error(origin + ": \"rules\" is empty: nothing to check");
  std::map<std::string, int> ids;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    rule r = parse_rule((*rules)[i], i, origin, default_require_valid, default_max_dev);
    if (!r.id.empty()) {
      if (ids[r.id]++)
        throw user_error(origin + ": rules[" + std::to_string(i) + "]: id \"" + r.id +
                         "\" used twice");
    }
    b.rules.push_back(std::move(r));
  }
  for (auto& r : b.rules) {
    if (!r.id.empty()) continue;
    std::string id = r.benchmark;
    const std::string ax = axes_text(r.axes);
    if (!ax.empty()) id += "[" + ax + "]";
    id += ":" + r.metric;
    if (r.kind == rule_kind::no_outlier_nodes) id += ":outliers";
    if (r.kind == rule_kind::fraction_of_peak) id += ":peak";
    std::string unique = id;
    for (int n = 2; ids.count(unique); ++n) unique = id + "#" + std::to_string(n);
    ids[unique] = 1;
    r.id = unique;
  }
  return b;
}

std::string suite_to_run(const baseline& b) {
  if (b.suite.empty()) return "";
  const bool file = b.suite.find('/') != std::string::npos || b.suite.ends_with(".json");
  if (!file || std::filesystem::path(b.suite).is_absolute()) return b.suite;
  return (std::filesystem::path(b.path).parent_path() / b.suite).lexically_normal().string();
}

baseline load_baseline(const std::string& path) {
  return parse_baseline(read_text_file(path, "baseline"), path);
}

void check_benchmarks_known(const baseline& b, const std::set<std::string>& known,
                            const report_view* report) {
  std::set<std::string> in_report;
  if (report) {
    for (const auto& r : report->results) in_report.insert(r.benchmark);
  }
  for (const auto& r : b.rules) {
    for (const std::string& name : {r.benchmark, r.peak_benchmark}) {
      if (name.empty() || known.count(name) || in_report.count(name)) continue;
      throw user_error(b.path + ": rule \"" + r.id + "\": unknown benchmark \"" + name +
                       "\" (not compiled into this infrabench" +
                       (report ? " and not in the report" : "") + "; see infrabench list)");
    }
  }
}

bool metric_matches(std::string_view pattern, std::string_view name) {
  // Glob with `*` only: greedy match with backtracking to the last star.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

std::string json_axis_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// One rule's axes (or peak_axes) against what its benchmark can take: "" when fine, else the
// problem in words.
std::string axes_problem(const std::string& bench, const json& axes, const benchmark_catalog& known,
                         const report_view* report) {
  const auto cat = known.find(bench);
  std::vector<const result_view*> results;
  if (report) {
    for (const auto& res : report->results) {
      if (res.benchmark == bench) results.push_back(&res);
    }
  }
  if (cat == known.end() && results.empty()) return "";  // check_benchmarks_known's to refuse
  for (const auto& item : axes.items()) {
    // Named copies, not structured bindings: C++20 clang (the fuzz build) cannot capture those.
    const std::string k = item.key();
    const json& v = item.value();
    const json one = {{k, v}};
    // What the report holds is accepted as it is: it may come from another build.
    if (std::any_of(results.begin(), results.end(),
                    [&](const result_view* r) { return r->axes_match(one); }))
      continue;
    const std::string text = json_axis_text(v);
    if (cat == known.end()) {
      std::set<std::string> names, values;
      for (const auto* r : results) {
        for (const auto& [name, value] : r->axes) names.insert(name);
        if (const auto it = r->axes.find(k); it != r->axes.end()) {
          const auto d = r->axes_display.find(k);
          values.insert(d != r->axes_display.end() ? d->second : json_axis_text(it->second));
        }
      }
      std::string list;
      for (const auto& n : values.empty() ? names : values) list += (list.empty() ? "" : ", ") + n;
      if (values.empty())
        return "axis \"" + k + "\" does not exist on " + bench +
               " (its axes in the report: " + (list.empty() ? "none" : list) + ")";
      return "no result of " + bench + " has " + k + "=" + text + " (the report has: " + list + ")";
    }
    const auto& decl = cat->second;
    const auto ax =
        std::find_if(decl.begin(), decl.end(), [&](const axis& a) { return a.name == k; });
    if (ax == decl.end()) {
      std::string list;
      for (const auto& a : decl) list += (list.empty() ? "" : ", ") + a.name;
      return "axis \"" + k + "\" does not exist on " + bench +
             " (its axes: " + (list.empty() ? "none" : list) + ")";
    }
    try {
      (void)parse_axis_value(*ax, text);  // checks choices and bounds, too
    } catch (const user_error& e) {
      return k + "=" + text + " is not a value " + bench + " can run: " + e.what();
    }
  }
  return "";
}

}  // namespace

void check_rule_axes(const baseline& b, const benchmark_catalog& known, const report_view* report) {
  for (const auto& r : b.rules) {
    std::string why = axes_problem(r.benchmark, r.axes, known, report);
    if (why.empty() && !r.peak_benchmark.empty())
      why = axes_problem(r.peak_benchmark, r.peak_axes, known, report);
    if (why.empty() && r.kind == rule_kind::fraction_of_peak && r.peak_benchmark.empty() &&
        !r.peak_axes.empty())
      why = axes_problem(r.benchmark, r.peak_axes, known, report);
    if (!why.empty()) {
      throw user_error(b.path + ": rule \"" + r.id + "\": " + why +
                       " (the rule would match nothing and be WAIVED)");
    }
  }
}

namespace {

// Refuses a rule whose metric the benchmark does not produce, judging from its passed results
// (a benchmark skipped everywhere cannot tell: its rules are waived instead).
void check_metric_known(const baseline& b, const rule& r, const std::string& benchmark,
                        const std::string& metric, const report_view& report) {
  std::set<std::string> seen;
  bool any_passed = false, found = false;
  for (const auto& res : report.results) {
    if (res.benchmark != benchmark || res.status != "passed" || res.metrics.empty()) continue;
    any_passed = true;
    for (const auto& m : res.metrics) {
      seen.insert(m.name);
      if (metric_matches(metric, m.name)) {
        found = true;
        if (!r.unit.empty() && metric == r.metric && m.unit != r.unit) {
          throw user_error(b.path + ": rule \"" + r.id + "\": unit \"" + r.unit + "\" but " +
                           benchmark + " reports " + m.name + " in \"" + m.unit + "\"");
        }
      }
    }
  }
  if (any_passed && !found) {
    std::string names;
    for (const auto& n : seen) names += (names.empty() ? "" : ", ") + n;
    throw user_error(b.path + ": rule \"" + r.id + "\": unknown metric \"" + metric + "\" (" +
                     benchmark + " reports: " + names + ")" +
                     (metric.find('*') != std::string::npos ? ": the pattern matches none" : ""));
  }
}

std::string where_of(const report_view& report, const result_view& res) {
  std::string s = res.axes_label();
  if (report.multi_node()) s += std::string(s.empty() ? "" : " ") + "on " + report.node_of(res);
  return s.empty() ? res.benchmark : s;
}

// The peak for `res`: a literal, a metric of the same result, or another benchmark's result.
// Another benchmark's result must be one configuration: after peak_axes, the axes both benchmarks
// have (threads) must agree with `res`, and the same node is preferred in multi-node reports.
// More than one configuration left (gemm/cpu_peak has one per ISA) is refused rather than
// silently taking the first.
double find_peak(const baseline& b, const rule& r, const report_view& report,
                 const result_view& res, std::string* unit) {
  if (r.peak) return *r.peak;
  if (r.peak_benchmark.empty()) {
    if (const auto* m = res.find_metric(r.peak_metric)) {
      *unit = m->unit;
      return m->value;
    }
    return std::nan("");
  }
  std::vector<const result_view*> candidates;
  for (const auto& p : report.results) {
    if (p.benchmark != r.peak_benchmark || p.status != "passed" || !p.axes_match(r.peak_axes) ||
        !p.find_metric(r.peak_metric))
      continue;
    bool shared_ok = true;
    for (const auto& [k, v] : p.axes) {
      if (r.peak_axes.contains(k)) continue;
      const auto mine = res.axes.find(k);
      if (mine != res.axes.end() && !p.axes_match(json{{k, mine->second}})) shared_ok = false;
    }
    if (shared_ok) candidates.push_back(&p);
  }
  if (candidates.empty()) return std::nan("");
  std::vector<const result_view*> same_node;
  for (const auto* p : candidates) {
    if (p->host == res.host && p->rank == res.rank) same_node.push_back(p);
  }
  const auto& pool = same_node.empty() ? candidates : same_node;
  std::set<std::string> configs;
  std::string listed;
  for (const auto* p : pool) {
    if (configs.insert(p->config_key()).second)
      listed += (listed.empty() ? "" : "; ") + p->axes_label();
  }
  if (configs.size() > 1) {
    throw user_error(b.path + ": rule \"" + r.id + "\": the peak is ambiguous: " +
                     std::to_string(configs.size()) + " configurations of " + r.peak_benchmark +
                     " match for " + (res.axes_label().empty() ? res.benchmark : res.axes_label()) +
                     " (" + listed + "); pin one with \"peak_axes\"");
  }
  const auto* m = pool.front()->find_metric(r.peak_metric);
  *unit = m->unit;
  return m->value;
}

verdict evaluate_outliers(const rule& r, const report_view& report,
                          const std::vector<const result_view*>& matched) {
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  std::map<std::string, std::vector<const result_view*>> by_config;
  std::vector<std::string> order;
  for (const auto* res : matched) {
    if (res->status != "passed" || !res->find_metric(r.metric)) continue;
    if (!by_config.count(res->config_key())) order.push_back(res->config_key());
    by_config[res->config_key()].push_back(res);
  }
  std::size_t judged_configs = 0;
  std::string worst_text;
  double worst_dev = -1;
  for (const auto& key : order) {
    const auto& rs = by_config[key];
    if (rs.size() < 2) continue;
    ++judged_configs;
    std::vector<double> values;
    for (const auto* res : rs) values.push_back(res->find_metric(r.metric)->value);
    const bool hib = rs.front()->find_metric(r.metric)->higher_is_better;
    const double med = median_of(values);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double dev = (hib ? -1 : 1) * (values[i] - med) / std::fabs(med);
      if (dev > worst_dev) {
        worst_dev = dev;
        worst_text = report.node_of(*rs[i]) + " " +
                     format_percent((values[i] - med) / std::fabs(med)) + " vs median";
      }
    }
    const auto unit = rs.front()->find_metric(r.metric)->unit;
    for (std::size_t i : outliers_worse_than_median(values, hib, r.max_deviation)) {
      v.failing.push_back(report.node_of(*rs[i]) + ": " + format_value(values[i], unit) + " (" +
                          format_percent((values[i] - med) / std::fabs(med)) + " vs median " +
                          format_value(med, unit) + ") at " + rs.front()->config_label());
    }
  }
  if (judged_configs == 0) {
    v.status = verdict_status::waived;
    v.detail = matched.empty() ? "no result of " + r.benchmark + " matches"
                               : "single-node report: no nodes to compare";
    v.measured = "-";
    return v;
  }
  v.measured = "worst: " + worst_text;
  v.status = v.failing.empty() ? verdict_status::pass : verdict_status::fail;
  if (!v.failing.empty()) v.detail = "outlier nodes: " + std::to_string(v.failing.size());
  v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(judged_configs) +
              " configuration(s) across " + std::to_string(report.nodes().size()) + " nodes";
  return v;
}

verdict evaluate_rule(const baseline& b, const rule& r, const report_view& report) {
  check_metric_known(b, r, r.benchmark, r.metric, report);
  if (r.kind == rule_kind::fraction_of_peak && !r.peak_metric.empty()) {
    check_metric_known(b, r, r.peak_benchmark.empty() ? r.benchmark : r.peak_benchmark,
                       r.peak_metric, report);
  }
  std::vector<const result_view*> matched;
  for (const auto& res : report.results) {
    if (res.benchmark == r.benchmark && res.axes_match(r.axes)) matched.push_back(&res);
  }
  verdict v;
  v.r = &r;
  v.expected = r.expectation();
  if (!r.waived.empty()) {
    v.status = verdict_status::waived;
    v.measured = "-";
    v.detail = "waived by the baseline: " + r.waived;
    return v;
  }
  if (matched.empty()) {
    v.status = verdict_status::waived;
    v.missing = true;
    v.measured = "-";
    const std::string ax = axes_text(r.axes);
    v.detail = "not in the report: no result of " + r.benchmark + (ax.empty() ? "" : " with " + ax);
    return v;
  }
  if (r.kind == rule_kind::no_outlier_nodes) return evaluate_outliers(r, report, matched);

  std::vector<judged> items;
  std::vector<std::string> waived_why;
  std::string unit;
  bool higher_is_better = true;
  for (const auto* res : matched) {
    if (res->status == "skipped") {
      waived_why.push_back("skipped: " + res->reason);
      continue;
    }
    if (res->status == "failed") {
      judged jd;
      jd.result = res;
      jd.ok = false;
      jd.why = where_of(report, *res) + ": benchmark failed: " + res->reason;
      items.push_back(jd);
      continue;
    }
    // A pattern judges every metric it matches (each GPU's column must pass on its own).
    const bool pattern = r.metric.find('*') != std::string::npos;
    std::vector<const metric_view*> ms;
    if (pattern) {
      for (const auto& x : res->metrics) {
        if (metric_matches(r.metric, x.name)) ms.push_back(&x);
      }
    } else if (const metric_view* x = res->find_metric(r.metric)) {
      ms.push_back(x);
    }
    if (ms.empty()) {
      waived_why.push_back(where_of(report, *res) + ": no " + r.metric + " in this result");
      continue;
    }
    for (const metric_view* m : ms) {
      const std::string where = where_of(report, *res) + (pattern ? " " + m->name : "");
      judged jd;
      jd.result = res;
      if (!std::isfinite(m->value)) {
        waived_why.push_back(where + ": " + m->name + " is not a number");
        continue;
      }
      unit = m->unit;
      higher_is_better = m->higher_is_better;
      jd.value = jd.shown = m->value;
      switch (r.kind) {
        case rule_kind::bounds:
          jd.ok = (!r.min || m->value >= *r.min) && (!r.max || m->value <= *r.max);
          break;
        case rule_kind::reference:
          jd.ok = (!r.lower || m->value >= r.ref * (1 + *r.lower)) &&
                  (!r.upper || m->value <= r.ref * (1 + *r.upper));
          break;
        case rule_kind::fraction_of_peak: {
          if (!m->higher_is_better) {
            throw user_error(b.path + ": rule \"" + r.id +
                             "\": fraction_of_peak needs a higher-is-better metric; " + r.metric +
                             " is lower-is-better");
          }
          std::string peak_unit = unit;
          const double peak = find_peak(b, r, report, *res, &peak_unit);
          if (!(peak > 0)) {
            waived_why.push_back(where + ": no peak " + r.peak_metric + " in the report");
            continue;
          }
          if (peak_unit != unit) {
            throw user_error(b.path + ": rule \"" + r.id + "\": peak is in " + peak_unit + ", " +
                             r.metric + " in " + unit);
          }
          jd.shown = m->value / peak;
          jd.ok = jd.shown >= r.min_fraction;
          break;
        }
        case rule_kind::no_outlier_nodes:
          break;
      }
      if (jd.ok && r.require_valid && !res->valid) {
        jd.ok = false;
        std::string reasons;
        for (const auto& why : res->invalid_reasons) reasons += (reasons.empty() ? "" : "; ") + why;
        jd.why = where + ": result is INVALID (" + reasons + ") and the rule requires a valid one";
      } else if (!jd.ok) {
        jd.why =
            where + ": " +
            (r.kind == rule_kind::fraction_of_peak ? format_number(jd.shown * 100) + "% of peak (" +
                                                         format_value(jd.value, unit) + ")"
                                                   : format_value(jd.value, unit));
      }
      items.push_back(jd);
    }
  }
  if (items.empty()) {
    v.status = verdict_status::waived;
    v.measured = "-";
    std::set<std::string> uniq(waived_why.begin(), waived_why.end());
    for (const auto& w : uniq) v.detail += (v.detail.empty() ? "" : "; ") + w;
    return v;
  }
  // The worst value shown (a failed benchmark counts as worst of all).
  const judged* shown = nullptr;
  for (const auto& jd : items) {
    if (!shown)
      shown = &jd;
    else if (!std::isfinite(jd.value))
      shown = &jd;
    else if (std::isfinite(shown->value) && worse(jd.shown, shown->shown, higher_is_better))
      shown = &jd;
    if (!std::isfinite(shown->value)) break;
  }
  if (!std::isfinite(shown->value))
    v.measured = "failed";
  else if (r.kind == rule_kind::fraction_of_peak)
    v.measured = format_number(shown->shown * 100) + "% (" + format_value(shown->value, unit) + ")";
  else
    v.measured = format_value(shown->value, unit);
  if (items.size() > 1) v.measured += " (worst of " + std::to_string(items.size()) + ")";
  bool all_ok = true;
  std::size_t invalid = 0;
  for (const auto& jd : items) {
    if (!jd.ok) {
      all_ok = false;
      v.failing.push_back(jd.why);
    }
    if (jd.result && jd.result->status == "passed" && !jd.result->valid) ++invalid;
  }
  v.status = all_ok ? verdict_status::pass : verdict_status::fail;
  if (!all_ok)
    v.detail =
        v.failing.front() +
        (v.failing.size() > 1 ? " (and " + std::to_string(v.failing.size() - 1) + " more)" : "");
  if (invalid > 0 && !r.require_valid) {
    v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(invalid) + " of " +
                std::to_string(items.size()) + " result(s) marked INVALID (noisy or unverified)";
  }
  if (!waived_why.empty())
    v.detail += std::string(v.detail.empty() ? "" : "; ") + std::to_string(waived_why.size()) +
                " not judged: " + waived_why.front();
  return v;
}

}  // namespace

std::vector<verdict> evaluate(const baseline& b, const report_view& report) {
  std::vector<verdict> out;
  out.reserve(b.rules.size());
  for (const auto& r : b.rules) out.push_back(evaluate_rule(b, r, report));
  return out;
}

verdict_counts count(const std::vector<verdict>& v) {
  verdict_counts c;
  for (const auto& x : v) {
    if (x.status == verdict_status::pass)
      ++c.pass;
    else if (x.status == verdict_status::fail)
      ++c.fail;
    else
      ++c.waived;
  }
  return c;
}

void print_verdicts(std::ostream& out, const baseline& b, const report_view& report,
                    const std::vector<verdict>& verdicts) {
  out << "baseline " << (b.name.empty() ? b.path : b.name + " (" + b.path + ")") << ": "
      << b.rules.size() << " rules against " << (report.path.empty() ? report.label : report.path);
  if (!report.primary_hostname().empty()) out << " (host " << report.primary_hostname();
  if (report.multi_node()) out << ", " << report.nodes().size() << " nodes";
  if (!report.primary_hostname().empty()) out << ", " << report.started_utc << ")";
  out << "\n";
  if (b.source == "datasheet" || b.source == "template") {
    out << "  note: this baseline's expectations come from datasheets (" << b.source
        << "), not from measurements\n";
  }
  std::vector<std::vector<std::string>> rows = {
      {"verdict", "rule", "measured", "expected", "detail"}};
  for (const auto& v : verdicts) {
    rows.push_back(
        {std::string(to_string(v.status)), v.r->id, v.measured, v.expected, one_line(v.detail)});
  }
  print_text_table(out, rows, {false, false, true, false, false});
  for (const auto& v : verdicts) {
    if (v.status != verdict_status::fail || v.failing.size() < 2) continue;
    out << "  " << v.r->id << " failed at:\n";
    for (const auto& f : v.failing) out << "    " << one_line(f) << "\n";
  }
  const auto missing = static_cast<std::size_t>(
      std::count_if(verdicts.begin(), verdicts.end(), [](const verdict& v) { return v.missing; }));
  if (missing > 0) {
    out << "  " << missing << " rule(s) waived because the report has no result for their "
        << "configuration: "
        << (b.suite.empty()
                ? std::string("run the suite this baseline was made for (it names "
                              "none: add \"suite\" to it)")
                : "this baseline was made for suite " + b.suite + ": run infrabench run --suite " +
                      suite_to_run(b) + " (or infrabench accept --baseline " + b.path + ")")
        << "\n";
  }
  const auto c = count(verdicts);
  out << "check: " << c.pass << " passed, " << c.fail << " failed, " << c.waived << " waived -> "
      << (c.fail ? "FAIL" : "PASS")
      << (c.pass == 0 && c.fail == 0 ? " (no rule could be checked)" : "") << "\n";
}

std::string junit_xml(const baseline& b, const report_view& report,
                      const std::vector<verdict>& verdicts) {
  const auto c = count(verdicts);
  std::ostringstream x;
  const std::string suite = "infrabench check " + (b.name.empty() ? b.path : b.name);
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"infrabench\" tests=\"" << verdicts.size() << "\" failures=\"" << c.fail
    << "\" errors=\"0\" skipped=\"" << c.waived << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size()
    << "\" failures=\"" << c.fail << "\" errors=\"0\" skipped=\"" << c.waived << "\" timestamp=\""
    << xml_escape(report.started_utc) << "\" hostname=\"" << xml_escape(report.primary_hostname())
    << "\">\n";
  x << "    <properties>\n      <property name=\"report\" value=\"" << xml_escape(report.path)
    << "\"/>\n"
    << "      <property name=\"baseline\" value=\"" << xml_escape(b.path) << "\"/>\n";
  if (!report.git_commit().empty())
    x << "      <property name=\"git_commit\" value=\"" << xml_escape(report.git_commit())
      << "\"/>\n";
  x << "    </properties>\n";
  for (const auto& v : verdicts) {
    x << "    <testcase classname=\"" << xml_escape(v.r->benchmark) << "\" name=\""
      << xml_escape(v.r->id) << "\" time=\"0\">\n";
    const std::string text = "measured " + v.measured + ", expected " + v.expected +
                             (v.detail.empty() ? "" : "; " + v.detail);
    if (v.status == verdict_status::fail) {
      x << "      <failure message=\"" << xml_escape(one_line(text)) << "\" type=\"threshold\">";
      for (const auto& f : v.failing) x << xml_escape(f) << "\n";
      x << "</failure>\n";
    } else if (v.status == verdict_status::waived) {
      x << "      <skipped message=\"" << xml_escape(one_line(text)) << "\"/>\n";
    } else {
      x << "      <system-out>" << xml_escape(text) << "</system-out>\n";
    }
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

json create_baseline(const std::vector<report_view>& reports, const create_options& opt) {
  struct acc {
    const result_view* first = nullptr;
    std::string metric, unit;
    bool higher = true;
    std::vector<double> valid_values, all_values;
    std::vector<double> within;  // robust CV of each result's samples
  };
  std::map<std::string, acc> groups;
  std::vector<std::string> order;
  std::size_t passed = 0;
  for (const auto& rep : reports) {
    for (const auto& res : rep.results) {
      if (res.status != "passed") continue;
      ++passed;
      for (const auto& m : res.metrics) {
        if (!std::isfinite(m.value)) continue;
        const std::string key = res.config_key() + "#" + m.name;
        auto& a = groups[key];
        if (!a.first) {
          order.push_back(key);
          a.first = &res;
          a.metric = m.name;
          a.unit = m.unit;
          a.higher = m.higher_is_better;
        }
        a.all_values.push_back(m.value);
        if (res.valid) a.valid_values.push_back(m.value);
        if (m.samples.size() >= 3) {
          const double w = robust_cv_of(m.samples);
          if (std::isfinite(w)) a.within.push_back(w);
        }
      }
    }
  }
  std::vector<const report_view*> ptrs;
  for (const auto& r : reports) ptrs.push_back(&r);
  const auto varying = varying_axes(ptrs);
  if (passed == 0 || order.empty())
    throw user_error(
        "baseline create: the reports hold no passed result with a metric to derive rules from");
  json rules = json::array();
  for (const auto& key : order) {
    const auto& a = groups[key];
    const bool from_valid = !a.valid_values.empty();
    const auto& values = from_valid ? a.valid_values : a.all_values;
    const double med = median_of(values);
    if (!(med > 0)) continue;  // relative tolerances need a positive reference
    double between = 0;
    if (values.size() >= 3)
      between = robust_cv_of(values);
    else if (values.size() == 2)
      between = std::fabs(values[0] - values[1]) / (values[0] + values[1]);
    if (!std::isfinite(between)) between = 0;
    const double within = a.within.empty() ? 0 : median_of(a.within);
    const double spread = std::max(between, std::isfinite(within) ? within : 0.0);
    double tol = std::min(opt.cap, std::max(opt.floor, opt.k * spread));
    tol = std::ceil(tol * 100 - 1e-9) / 100;  // whole percent, rounded up
    json axes = json::object();
    for (const auto& [k, v] : a.first->axes) axes[k] = v;
    // Four significant digits: more would pretend a precision the spread does not have.
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4g", med);
    const double ref = std::strtod(buf, nullptr);
    json reference = a.higher ? json::array({ref, -std::min(tol, 1.0), nullptr})
                              : json::array({ref, nullptr, tol});
    char note[256];
    std::snprintf(note, sizeof(note),
                  "median of %zu %sresult(s); spread %.1f%% between results, %.1f%% within; "
                  "tolerance min(%.0f%%, max(%.0f%%, %.1f x spread))",
                  values.size(), from_valid ? "valid " : "(INVALID, none valid) ", between * 100,
                  within * 100, opt.cap * 100, opt.floor * 100, opt.k);
    // The id names the benchmark and the axes that vary between its configurations (the full set
    // of axes is in "axes"), so it stays readable.
    std::string id = a.first->benchmark;
    std::string compact;
    for (const auto& [k, v] : a.first->axes) {
      if (!varying.at(a.first->benchmark).count(k)) continue;
      const auto d = a.first->axes_display.find(k);
      compact += (compact.empty() ? "" : ",") + k + "=" +
                 (d != a.first->axes_display.end() ? d->second : v.dump());
    }
    if (!compact.empty()) id += "[" + compact + "]";
    id += ":" + a.metric;
    json rj = {
        {"id", id},       {"benchmark", a.first->benchmark}, {"axes", axes}, {"metric", a.metric},
        {"unit", a.unit}, {"reference", reference},          {"note", note}};
    rules.push_back(rj);
  }
  if (rules.empty())
    throw user_error("baseline create: no metric with a positive value to derive rules from");
  json sources = json::array();
  for (const auto& rep : reports) {
    sources.push_back({{"report", rep.path},
                       {"host", rep.primary_hostname()},
                       {"started_utc", rep.started_utc},
                       {"git_commit", rep.git_commit()}});
  }
  char deriv[384];
  std::snprintf(deriv, sizeof(deriv),
                "per configuration and metric: reference = median over results; tolerance "
                "(one-sided, in the metric's bad "
                "direction) = min(%.2f, max(%.2f, %.1f x spread)), spread = max(robust CV "
                "between results, median robust CV of samples)",
                opt.cap, opt.floor, opt.k);
  // The suite the reports ran, when they all ran the same built-in one: `check` names it.
  std::string suite;
  bool same_suite = true;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto it = reports[i].run.find("suite");
    const json ran = it != reports[i].run.end() && it->is_object() ? *it : json::object();
    const std::string name = ran.value("name", ""), source = ran.value("source", "");
    if (source != "builtin" || (i > 0 && name != suite)) same_suite = false;
    if (i == 0) suite = name;
  }
  json out = {{"infrabench_baseline", baseline_format_version},
              {"name", opt.name},
              {"description", "derived by infrabench baseline create from " +
                                  std::to_string(reports.size()) + " report(s)"},
              {"source", "measured"},
              {"created_utc", utc_now_iso8601()},
              {"created_from", sources},
              {"derivation", deriv},
              {"rules", rules}};
  if (same_suite && !suite.empty()) out["suite"] = suite;
  return out;
}

}  // namespace infrabench::reports
