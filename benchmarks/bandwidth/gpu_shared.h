// Host-side helpers shared by the GPU data-movement benchmarks and bandwidth/numa_matrix (no CUDA
// here): memory bound to a NUMA node, thread affinity, and turning a measured row of cells into
// the report's metrics ("bandwidth_gbps_gpu1", "efficiency_pct_gpu1"), warnings and skips.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sched.h>

#include "infrabench/axis.h"
#include "infrabench/metric_decl.h"
#include "topology/link.h"
#include "topology/matrix.h"
#include "topology/numa.h"

namespace infrabench {
class state;
}

namespace infrabench::bw {

namespace topo = infrabench::kernels::topology;

// Anonymous memory whose pages are bound to one NUMA node (mbind MPOL_BIND) before they are first
// touched, then touched. node < 0: no binding (first touch by the caller decides). Binding is done
// with the raw system call so no libnuma is needed; where it is refused (a container's seccomp
// policy, a kernel without NUMA) `binding_error()` says why and the pages land by first touch.
class node_memory {
 public:
  node_memory(std::size_t bytes, int node, bool touch = true);
  ~node_memory();
  node_memory(const node_memory&) = delete;
  node_memory& operator=(const node_memory&) = delete;

  [[nodiscard]] void* data() const { return m_data; }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }
  [[nodiscard]] const std::string& binding_error() const { return m_binding_error; }

 private:
  void* m_data = nullptr;
  std::size_t m_bytes = 0;
  std::size_t m_mapped = 0;
  std::string m_binding_error;
};

// Where the pages of [p, p + bytes) live, sampled (move_pages without moving): nullopt when every
// sampled page is on `node`, else a reason ("12 of 64 sampled pages are on node 1, not 0", or why
// the query failed).
[[nodiscard]] std::optional<std::string> check_placement(const void* p, std::size_t bytes,
                                                         int node);

// Pins the calling thread to `cpus` for its lifetime and restores its previous affinity. An empty
// list leaves the affinity alone.
class scoped_affinity {
 public:
  explicit scoped_affinity(const std::vector<int>& cpus);
  ~scoped_affinity();
  scoped_affinity(const scoped_affinity&) = delete;
  scoped_affinity& operator=(const scoped_affinity&) = delete;
  [[nodiscard]] bool applied() const { return m_applied; }

 private:
  cpu_set_t m_saved{};
  bool m_saved_ok = false;
  bool m_applied = false;
};

// The host's NUMA nodes from sysfs or, on a kernel built without NUMA (sysfs lists none), one node
// 0 with every CPU this process may use and all the memory; `*assumed` (when given) says which.
[[nodiscard]] std::vector<topo::numa_node> host_nodes(bool* assumed = nullptr);

// "1.5 GiB".
[[nodiscard]] std::string format_gib(double bytes);

// Records every cell of the row in the result (`cells`: measured, or n/a with the reason), then
// leaves the benchmark when no cell can run: failed when any n/a cell is an error (not enough
// memory, an allocation failed), else skipped; the reason lists every cell's.
void require_runnable(state& st, const topo::cell_sweep& sweep);

// What one bandwidth cell moved and the link it crossed.
struct bandwidth_cell_info {
  double bytes_per_op = 0;               // bytes one operation moves (the sample is per op)
  std::optional<topo::ceiling> ceiling;  // theoretical bandwidth, when the topology is known
  std::string ceiling_unknown_reason;    // why not, when it is not
  std::string what;                      // "host memory on node 0 -> GPU 1", for the method text
};

// Adds, for every runnable cell, bandwidth_gbps_<column> (bytes_per_op / median sample time), when
// the ceiling is known ceiling_gbps_<column> (role information) and, when it is not exceeded,
// efficiency_pct_<column>; n/a cells become warnings;
// a cell whose samples are noisy (robust CV above 10%) marks the result invalid.
void report_bandwidth_row(
    state& st, const topo::cell_sweep& sweep,
    const std::function<bandwidth_cell_info(const topo::cell_sweep::cell&)>& info);

// What report_bandwidth_row adds, for the registration of a benchmark that calls it:
// bandwidth_gbps_<column> (the headline) and, with a known ceiling, ceiling_gbps_<column> and
// efficiency_pct_<column>.
[[nodiscard]] std::vector<metric_decl> bandwidth_row_metrics(bool with_ceiling);
// What report_latency_row adds with `unit`: latency_<unit>_<column>.
[[nodiscard]] metric_decl latency_row_metric(const std::string& unit);

// Adds latency_<unit>_<column> = median sample / items_per_op for every runnable cell (unit "ns"
// or "us"), plus the same n/a warnings and noise checks.
void report_latency_row(state& st, const topo::cell_sweep& sweep, double items_per_op,
                        const std::string& unit, const std::string& method);

}  // namespace infrabench::bw
