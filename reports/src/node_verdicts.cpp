// Per-node verdicts (issue 28): which nodes of a report failed which rules, with the evidence, and
// the facts that tell a node that lacks what a rule needs (WAIVED) from one that had it and did
// not run the benchmark (NOT RUN).
#include <algorithm>
#include <cmath>
#include <set>

#include "infrabench/benchmark.h"
#include "infrabench/metric_decl.h"
#include "infrabench/reason.h"
#include "infrabench/reports/baseline.h"
#include "node_facts.h"

namespace infrabench::reports::detail {
namespace {

using json = nlohmann::json;

const benchmark* registered(const std::string& bench) {
  return registry::instance().find(bench);
}

// Whether `bench` runs on a GPU: as the report declares it, else as this build does.
bool runs_on_gpu(const report_view& report, const std::string& bench) {
  if (const auto said = report.runs_on_gpu(bench)) return *said;
  const benchmark* b = registered(bench);
  if (!b) return false;
  return std::any_of(b->requirements().begin(), b->requirements().end(), [](const requirement& r) {
    return r.name == req::cuda.name || r.name == req::nccl.name;
  });
}

// Whether `bench` needs several ranks (a collective, the pairwise matrix): its skip said so, or
// this build's declaration does.
bool needs_ranks(const std::string& bench, std::optional<reason_code> code) {
  if (code == reason_code::needs_ranks || code == reason_code::not_on_every_rank) return true;
  const benchmark* b = registered(bench);
  return b && b->min_ranks() > 1;
}

}  // namespace

node_context::node_context(const report_view& report) : m_report(report) {
  for (const auto& h : report.inventories) {
    if (!h.hostname.empty() && h.devices) m_gpus[h.hostname] = h.devices->counts.gpus;
  }
  std::map<std::string, std::set<int>> ranks;
  for (const auto& r : report.results) ranks[node_of(r)].insert(r.rank);
  for (const auto& [host, set] : ranks) m_ranks[host] = set.size();
}

std::string node_context::node_of(const result_view& r) const {
  return r.host.empty() ? m_report.node_of(r) : r.host;
}

std::string node_context::single_host() const {
  std::set<std::string> hosts;
  for (const auto& r : m_report.results) hosts.insert(node_of(r));
  if (hosts.size() == 1) return *hosts.begin();
  return hosts.empty() ? m_report.primary_hostname() : "";
}

int node_context::cuda_devices() const {
  return m_report.caps.cuda_device_count.value_or(-1);
}

int node_context::gpus_on(const std::string& host) const {
  if (const auto it = m_gpus.find(host); it != m_gpus.end()) return it->second;
  if (!m_gpus.empty() || single_host() != host) return -1;
  return cuda_devices();
}

std::string node_context::lacks(const std::string& bench, const std::string& host,
                                std::optional<reason_code> code, const std::string& reason,
                                bool skipped) const {
  const std::string said = reason.empty() ? "" : ": " + reason;
  // A skip whose code the report does not give (written before codes) is taken at its word.
  const bool lacking_code =
      code == reason_code::unsupported || code == reason_code::no_device || (skipped && !code);
  const int gpus = gpus_on(host);
  if (runs_on_gpu(m_report, bench)) {
    if (gpus == 0) return "no GPU on " + host + said;
    if (gpus < 0) return skipped && lacking_code ? reason : "";  // no inventory to go by
    if (gpus == 1 && needs_ranks(bench, code)) return "one GPU on " + host + ": no peer" + said;
    // CUDA sees the GPUs and they lack what the benchmark needs (peer access, a data type).
    if (code == reason_code::no_device && cuda_devices() > 0) return reason;
    return "";  // the GPUs are there (CUDA not built in, a driver not answering): it did not run
  }
  if (skipped && lacking_code) return reason;
  // A CPU benchmark of several ranks (storage jobs across ranks) on a run of one rank: a node of
  // its own has no peer; on a GPU node the ranks are the GPUs (not_run_hint).
  if (needs_ranks(bench, code) && m_report.world_size <= 1 && gpus <= 1)
    return "one rank on " + host + said;
  return "";
}

std::string node_context::not_run_hint(const std::string& bench, const std::string& host,
                                       std::optional<reason_code> code) const {
  const int gpus = gpus_on(host);
  const auto ranks = m_ranks.count(host) ? m_ranks.at(host) : std::size_t{1};
  if (needs_ranks(bench, code) && gpus > 1 && ranks < static_cast<std::size_t>(gpus))
    return host + " has " + std::to_string(gpus) + " GPUs and the run had " +
           std::to_string(ranks) + " rank(s) there: run one rank per GPU (mpirun -np " +
           std::to_string(gpus) + " infrabench accept ...)";
  return "";
}

json telemetry_window(const result_view& r) {
  json out = json::object();
  for (const auto& m : r.metrics) {
    if (m.is_performance()) continue;
    const auto& decls = telemetry_metric_decls();
    if (std::any_of(decls.begin(), decls.end(),
                    [&](const metric_decl& d) { return d.covers(m.name); }))
      out[m.name] = std::isfinite(m.value) ? json(m.value) : json(nullptr);
  }
  return out;
}

}  // namespace infrabench::reports::detail

namespace infrabench::reports {

using json = nlohmann::json;

std::vector<node_verdict> node_verdicts(const report_view& report,
                                        const std::vector<verdict>& verdicts) {
  const detail::node_context cx(report);
  std::vector<node_verdict> out;
  std::map<std::string, std::size_t> index;
  auto node = [&](const std::string& name) -> node_verdict& {
    const auto [it, added] = index.emplace(name, out.size());
    if (added) out.push_back({name, true, {}, {}, {}});
    return out[it->second];
  };
  for (const auto& r : report.results) node(cx.node_of(r));
  for (const auto& h : report.inventories) {
    if (h.devices && !h.hostname.empty()) node(h.hostname);
  }
  for (const auto& v : verdicts) {
    if (!failed(v.status)) continue;
    for (const auto& f : v.findings) {
      if (f.node.empty()) continue;  // no one node to blame
      node_verdict& n = node(f.node);
      n.pass = false;
      if (std::find(n.failed_rules.begin(), n.failed_rules.end(), v.r->id) == n.failed_rules.end())
        n.failed_rules.push_back(v.r->id);
      n.findings.push_back(f);
      n.findings.back().rule = v.r->id;
      if (f.gpu >= 0 &&
          std::find(n.failed_gpus.begin(), n.failed_gpus.end(), f.gpu) == n.failed_gpus.end())
        n.failed_gpus.push_back(f.gpu);
    }
  }
  for (auto& n : out) std::sort(n.failed_gpus.begin(), n.failed_gpus.end());
  return out;
}

}  // namespace infrabench::reports
