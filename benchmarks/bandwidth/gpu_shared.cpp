#include "gpu_shared.h"

#include <linux/mempolicy.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace infrabench::bw {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

[[nodiscard]] std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

void check_noise(state& st, const topo::cell_sweep& sweep, const topo::cell_sweep::cell& c,
                 const topo::cell_stats& s) {
  // The harness judges the row's summed time; a cell can be noisy while the row is not. With one
  // cell the row's time is the cell's, and the harness has said it already.
  const auto runnable = std::count_if(sweep.cells().begin(), sweep.cells().end(),
                                      [](const auto& x) { return x.runnable(); });
  if (runnable > 1 && s.n > 2 && s.robust_cv > 0.10) {
    st.check(false, c.column + ": noisy: robust CV " + percent(s.robust_cv) + " > 10.0% over " +
                        std::to_string(s.n) + " samples");
  }
}

void warn_na(state& st, const topo::cell_sweep& sweep) {
  for (const auto& c : sweep.cells()) {
    if (!c.runnable()) st.add_warning(c.column + ": n/a: " + c.na_reason);
  }
}

}  // namespace

node_memory::node_memory(std::size_t bytes, int node, bool touch) : m_bytes(bytes) {
  m_mapped = std::max<std::size_t>((bytes + huge_page - 1) / huge_page * huge_page, huge_page);
  void* p = mmap(nullptr, m_mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::runtime_error("mmap of " + format_gib(static_cast<double>(m_mapped)) +
                             " failed: " + std::strerror(errno));
  }
  m_data = p;
  (void)madvise(p, m_mapped, MADV_HUGEPAGE);
  if (node >= 0) {
    // One bit per node; the kernel reads maxnode - 1 bits (libnuma passes one more than it means).
    constexpr std::size_t bits = 1024;
    if (static_cast<std::size_t>(node) >= bits) {
      m_binding_error = "node " + std::to_string(node) + " beyond the 1024 nodes a mask holds";
    } else {
      unsigned long mask[bits / (8 * sizeof(unsigned long)) + 1] = {};
      mask[static_cast<std::size_t>(node) / (8 * sizeof(unsigned long))] |=
          1UL << (static_cast<std::size_t>(node) % (8 * sizeof(unsigned long)));
      if (syscall(SYS_mbind, p, m_mapped, MPOL_BIND, mask, bits + 1, MPOL_MF_STRICT) != 0) {
        m_binding_error = std::string("mbind(MPOL_BIND, node ") + std::to_string(node) +
                          "): " + std::strerror(errno);
      }
    }
  }
  if (touch) std::memset(p, 0, m_mapped);
}

node_memory::~node_memory() {
  if (m_data) munmap(m_data, m_mapped);
}

std::optional<std::string> check_placement(const void* p, std::size_t bytes, int node) {
  const long page = sysconf(_SC_PAGESIZE);
  if (bytes == 0 || page <= 0) return std::nullopt;
  const std::size_t pages =
      (bytes + static_cast<std::size_t>(page) - 1) / static_cast<std::size_t>(page);
  const std::size_t samples = std::min<std::size_t>(pages, 64);
  std::vector<void*> addrs(samples);
  std::vector<int> status(samples, -1);
  const auto base = reinterpret_cast<std::uintptr_t>(p) & ~(static_cast<std::uintptr_t>(page) - 1);
  for (std::size_t i = 0; i < samples; ++i) {
    const std::size_t pg = samples == 1 ? 0 : i * (pages - 1) / (samples - 1);
    addrs[i] = reinterpret_cast<void*>(base + pg * static_cast<std::size_t>(page));
  }
  // move_pages with no target nodes only reports where each page is.
  if (syscall(SYS_move_pages, 0, static_cast<unsigned long>(samples), addrs.data(), nullptr,
              status.data(), 0) != 0) {
    return std::string("cannot query page placement (move_pages): ") + std::strerror(errno);
  }
  std::map<int, std::size_t> elsewhere;
  for (int s : status) {
    if (s != node) ++elsewhere[s];
  }
  if (elsewhere.empty()) return std::nullopt;
  std::string text;
  for (const auto& [where, count] : elsewhere) {
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " of " + std::to_string(samples) +
            " sampled pages " +
            (where >= 0 ? "are on node " + std::to_string(where)
                        : std::string("report ") + std::strerror(-where));
  }
  return text + ", not on node " + std::to_string(node);
}

