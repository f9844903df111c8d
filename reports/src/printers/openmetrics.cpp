// The `openmetrics` format: run results and verdicts as OpenMetrics text (the Prometheus
// exposition format's standard), for the node exporter's textfile collector:
//   infrabench run ... --format openmetrics > /var/lib/node_exporter/textfile/infrabench.prom.tmp
//   && mv ...tmp ...prom   (the collector must never read a half-written file)
// Every value is a gauge labelled by benchmark, configuration, metric, unit, host, rank and, for a
// result that ran on a GPU, gpu; verdicts carry their rule and PASS/FAIL/WAIVED, and a check also
// gives each node's verdict (labelled by host) and each failed GPU's (host and gpu), so that a
// fleet alerts on the node to drain rather than on a rule.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "infrabench/printer.h"
#include "infrabench/reports/baseline.h"
#include "infrabench/reports/text.h"

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

std::string number(double v) {
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
  out << "} " << number(v) << "\n";
}

void family(std::ostream& out, const std::string& name, const std::string& help) {
  out << "# TYPE " << name << " gauge\n# HELP " << name << " " << help << "\n";
}

void status_family(std::ostream& out) {
  family(out, "infrabench_result_status",
         "1 for each configuration, labelled with its status (passed, skipped, failed) and "
         "validity");
}

labels result_labels(const result_view& r) {
  labels ls = {{"benchmark", r.benchmark},
               {"configuration", r.axes_values_label()},
               {"host", r.host},
               {"rank", std::to_string(r.rank)}};
  if (r.gpu) ls.emplace_back("gpu", std::to_string(*r.gpu));
  return ls;
}

void print_results(std::ostream& out, const std::vector<result_view>& results) {
  family(out, "infrabench_result_value",
         "a metric of a passed configuration (its median over the samples), in its unit");
  for (const auto& r : results) {
    if (r.status != status::passed) continue;
    for (const auto& m : r.metrics) {
      if (std::isnan(m.value)) continue;  // null in the report: no value to export
      labels ls = result_labels(r);
      ls.insert(ls.end(), {{"metric", m.name},
                           {"unit", m.unit},
                           {"role", std::string(to_string(m.role))},
                           {"valid", r.valid ? "true" : "false"}});
      sample(out, "infrabench_result_value", ls, m.value);
    }
  }
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
    print_results(out, d.results);
    out << "# EOF\n";
  }
  void print(std::ostream& out, const check_outcome& v) const override {
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
    status_family(out);
    for (const auto& r : v.report.results) {
      labels ls = result_labels(r);
      ls.insert(ls.end(), {{"status", std::string(to_string(r.status))},
                           {"valid", r.valid ? "true" : "false"}});
      sample(out, "infrabench_result_status", ls, 1);
    }
    out << "# EOF\n";
  }
};

INFRABENCH_REGISTER_PRINTER(openmetrics_printer);

}  // namespace
}  // namespace infrabench::reports
