// The `openmetrics` format: run results and verdicts as OpenMetrics text (the Prometheus
// exposition format's standard), for the node exporter's textfile collector. `--openmetrics FILE`
// (run, check, accept) writes it atomically, as the collector needs (never half a file).
// Every value is a gauge labelled by benchmark, configuration, metric, host, rank and, for a
// result that ran on a GPU, gpu. A metric is exported in its base unit (issue 45 item 14):
// seconds, bytes, bytes per second, hertz and FLOP per second each have a family of their own
// named by the unit (`infrabench_result_seconds`), never GB/s beside ns; any other unit keeps its
// value and its name, as a label, in `infrabench_result_value`. `infrabench_build_info` names
// the build that measured, `infrabench_last_run_timestamp_seconds` when its run ended. Verdicts
// carry their rule and PASS/FAIL/WAIVED, and a check also gives each node's verdict (labelled by
// host) and each failed GPU's (host and gpu), so that a fleet alerts on the node to drain rather
// than on a rule.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/text.h"
#include "infrabench/units.h"

namespace infrabench::reports {
namespace {

using labels = std::vector<std::pair<std::string, std::string>>;

// A label value: backslash, double quote and line feed escaped (the format's only escapes);
// control characters and bytes outside ASCII become '?', so the text is always valid UTF-8.
std::string label_value(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string sample_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

void sample(std::ostream& out, const std::string& family, const labels& ls, double v) {
  out << family << "{";
  for (std::size_t i = 0; i < ls.size(); ++i)
    out << (i ? "," : "") << ls[i].first << "=\"" << label_value(ls[i].second) << "\"";
  out << "} " << sample_number(v) << "\n";
}

void family(std::ostream& out, const std::string& name, const std::string& help,
            const std::string& type = "gauge", const std::string& unit = "") {
  out << "# TYPE " << name << " " << type << "\n";
  if (!unit.empty()) out << "# UNIT " << name << " " << unit << "\n";
  out << "# HELP " << name << " " << help << "\n";
}

labels result_labels(const result_view& r) {
  labels ls = {{"benchmark", r.benchmark},
               {"configuration", r.axes_values_label()},
               {"host", r.host},
               {"rank", std::to_string(r.rank)}};
  if (r.gpu) ls.emplace_back("gpu", std::to_string(*r.gpu));
  return ls;
}

// The base units a metric is exported in: a unit of the family of `member` (units.h: ns..s,
// B/s..TB/s, B..TiB, MHz..GHz, MFLOP/s..PFLOP/s) is converted to `member`, times `factor`, and
// goes to the family named by `suffix`.
struct base_unit {
  std::string_view member, suffix;
  double factor;
};
constexpr base_unit base_units[] = {{"s", "seconds", 1},
                                    {"B/s", "bytes_per_second", 1},
                                    {"B", "bytes", 1},
                                    {"MHz", "hertz", 1e6},
                                    {"MFLOP/s", "flops_per_second", 1e6}};

// The samples of one family, printed together (the format wants a family's samples contiguous).
struct family_samples {
  std::string unit;  // the OpenMetrics unit ("" for infrabench_result_value)
  std::vector<std::pair<labels, double>> samples;
};

// The family of a unit with no base unit here: its value as measured, its unit a label.
const std::string value_family = "infrabench_result_value";

void print_result_values(std::ostream& out, const std::vector<result_view>& results) {
  std::map<std::string, family_samples> families;
  families[value_family];  // always declared, even with no sample
  for (const auto& r : results) {
    if (r.status != status::passed) continue;
    for (const auto& m : r.metrics) {
      if (std::isnan(m.value)) continue;  // null in the report: no value to export
      labels ls = result_labels(r);
      ls.insert(ls.end(), {{"metric", m.name},
                           {"role", std::string(to_string(m.role))},
                           {"valid", r.valid ? "true" : "false"}});
      const base_unit* base = nullptr;
      std::optional<double> v;
      for (const auto& b : base_units) {
        if ((v = convert_unit(m.value, m.unit, b.member))) {
          base = &b;
          break;
        }
      }
      if (!base) {
        ls.emplace_back("unit", m.unit);
        families[value_family].samples.emplace_back(std::move(ls), m.value);
        continue;
      }
      auto& f = families["infrabench_result_" + std::string(base->suffix)];
      f.unit = base->suffix;
      f.samples.emplace_back(std::move(ls), *v * base->factor);
    }
  }
  for (const auto& [name, f] : families) {
    family(out, name,
           f.unit.empty()
               ? "a metric of a passed configuration (its median over the samples) "
                 "of a unit with no base unit here, in its unit (the unit label)"
               : "a metric of a passed configuration (its median over the samples), in " + f.unit,
           "gauge", f.unit);
    for (const auto& [ls, v] : f.samples) sample(out, name, ls, v);
  }
}

// An ISO 8601 UTC time as the report writes it ("2026-11-30T03:57:03.641Z") in seconds since the
// Unix epoch; nullopt when it is not one.
std::optional<double> utc_seconds(const std::string& text) {
  std::tm tm{};
  double seconds = 0;
  char zone = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &seconds, &zone) != 7 ||
      zone != 'Z' || !(seconds >= 0 && seconds < 61))
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t) + seconds;
}

