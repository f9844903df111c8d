#include "infrabench/cluster.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/metric_decl.h"

// ---- multi-rank run options ---------------------------------------------------------------------

namespace infrabench {
namespace {

using json = nlohmann::json;

INFRABENCH_RUN_OPTION(
    g_opt_op_timeout, "op-timeout", "30",
    "multi-rank runs: seconds one communicating operation (a collective, a message, a "
    "synchronisation) may take before the run fails, naming the rank that stopped answering "
    "(0 = no limit)");
INFRABENCH_RUN_OPTION(
    g_opt_outlier_z, "outlier-z", "3.5",
    "multi-host runs: robust z-score (median/MAD) beyond which a host's result or a link is "
    "flagged as an outlier");
INFRABENCH_RUN_OPTION(
    g_opt_outlier_dev, "outlier-min-dev", "0.2",
    "multi-host runs: least distance from the median of the hosts, as a fraction of it, for an "
    "outlier to be flagged");

double number_option(const option_values& opts, const std::string& name,
                     const std::string& fallback, double low, bool low_inclusive) {
  const auto it = opts.find(name);
  const std::string text = it == opts.end() ? fallback : it->second;
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v) || v < low ||
      (!low_inclusive && v == low)) {
    char bound[64];
    std::snprintf(bound, sizeof(bound), "%s %g", low_inclusive ? ">=" : ">", low);
    throw user_error("--" + name + " '" + text + "': expected a number " + bound);
  }
  return v;
}

[[maybe_unused]] const bool g_validate_options =
    register_pre_run_hook([](const option_values& opts) {
      (void)op_timeout_option(opts);
      (void)outlier_options(opts);
    });

}  // namespace

double op_timeout_option(const option_values& opts) {
  return number_option(opts, "op-timeout", "30", 0, true);
}

outlier_settings outlier_options(const option_values& opts) {
  outlier_settings s;
  s.z_threshold = number_option(opts, "outlier-z", "3.5", 0, false);
  s.min_deviation = number_option(opts, "outlier-min-dev", "0.2", 0, true);
  return s;
}

// ---- cluster analysis ---------------------------------------------------------------------------

namespace {

std::string fmt(double v) {
  char buf[32];
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof(buf),
                a >= 100  ? "%.0f"
                : a >= 10 ? "%.1f"
                : a >= 1  ? "%.2f"
                          : "%.3g",
                v);
  return buf;
}

using model::result_view;

// " kernel=triad threads=0": the axes' display forms, each after a space.
std::string axes_text(const result_view& r) {
  const std::string a = r.axes_label();
  return a.empty() ? a : " " + a;
}

std::string percent_off(double v, double median) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%",
                median != 0 ? std::fabs(v - median) / std::fabs(median) * 100 : 0.0);
  return buf;
}

// Per benchmark, its metric families whose `*` is the rank at the other end of a link (declared
// with the benchmark: metric_decl::cell), as the run's benchmark metadata carries them: the
// matrices the link analysis reads. Read once per run; benchmarks without any are absent.
using link_family_map = std::map<std::string, std::vector<metric_decl>>;
link_family_map link_families(const benchmark_metadata_map& metadata) {
  link_family_map out;
  for (const auto& [bench, b] : metadata) {
    for (const auto& d : b.metrics) {
      if (d.cell == cell_kind::peer_rank && d.is_family()) out[bench].push_back(d);
    }
  }
  return out;
}

// "bandwidth_gbps_to_rank_" of "bandwidth_gbps_to_rank_*": what precedes the peer's rank.
std::string cell_prefix(const metric_decl& d) {
  return d.name.substr(0, d.name.find('*'));
}

// Directed host-to-host values of one pairwise configuration: (from, to) -> values over rank pairs.
using link_map = std::map<std::pair<std::string, std::string>, std::vector<double>>;
// Undirected links (a < b) -> one value.
using link_values = std::map<std::pair<std::string, std::string>, double>;