scoped_affinity::scoped_affinity(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  m_saved_ok = pthread_getaffinity_np(pthread_self(), sizeof m_saved, &m_saved) == 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  m_applied = m_saved_ok && pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

scoped_affinity::~scoped_affinity() {
  if (m_applied) pthread_setaffinity_np(pthread_self(), sizeof m_saved, &m_saved);
}

std::vector<topo::numa_node> host_nodes(bool* assumed) {
  std::vector<topo::numa_node> nodes = topo::read_numa_nodes();
  if (assumed) *assumed = nodes.empty();
  if (nodes.empty()) {
    topo::numa_node only;
    only.id = 0;
    only.cpus = allowed_cpus();
    only.has_memory = true;
    nodes.push_back(std::move(only));
  }
  return nodes;
}

std::string format_gib(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

void require_runnable(state& st, const topo::cell_sweep& sweep) {
  // Every cell goes into the report, n/a ones with their reason, whether or not the row runs.
  std::vector<result_cell> cells;
  for (auto& e : sweep.entries()) {
    cells.push_back({std::move(e.column), e.measured, std::move(e.reason), e.error});
  }
  st.set_cells(std::move(cells));
  if (sweep.any_runnable()) return;
  if (sweep.cells().size() == 1) {
    const auto& c = sweep.cells().front();
    if (c.na_is_error) st.fail(c.na_reason);
    st.skip(c.na_reason);
  }
  if (sweep.any_error()) st.fail(sweep.na_summary());
  st.skip(sweep.na_summary());
}

std::vector<metric_decl> bandwidth_row_metrics(bool with_ceiling) {
  std::vector<metric_decl> out = {{topo::cell_metric("bandwidth_gbps", "*"), "GB/s"}};
  out.front().headline = true;
  if (with_ceiling) {
    out.push_back(
        {topo::cell_metric("ceiling_gbps", "*"), "GB/s", better::higher, metric_role::information});
    out.push_back({topo::cell_metric("efficiency_pct", "*"), "%"});
    out.back().relation = {relation_kind::fraction_of, topo::cell_metric("ceiling_gbps", "*")};
  }
  return out;
}

metric_decl latency_row_metric(const std::string& unit) {
  return {topo::cell_metric("latency_" + unit, "*"), unit, better::lower};
}

void report_bandwidth_row(
    state& st, const topo::cell_sweep& sweep,
    const std::function<bandwidth_cell_info(const topo::cell_sweep::cell&)>& info) {
  for (const auto& c : sweep.cells()) {
    if (!c.runnable()) continue;
    const topo::cell_stats s = topo::summarize_cell(c.samples);
    if (s.n == 0 || !(s.median > 0)) {
      st.check(false, c.column + ": no timed samples");
      continue;
    }
    const bandwidth_cell_info ci = info(c);
    const double gbps = ci.bytes_per_op / s.median / 1e9;
    const std::string name = topo::cell_metric("bandwidth_gbps", c.column);
    st.add_metric(name, "GB/s", gbps, true,
                  ci.what + ": bytes per operation / median time per operation over " +
                      std::to_string(s.n) + " samples, GB = 1e9 B");
    st.set_metric_samples(
        name, topo::cell_values(c.samples, [&](double t) { return ci.bytes_per_op / t / 1e9; }));
    check_noise(st, sweep, c, s);
    if (!ci.ceiling) {
      if (!ci.ceiling_unknown_reason.empty()) {
        st.add_warning(c.column + ": no efficiency: " + ci.ceiling_unknown_reason);
      }
      continue;
    }
    // The ceiling itself, for charts (a line over a size sweep) and readers: context, not gated.
    st.add_metric(topo::cell_metric("ceiling_gbps", c.column), "GB/s", ci.ceiling->gbps, true,
                  "theoretical " + ci.ceiling->description, metric_role::information);
    if (topo::exceeds_ceiling(gbps, ci.ceiling->gbps)) {
      st.add_warning(c.column + ": measured " + topo::format_gbps(gbps) +
                     " GB/s is above the theoretical " + ci.ceiling->description +
                     ": the topology describes another link (a VM's emulated port, NVLink-C2C?); "
                     "no efficiency reported");
      continue;
    }
    if (const auto eff = topo::efficiency_percent(gbps, ci.ceiling->gbps)) {
      const std::string pct = topo::cell_metric("efficiency_pct", c.column);
      st.add_metric(pct, "%", *eff, true,
                    "bandwidth_gbps_" + c.column + " / theoretical " + ci.ceiling->description);
      st.set_metric_hint(pct, metric_hint::fraction_of_peak);
      // The same ceiling for every sample: each sample's rate over it (valid, as the median's is).
      st.set_metric_samples(pct, topo::cell_values(c.samples, [&](double t) {
                              return 100.0 * ci.bytes_per_op / t / 1e9 / ci.ceiling->gbps;
                            }));
    }
  }
  warn_na(st, sweep);
}

void report_latency_row(state& st, const topo::cell_sweep& sweep, double items_per_op,
                        const std::string& unit, const std::string& method) {
  const double scale = unit == "us" ? 1e6 : 1e9;
  for (const auto& c : sweep.cells()) {
    if (!c.runnable()) continue;
    const topo::cell_stats s = topo::summarize_cell(c.samples);
    if (s.n == 0) {
      st.check(false, c.column + ": no timed samples");
      continue;
    }
    const std::string name = topo::cell_metric("latency_" + unit, c.column);
    st.add_metric(name, unit, s.median / items_per_op * scale, false,
                  method + " (median of " + std::to_string(s.n) + " samples)");
    st.set_metric_samples(
        name, topo::cell_values(c.samples, [&](double t) { return t / items_per_op * scale; }));
    check_noise(st, sweep, c, s);
  }
  warn_na(st, sweep);
}

}  // namespace infrabench::bw