// The build that measured (its commit, the report's schema) and when its run ended.
void print_run_facts(std::ostream& out, const model::report_view* view) {
  if (!view) return;
  family(out, "infrabench_build",
         "the infrabench build that measured: its version, commit and report schema", "info");
  std::string version = "unknown";  // the host inventory's build.version
  if (!view->inventories.empty()) {
    for (const auto& [key, text] : view->inventories.front().fields)
      if (key == "build.version") version = text;
  }
  sample(out, "infrabench_build_info",
         {{"version", version},
          {"commit", view->git_commit().empty() ? "unknown" : view->git_commit()},
          {"schema_version", view->schema_version}},
         1);
  if (const auto t = utc_seconds(view->finished_utc)) {
    family(out, "infrabench_last_run_timestamp_seconds",
           "when the run of these results ended (Unix time)", "gauge", "seconds");
    sample(out, "infrabench_last_run_timestamp_seconds", {}, *t);
  }
}

void status_family(std::ostream& out) {
  family(out, "infrabench_result_status",
         "1 for each configuration, labelled with its status (passed, skipped, failed) and "
         "validity");
}

void print_statuses(std::ostream& out, const std::vector<result_view>& results) {
  status_family(out);
  for (const auto& r : results) {
    labels ls = result_labels(r);
    ls.insert(ls.end(), {{"status", std::string(to_string(r.status))},
                         {"valid", r.valid ? "true" : "false"}});
    sample(out, "infrabench_result_status", ls, 1);
  }
}

// Per node (node_verdicts): its verdict, and each GPU its failing results name.
void print_node_verdicts(std::ostream& out, const check_outcome& v) {
  const std::string base = v.b.name.empty() ? v.b.path : v.b.name;
  const std::vector<node_verdict> nodes = node_verdicts(v.report, v.verdicts);
  family(out, "infrabench_node_verdict",
         "1 for each node of the report, labelled with its verdict (PASS, FAIL: drain it)");
  for (const auto& n : nodes) {
    sample(out, "infrabench_node_verdict",
           {{"baseline", base}, {"host", n.node}, {"verdict", n.pass ? "PASS" : "FAIL"}}, 1);
  }
  family(out, "infrabench_gpu_failed_rules",
         "rules that failed a GPU, by its results or its inventory (labelled by host and gpu)");
  for (const auto& n : nodes) {
    // A rule counts once per GPU, however many of its findings name that GPU.
    std::map<int, std::set<std::string>> rules;  // gpu -> failing rules naming it
    for (const auto& f : n.findings) {
      if (f.gpu >= 0) rules[f.gpu].insert(f.rule);
    }
    for (const auto& [gpu, named] : rules) {
      sample(out, "infrabench_gpu_failed_rules",
             {{"baseline", base}, {"host", n.node}, {"gpu", std::to_string(gpu)}},
             static_cast<double>(named.size()));
    }
  }
}

class openmetrics_printer final : public printer {
 public:
  [[nodiscard]] std::string_view name() const override { return "openmetrics"; }
  [[nodiscard]] bool prints(document d) const override {
    return d == document::run || d == document::verdicts;
  }
  void print(std::ostream& out, const run_document& d) const override {
    print_run_facts(out, d.view);
    print_result_values(out, d.results);
    print_statuses(out, d.results);
    out << "# EOF\n";
  }
  void print(std::ostream& out, const check_outcome& v) const override {
    print_run_facts(out, &v.report);
    family(out, "infrabench_verdict",
           "1 for each baseline rule, labelled with its verdict (PASS, FAIL, WAIVED)");
    for (const auto& x : v.verdicts) {
      sample(out, "infrabench_verdict",
             {{"baseline", v.b.name.empty() ? v.b.path : v.b.name},
              {"rule", x.r->id},
              {"benchmark", x.r->benchmark},
              {"metric", x.r->metric},
              {"verdict", std::string(to_string(x.status))}},
             1);
    }
    const verdict_counts c = count(v.verdicts);
    family(out, "infrabench_check_failed_rules", "rules that FAILed (0: the node passes)");
    sample(out, "infrabench_check_failed_rules",
           {{"baseline", v.b.name.empty() ? v.b.path : v.b.name}}, static_cast<double>(c.fail));
    print_node_verdicts(out, v);
    print_result_values(out, v.report.results);
    print_statuses(out, v.report.results);
    out << "# EOF\n";
  }
};

INFRABENCH_REGISTER_PRINTER(openmetrics_printer);

}  // namespace
}  // namespace infrabench::reports