void collect_pairwise(const std::vector<const result_view*>& rs, const std::string& prefix,
                      link_map& out) {
  std::map<int, std::string> host_of;
  for (const auto* r : rs) host_of[r->rank] = r->host;
  for (const auto* r : rs) {
    const std::string& from = r->host;
    for (const auto& m : r->metrics) {
      if (m.name.rfind(prefix, 0) != 0) continue;
      const int peer = std::atoi(m.name.c_str() + prefix.size());
      const auto it = host_of.find(peer);
      if (it == host_of.end() || it->second == from) continue;
      out[{from, it->second}].push_back(m.value);
    }
  }
}

// A link's value: its worse direction (a shaper or a bad cable may slow one direction only).
link_values undirected_links(const link_map& directed, bool higher_is_better) {
  link_values links;
  for (const auto& [ab, vals] : directed) {
    const auto key = ab.first < ab.second ? ab : std::make_pair(ab.second, ab.first);
    const double v = sample_median(vals);
    auto [it, fresh] = links.emplace(key, v);
    if (!fresh) it->second = higher_is_better ? std::min(it->second, v) : std::max(it->second, v);
  }
  return links;
}

// Each host's best link.
std::map<std::string, double> best_link_per_host(const link_values& links, bool higher_is_better) {
  std::map<std::string, double> best;
  for (const auto& [ab, v] : links) {
    for (const auto& h : {ab.first, ab.second}) {
      auto [it, fresh] = best.emplace(h, v);
      if (!fresh) it->second = higher_is_better ? std::max(it->second, v) : std::min(it->second, v);
    }
  }
  return best;
}

// The fields every finding has.
outlier_finding finding(const char* kind, const std::string& host, const result_view& sample,
                        const std::string& metric, const std::string& unit, double value,
                        double median, double z, std::string text) {
  outlier_finding f;
  f.kind = kind;
  f.host = host;
  f.benchmark = sample.benchmark;
  f.axes = sample.axes;
  f.metric = metric;
  f.unit = unit;
  f.value = value;
  f.median = median;
  f.robust_z = z;
  f.text = std::move(text);
  return f;
}

struct link_metric {
  bool higher_is_better;
  std::string metric, unit;
};

// Hosts whose best link is still an outlier: when even that is slow, the host (its NIC, its
// cable, its switch port) is the likely culprit, not each of its links.
std::set<std::string> find_culprit_hosts(const link_values& links, const link_metric& lm,
                                         const result_view& sample, const outlier_settings& s,
                                         std::vector<outlier_finding>& findings) {
  const auto best = best_link_per_host(links, lm.higher_is_better);
  std::vector<double> scores;
  for (const auto& [h, v] : best) scores.push_back(v);
  const robust_centre centre = centre_of_logs(scores);
  const double median_best = centre.median;
  const std::string what = sample.benchmark + axes_text(sample);
  std::set<std::string> culprits;
  for (const auto& [h, v] : best) {
    if (!centre.is_outlier(v, lm.higher_is_better, s)) continue;
    culprits.insert(h);
    const double z = centre.z(v);
    findings.push_back(finding(
        "culprit_host", h, sample, lm.metric, lm.unit, v, median_best, z,
        h + ": " + what + ": every link of " + h + " is " +
            (lm.higher_is_better ? "slow" : "slow to answer") + " (its best link " + fmt(v) + " " +
            lm.unit + " vs " + fmt(median_best) + " " + lm.unit +
            ", the median host's best; robust z of the logs " + fmt(z) + "): likely the culprit"));
  }
  return culprits;
}

