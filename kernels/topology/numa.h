// NUMA topology from sysfs (/sys/devices/system/node), read through a root directory so tests run
// it on a fake tree, and the plan of one row of the CPU-node x memory-node bandwidth matrix.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::kernels::topology {

inline constexpr const char* sysfs_node_root = "/sys/devices/system/node";

// A sysfs list "0-3,8,10-11" -> {0,1,2,3,8,10,11} (sorted, unique); "" -> {}. nullopt when
// malformed.
[[nodiscard]] std::optional<std::vector<int>> parse_id_list(std::string_view text);

struct numa_node {
  int id = 0;
  std::vector<int> cpus;    // nodeN/cpulist
  bool has_memory = false;  // listed in has_memory (N_MEMORY), or nodeN/meminfo MemTotal > 0
};

// The online nodes under `root` (its `online` file; every nodeN directory when that is absent).
// Empty when `root` does not exist (a kernel without NUMA support): callers treat that as one
// node 0 with every CPU.
[[nodiscard]] std::vector<numa_node> read_numa_nodes(const std::string& root = sysfs_node_root);

// The online node ids; {0} when none can be read. Used for axis defaults, so it must not throw.
[[nodiscard]] std::vector<int> online_numa_node_ids(const std::string& root = sysfs_node_root);

// One row of the NUMA matrix: the CPUs its threads run on and the memory nodes (columns) it
// measures. `skip` is set when the row cannot run at all (the node has no CPUs, or does not
// exist); n/a columns carry their reason.
struct numa_row_plan {
  std::string skip;
  std::vector<int> cpus;
  struct column {
    int node = 0;
    std::string na_reason;  // empty: runnable
  };
  std::vector<column> columns;
};
[[nodiscard]] numa_row_plan plan_numa_row(const std::vector<numa_node>& nodes, long long cpu_node,
                                          long long mem_filter);

}  // namespace infrabench::kernels::topology
