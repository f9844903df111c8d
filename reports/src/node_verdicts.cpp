// Per-node verdicts (issue 28): which nodes of a report failed which rules, with the evidence, and
// the facts that tell a node that lacks what a rule needs (WAIVED) from one that had it and did
// not run the benchmark (NOT RUN).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "infrabench/benchmark.h"
#include "infrabench/devices.h"
#include "infrabench/metric_decl.h"
#include "infrabench/reason.h"
#include "infrabench/reports/baseline.h"
#include "node_facts.h"

namespace infrabench::reports::detail {
namespace {

using json = nlohmann::json;

// Collects, per element of the top-level "results" array, its benchmark, reason_code and gpu,
// and nothing else: a SAX pass over the file holds neither its text nor a document (the view the
// caller holds already costs several times the file).
class result_facts_sax : public json::json_sax_t {
 public:
  std::vector<result_facts> facts;
  std::vector<std::string> benchmarks;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t v) override { return gpu(v); }
  bool number_unsigned(json::number_unsigned_t v) override {
    return gpu(static_cast<json::number_integer_t>(v));
  }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool string(json::string_t& v) override {
    if (!in_result()) return true;
    if (m_key == "benchmark") benchmarks.back() = v;
    if (m_key == "reason_code") facts.back().reason_code = v;
    return true;
  }
  bool key(json::string_t& k) override {
    m_key = k;
    return true;
  }
  bool start_object(std::size_t) override {
    ++m_depth;
    if (m_results_depth > 0 && m_depth == m_results_depth + 1) {
      facts.emplace_back();
      benchmarks.emplace_back();
    }
    return true;
  }
  bool end_object() override {
    --m_depth;
    return true;
  }
  bool start_array(std::size_t) override {
    ++m_depth;
    if (m_depth == 2 && m_key == "results") m_results_depth = m_depth;
    return true;
  }
  bool end_array() override {
    if (m_depth == m_results_depth) m_results_depth = 0;
    --m_depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  [[nodiscard]] bool in_result() const {
    return m_results_depth > 0 && m_depth == m_results_depth + 1 && !facts.empty();
  }
  bool gpu(json::number_integer_t v) {
    if (in_result() && m_key == "gpu") facts.back().gpu = static_cast<int>(v);
    return true;
  }
  int m_depth = 0, m_results_depth = 0;
  std::string m_key;
};

// The skip code and GPU of every result, read from the report's file: report_io's view does not
// carry them yet (it is being ported to a typed model that will). Empty, so that callers fall
// back to what the view holds, when there is no file or it no longer matches the view.
std::vector<result_facts> read_result_facts(const report_view& report) {
  std::error_code ec;
  if (report.path.empty() || !std::filesystem::is_regular_file(report.path, ec)) return {};
  const auto size = std::filesystem::file_size(report.path, ec);
  if (ec || size > max_input_bytes) return {};
  std::ifstream in(report.path, std::ios::binary);
  result_facts_sax sax;
  try {
    if (!in || !json::sax_parse(in, &sax)) return {};
  } catch (const std::exception&) {
    return {};  // the view was read; facts are an addition, never a reason to refuse
  }
  if (sax.facts.size() != report.results.size()) return {};
  for (std::size_t i = 0; i < sax.facts.size(); ++i) {
    if (sax.benchmarks[i] != report.results[i].benchmark) return {};
  }
  return std::move(sax.facts);
}

const benchmark* registered(const std::string& bench) {
  return registry::instance().find(bench);
}

bool is(const std::string& code, reason_code c) {
  return code == to_string(c);
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
bool needs_ranks(const std::string& bench, const std::string& code) {
  if (is(code, reason_code::needs_ranks) || is(code, reason_code::not_on_every_rank)) return true;
  const benchmark* b = registered(bench);
  return b && b->min_ranks() > 1;
}

}  // namespace

node_context::node_context(const report_view& report, bool with_facts)
    : m_report(report),
      m_facts(with_facts ? read_result_facts(report) : std::vector<result_facts>{}) {
  for (const auto& h : report.hosts) {
    if (!h.is_object() || !h.contains("hostname") || !h["hostname"].is_string()) continue;
    const auto d = h.find("devices");
    if (d == h.end() || !d->is_object()) continue;
    const json counts = devices::counts_of(*d);
    if (counts.contains("gpus") && counts["gpus"].is_number())
      m_gpus[h["hostname"].get<std::string>()] = counts["gpus"].get<int>();
  }
  std::map<std::string, std::set<int>> ranks;
  for (const auto& r : report.results) ranks[node_of(r)].insert(r.rank);
  for (const auto& [host, set] : ranks) m_ranks[host] = set.size();
}

std::string node_context::node_of(const result_view& r) const {
  return r.host.empty() ? m_report.node_of(r) : r.host;
}

const result_facts& node_context::facts(const result_view& r) const {
  static const result_facts none;
  const auto i = static_cast<std::size_t>(&r - m_report.results.data());
  return i < m_facts.size() ? m_facts[i] : none;
}

std::string node_context::single_host() const {
  std::set<std::string> hosts;
  for (const auto& r : m_report.results) hosts.insert(node_of(r));
  if (hosts.size() == 1) return *hosts.begin();
  return hosts.empty() ? m_report.primary_hostname() : "";
}

int node_context::cuda_devices() const {
  const auto cuda = m_report.capabilities.find("cuda");
  if (cuda == m_report.capabilities.end() || !cuda->is_object()) return -1;
  const auto n = cuda->find("device_count");
  return n != cuda->end() && n->is_number_integer() ? n->get<int>() : -1;
}

int node_context::gpus_on(const std::string& host) const {
  if (const auto it = m_gpus.find(host); it != m_gpus.end()) return it->second;
  if (!m_gpus.empty() || single_host() != host) return -1;
  return cuda_devices();
}

std::string node_context::lacks(const std::string& bench, const std::string& host,
                                const std::string& code, const std::string& reason,
                                bool skipped) const {
  const std::string said = reason.empty() ? "" : ": " + reason;
  // A skip whose code the report does not give (written before codes, or no file to read them
  // from) is taken at its word, as before.
  const bool lacking_code = is(code, reason_code::unsupported) ||
                            is(code, reason_code::no_device) || (skipped && code.empty());
  const int gpus = gpus_on(host);
  if (runs_on_gpu(m_report, bench)) {
    if (gpus == 0) return "no GPU on " + host + said;
    if (gpus < 0) return skipped && lacking_code ? reason : "";  // no inventory to go by
    if (gpus == 1 && needs_ranks(bench, code)) return "one GPU on " + host + ": no peer" + said;
    // CUDA sees the GPUs and they lack what the benchmark needs (peer access, a data type).
    if (is(code, reason_code::no_device) && cuda_devices() > 0) return reason;
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
                                       const std::string& code) const {
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
  const detail::node_context cx(report, /*with_facts=*/false);
  std::vector<node_verdict> out;
  std::map<std::string, std::size_t> index;
  auto node = [&](const std::string& name) -> node_verdict& {
    const auto [it, added] = index.emplace(name, out.size());
    if (added) out.push_back({name, true, {}, {}, {}});
    return out[it->second];
  };
  for (const auto& r : report.results) node(cx.node_of(r));
  for (const auto& h : report.hosts) {
    if (h.is_object() && h.contains("devices") && h.value("hostname", json()).is_string())
      node(h["hostname"].get<std::string>());
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