// Single slow links among the links of hosts that are not culprits.
void find_slow_links(const link_values& links, const std::set<std::string>& culprits,
                     const link_metric& lm, const result_view& sample, const outlier_settings& s,
                     std::vector<outlier_finding>& findings) {
  auto innocent = [&](const auto& ab) {
    return !culprits.count(ab.first) && !culprits.count(ab.second);
  };
  std::vector<double> reference;
  for (const auto& [ab, v] : links) {
    if (innocent(ab)) reference.push_back(v);
  }
  const robust_centre centre = centre_of_logs(reference);
  const double median_link = centre.median;
  const std::string what = sample.benchmark + axes_text(sample);
  for (const auto& [ab, v] : links) {
    if (!innocent(ab) || !centre.is_outlier(v, lm.higher_is_better, s)) continue;
    const double z = centre.z(v);
    outlier_finding f =
        finding("slow_link", ab.first, sample, lm.metric, lm.unit, v, median_link, z,
                ab.first + "-" + ab.second + ": " + what + ": link " + lm.metric + " " + fmt(v) +
                    " " + lm.unit + " is " + percent_off(v, median_link) +
                    (lm.higher_is_better ? " below" : " above") + " the median link (" +
                    fmt(median_link) + " " + lm.unit + "; robust z of the logs " + fmt(z) + ")");
    f.peer = ab.second;
    findings.push_back(std::move(f));
  }
}

void analyse_links(const link_map& directed, const link_metric& lm, const result_view& sample,
                   const outlier_settings& s, std::vector<outlier_finding>& findings) {
  const link_values links = undirected_links(directed, lm.higher_is_better);
  std::set<std::string> hosts;
  for (const auto& [ab, v] : links) hosts.insert({ab.first, ab.second});
  if (hosts.size() < s.min_nodes) return;
  const auto culprits = find_culprit_hosts(links, lm, sample, s, findings);
  find_slow_links(links, culprits, lm, sample, s, findings);
}

void analyse_pairwise(const std::vector<const result_view*>& rs,
                      const std::vector<metric_decl>& families, const outlier_settings& s,
                      std::vector<outlier_finding>& findings) {
  for (const auto& d : families) {
    link_map directed;
    collect_pairwise(rs, cell_prefix(d), directed);
    analyse_links(directed, {d.direction == better::higher, d.name, d.unit}, *rs.front(), s,
                  findings);
  }
}

// What a result is compared as: its host, or its host's GPU when it ran on one (one rank per GPU:
// a slow GPU is named among the node's and the cluster's GPUs as a slow host is among hosts).
struct unit_key {
  std::string host;
  int gpu = -1;
  bool operator<(const unit_key& o) const { return std::tie(host, gpu) < std::tie(o.host, o.gpu); }
  [[nodiscard]] std::string name() const {
    return gpu < 0 ? host : host + " gpu " + std::to_string(gpu);
  }
};
unit_key unit_of(const result_view& r) {
  return {r.host, r.gpu.value_or(-1)};
}

// A node-local configuration: per metric, a host (or a GPU) whose value (the median over its
// ranks) is an outlier among the hosts (or the GPUs).
void analyse_hosts(const std::vector<const result_view*>& rs, const outlier_settings& s,
                   std::vector<outlier_finding>& findings) {
  const result_view& sample = *rs.front();
  std::map<std::string, std::map<unit_key, std::vector<double>>> per_metric;  // metric->unit
  std::map<std::string, const model::metric_view*> metric_info;
  for (const auto* r : rs) {
    for (const auto& m : r->metrics) {
      per_metric[m.name][unit_of(*r)].push_back(m.value);
      metric_info.emplace(m.name, &m);
    }
  }
  for (const auto& [name, by_unit] : per_metric) {
    std::vector<double> values;
    for (const auto& [u, v] : by_unit) values.push_back(sample_median(v));
    const robust_centre centre = centre_of(values);
    const double med = centre.median;
    const bool higher = metric_info[name]->higher_is_better;
    const std::string unit = metric_info[name]->unit;
    const char* what = by_unit.begin()->first.gpu >= 0 ? " GPUs (" : " hosts (";
    for (const auto& [u, v] : by_unit) {
      const double x = sample_median(v);
      if (!centre.is_outlier(x, higher, s)) continue;
      const double z = centre.z(x);
      outlier_finding f = finding("host_metric", u.host, sample, name, unit, x, med, z,
                                  u.name() + ": " + sample.benchmark + axes_text(sample) + ": " +
                                      name + " " + fmt(x) + " " + unit + " is " +
                                      percent_off(x, med) + (higher ? " below" : " above") +
                                      " the median of " + std::to_string(by_unit.size()) + what +
                                      fmt(med) + " " + unit + "; robust z " + fmt(z) + ")");
      if (u.gpu >= 0) f.gpu = u.gpu;
      findings.push_back(std::move(f));
    }
  }
}

// Passed results grouped by configuration (benchmark and axes), in first-seen order.
std::vector<std::vector<const result_view*>> group_by_config(
    const std::vector<result_view>& results) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const result_view*>> groups;
  for (const auto& r : results) {
    if (r.status != status::passed) continue;
    const std::string key = r.config_key();
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  std::vector<std::vector<const result_view*>> out;
  for (const auto& key : order) out.push_back(std::move(groups[key]));
  return out;
}

}  // namespace

json outlier_finding::to_json() const {
  json f = {{"kind", kind},         {"host", host}, {"benchmark", benchmark}, {"axes", axes},
            {"metric", metric},     {"unit", unit}, {"value", value},         {"median", median},
            {"robust_z", robust_z}, {"text", text}};
  if (!peer.empty()) f["peer"] = peer;
  if (gpu) f["gpu"] = *gpu;
  return f;
}

std::vector<outlier_finding> find_outliers(const std::vector<result_view>& results,
                                           const benchmark_metadata_map& metadata,
                                           const outlier_settings& s) {
  std::vector<outlier_finding> findings;
  const link_family_map links = link_families(metadata);
  for (const auto& rs : group_by_config(results)) {
    const auto families = links.find(rs.front()->benchmark);
    if (families != links.end()) {
      analyse_pairwise(rs, families->second, s, findings);
    } else {
      analyse_hosts(rs, s, findings);
    }
  }
  return findings;
}

// ---- the console summary ------------------------------------------------------------------------

namespace {

struct host_row {
  std::set<int> ranks;
  int passed = 0, invalid = 0, failed = 0, findings = 0;
};

// Hosts in rank order of first appearance, with what they measured and the findings naming them.
std::vector<std::pair<std::string, host_row>> host_rows(
    const std::vector<result_view>& results, const std::vector<outlier_finding>& findings) {
  std::vector<std::pair<std::string, host_row>> rows;
  auto row = [&](const std::string& h) -> host_row& {
    for (auto& [name, r] : rows) {
      if (name == h) return r;
    }
    return rows.emplace_back(h, host_row{}).second;
  };
  for (const auto& r : results) {
    host_row& hr = row(r.host);
    hr.ranks.insert(r.rank);
    hr.passed += r.status == status::passed;
    hr.invalid += r.status == status::passed && !r.valid;
    hr.failed += r.status == status::failed;
  }
  for (const auto& f : findings) {
    ++row(f.host).findings;
    if (!f.peer.empty()) ++row(f.peer).findings;
  }
  return rows;
}

// A table with the first column left-aligned and the others right-aligned, a rule under the head.
void print_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string line = " ";
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      const auto& cell = rows[i][c];
      const std::string pad(width[c] - cell.size(), ' ');
      line += " " + (c == 0 ? cell + pad : pad + cell);
    }
    out << line << "\n";
    if (i == 0) {
      std::string rule = " ";
      for (auto w : width) rule += " " + std::string(w, '-');
      out << rule << "\n";
    }
  }
}

void print_host_table(std::ostream& out,
                      const std::vector<std::pair<std::string, host_row>>& hosts) {
  std::size_t world = 0;
  for (const auto& [h, r] : hosts) world += r.ranks.size();
  out << "cluster: " << hosts.size() << (hosts.size() == 1 ? " host, " : " hosts, ") << world
      << " ranks with results\n";
  std::vector<std::vector<std::string>> rows{
      {"host", "ranks", "passed", "invalid", "failed", "outliers"}};
  for (const auto& [h, r] : hosts) {
    std::string rl;
    for (int rank : r.ranks) rl += (rl.empty() ? "" : ",") + std::to_string(rank);
    rows.push_back({h, rl, std::to_string(r.passed), std::to_string(r.invalid),
                    std::to_string(r.failed), std::to_string(r.findings)});
  }
  print_aligned(out, rows);
}

void print_findings(std::ostream& out, std::size_t hosts,
                    const std::vector<outlier_finding>& findings, const outlier_settings& s) {
  char crit[160];
  std::snprintf(crit, sizeof(crit),
                "robust z beyond %g and at least %.0f%% from the median of the hosts",
                s.z_threshold, s.min_deviation * 100);
  if (hosts < s.min_nodes) {
    out << "outliers: not analysed (needs at least " << s.min_nodes << " hosts)\n";
  } else if (findings.empty()) {
    out << "outliers: none (" << crit << ")\n";
  } else {
    out << "outliers (" << crit << "):\n";
    for (const auto& f : findings) out << "  " << f.text << "\n";
  }
}

// The host-to-host matrix of one link family of one configuration (row sends to column), median
// over rank pairs, hosts in `host_order`.
void print_link_matrix(std::ostream& out, const std::vector<const result_view*>& rs,
                       const metric_decl& d, const std::vector<std::string>& host_order) {
  link_map bw;
  collect_pairwise(rs, cell_prefix(d), bw);
  std::vector<std::string> hs;
  for (const auto& [ab, v] : bw) {
    for (const auto& h : {ab.first, ab.second}) {
      if (std::find(hs.begin(), hs.end(), h) == hs.end()) hs.push_back(h);
    }
  }
  if (hs.size() < 2 || hs.size() > 16) return;
  auto rank_of = [&](const std::string& h) {
    return std::find(host_order.begin(), host_order.end(), h) - host_order.begin();
  };
  std::sort(hs.begin(), hs.end(),
            [&](const std::string& a, const std::string& b) { return rank_of(a) < rank_of(b); });
  out << rs.front()->benchmark << " " << d.name << ", " << d.unit
      << " (row sends to column):" << axes_text(*rs.front()) << "\n";
  std::size_t w = 6;
  for (const auto& h : hs) w = std::max(w, h.size());
  auto cell = [&](const std::string& t) {
    return std::string(w + 2 - std::min(w + 2, t.size()), ' ') + t;
  };
  std::string head = "  " + std::string(w, ' ');
  for (const auto& h : hs) head += cell(h);
  out << head << "\n";
  for (const auto& a : hs) {
    std::string line = "  " + a + std::string(w - a.size(), ' ');
    for (const auto& b : hs) {
      const auto it = bw.find({a, b});
      line += cell(a == b ? "-" : it == bw.end() ? "?" : fmt(sample_median(it->second)));
    }
    out << line << "\n";
  }
}

}  // namespace

void print_cluster_summary(std::ostream& out, const std::vector<result_view>& results,
                           const benchmark_metadata_map& metadata,
                           const std::vector<outlier_finding>& findings,
                           const outlier_settings& s) {
  const auto hosts = host_rows(results, findings);
  print_host_table(out, hosts);
  print_findings(out, hosts.size(), findings, s);
  std::vector<std::string> host_order;
  for (const auto& [h, r] : hosts) host_order.push_back(h);
  const link_family_map links = link_families(metadata);
  for (const auto& rs : group_by_config(results)) {
    const auto families = links.find(rs.front()->benchmark);
    if (families == links.end()) continue;
    for (const auto& d : families->second) print_link_matrix(out, rs, d, host_order);
  }
}

}  // namespace infrabench
