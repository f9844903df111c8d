// bandwidth/numa_matrix: the host analogue of the GPU peer-to-peer matrix. Threads on the CPUs of
// one NUMA node (the row, `cpu_node`) run a STREAM kernel over arrays bound to each memory node
// (the columns), so a slow inter-socket link or a badly interleaved node shows as one low cell.
// One row per configuration; cells are metrics bandwidth_gbps_mem<N>.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cpu/stream.h"
#include "gpu_shared.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "topology/numa.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace topo = infrabench::kernels::topology;
namespace bw = infrabench::bw;

constexpr double init_a = 1.0, init_b = 2.0, init_c = 0.5, scalar = 3.0;

// a, b, c after any number of runs of `op` from the initial values (each kernel writes an array it
// does not read).
[[nodiscard]] std::array<double, 3> expected_after(kc::stream_op op) {
  double a = init_a, b = init_b, c = init_c;
  if (op == kc::stream_op::copy) c = a;
  if (op == kc::stream_op::triad) a = b + scalar * c;
  return {a, b, c};
}

// Thread t's elements: page-aligned chunks, so each thread first-touches the pages it streams.
struct range {
  std::size_t begin, end;
};
[[nodiscard]] range chunk(std::size_t n, std::size_t t, std::size_t threads) {
  constexpr std::size_t page_elems = 4096 / sizeof(double);
  const auto bound = [&](std::size_t k) {
    return k >= threads ? n : std::min(n, n * k / threads / page_elems * page_elems);
  };
  return {bound(t), bound(t + 1)};
}

// The three arrays of one cell, bound to its memory node.
struct cell_arrays {
  std::unique_ptr<bw::node_memory> a, b, c;
  [[nodiscard]] kc::stream_arrays arrays() const {
    return {static_cast<double*>(a->data()), static_cast<double*>(b->data()),
            static_cast<double*>(c->data())};
  }
};

// Node ids for the cpu_node default: read once, at registration, from sysfs (no probe needed:
// the node list is fixed for the life of the process). A machine without NUMA sysfs has node 0.
[[nodiscard]] const std::vector<int>& node_ids() {
  static const std::vector<int> ids = topo::online_numa_node_ids();
  return ids;
}

[[nodiscard]] std::vector<std::int64_t> node_id_defaults() {
  std::vector<std::int64_t> out;
  for (int id : node_ids()) out.push_back(id);
  return out;
}

void numa_matrix(infrabench::state& st) {
  const auto op = kc::parse_stream_op(st.get_string("kernel"));
  if (!op) st.fail("unknown kernel " + st.get_string("kernel"));
  const auto array_bytes = static_cast<std::size_t>(st.get_int64("array_size"));
  const std::size_t n = array_bytes / sizeof(double);

  std::vector<topo::numa_node> nodes = topo::read_numa_nodes();
  if (nodes.empty()) {
    // No NUMA in sysfs (kernel built without it): one node with every CPU and all memory.
    topo::numa_node only;
    only.id = 0;
    only.cpus = infrabench::allowed_cpus();
    only.has_memory = true;
    nodes.push_back(only);
    st.add_warning("no NUMA information in sysfs: treated as one node 0");
  }
  const auto plan = topo::plan_numa_row(nodes, st.get_int64("cpu_node"), st.get_int64("mem_node"));
  if (!plan.skip.empty()) st.skip(plan.skip);

  // The row's CPUs that this process may use (taskset, cgroup cpusets, mpirun binding).
  std::vector<int> cpus;
  const auto allowed = infrabench::allowed_cpus();
  for (int c : plan.cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) cpus.push_back(c);
  }
  if (cpus.empty()) {
    st.skip("none of NUMA node " + std::to_string(st.get_int64("cpu_node")) +
            "'s CPUs are in this process's affinity mask");
  }
  auto threads = static_cast<std::size_t>(st.get_int64("threads"));
  if (threads == 0) threads = cpus.size();
  if (threads > cpus.size()) {
    st.add_warning(std::to_string(threads) + " threads share the node's " +
                   std::to_string(cpus.size()) + " CPUs");
  }

  infrabench::thread_pool pool(threads, /*pin=*/false);
  pool.run([&](std::size_t t) {
    // Thread-level affinity: each worker stays on one of the row's CPUs for the whole run.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[t % cpus.size()], &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
      throw std::runtime_error("sched_setaffinity to CPU " + std::to_string(cpus[t % cpus.size()]) +
                               " failed");
    }
  });

  const kc::stream_kernel kernel =
      kc::select_stream_kernel(*op, kc::store_kind::regular, kc::best_simd_isa());
  topo::cell_sweep sweep;
  std::vector<cell_arrays> arrays;
  arrays.reserve(plan.columns.size());
  const int cpu_node = static_cast<int>(st.get_int64("cpu_node"));
  for (const auto& col : plan.columns) {
    const std::string column = "mem" + std::to_string(col.node);
    if (!col.na_reason.empty()) {
      sweep.add_na(column, col.na_reason);
      continue;
    }
    cell_arrays ca;
    ca.a = std::make_unique<bw::node_memory>(array_bytes, col.node, /*touch=*/false);
    ca.b = std::make_unique<bw::node_memory>(array_bytes, col.node, /*touch=*/false);
    ca.c = std::make_unique<bw::node_memory>(array_bytes, col.node, /*touch=*/false);
    const std::string& bind_error = ca.a->binding_error();
    if (!bind_error.empty() && col.node != cpu_node) {
      // Without the binding, first touch would put the pages on the row's own node.
      sweep.add_na(column,
                   "cannot bind memory to node " + std::to_string(col.node) + ": " + bind_error);
      continue;
    }
    if (!bind_error.empty()) {
      st.add_warning(column + ": " + bind_error + "; pages placed by first touch from node " +
                     std::to_string(cpu_node) + "'s CPUs");
    }
    const kc::stream_arrays arr = ca.arrays();
    pool.run([&](std::size_t t) {
      const auto r = chunk(n, t, threads);
      std::fill(arr.a + r.begin, arr.a + r.end, init_a);
      std::fill(arr.b + r.begin, arr.b + r.end, init_b);
      std::fill(arr.c + r.begin, arr.c + r.end, init_c);
    });
    std::optional<std::string> misplaced;
    for (const auto* m : {ca.a.get(), ca.b.get(), ca.c.get()}) {
      if (!misplaced) misplaced = bw::check_placement(m->data(), array_bytes, col.node);
    }
    if (misplaced && misplaced->starts_with("cannot query")) {
      st.add_warning(column + ": " + *misplaced);
    } else if (misplaced) {
      sweep.add_na(column, *misplaced, /*is_error=*/true);
      continue;
    }
    arrays.push_back(std::move(ca));
    const std::size_t index = arrays.size() - 1;
    sweep.add(column, [&pool, &arrays, index, kernel, n, threads] {
      const kc::stream_arrays a = arrays[index].arrays();
      const auto t0 = std::chrono::steady_clock::now();
      pool.run([&](std::size_t t) {
        const auto r = chunk(n, t, threads);
        kernel(a, scalar, r.begin, r.end);
      });
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  bw::require_runnable(st, sweep);

  st.exec_timed([&] { return sweep.run_once(); }, "cpu_steady_clock");

  // Every element of every cell's arrays: the written one holds the result, the others are intact.
  const auto expected = expected_after(*op);
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const kc::stream_arrays arr = arrays[i].arrays();
    const std::array<const double*, 3> data{arr.a, arr.b, arr.c};
    for (std::size_t k = 0; k < 3; ++k) {
      const auto bad =
          std::find_if(data[k], data[k] + n, [&](double v) { return v != expected[k]; });
      if (bad != data[k] + n) {
        st.check(false, "array " + std::string(1, static_cast<char>('a' + k)) + "[" +
                            std::to_string(bad - data[k]) + "] = " + std::to_string(*bad) +
                            ", expected " + std::to_string(expected[k]));
      }
    }
  }

  const double bytes =
      static_cast<double>(kc::stream_arrays_read(*op) + kc::stream_arrays_written(*op)) *
      static_cast<double>(n * sizeof(double));
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    bw::bandwidth_cell_info info;
    info.bytes_per_op = bytes;
    info.what = std::to_string(threads) + " threads on node " + std::to_string(cpu_node) + ", " +
                std::string(kc::to_string(*op)) + " over memory on node " + c.column.substr(3) +
                " (STREAM byte count)";
    return info;
  });

  // Each remote cell relative to the row's own node: the NUMA penalty as one number.
  const topo::cell_sweep::cell* local = nullptr;
  for (const auto& c : sweep.cells()) {
    if (c.runnable() && c.column == "mem" + std::to_string(cpu_node)) local = &c;
  }
  if (local && !local->samples.empty()) {
    const double local_median = topo::summarize_cell(local->samples).median;
    for (const auto& c : sweep.cells()) {
      if (!c.runnable() || &c == local || c.samples.empty()) continue;
      const double median = topo::summarize_cell(c.samples).median;
      st.add_metric(topo::cell_metric("relative_to_local_pct", c.column), "%",
                    100.0 * local_median / median, true,
                    "bandwidth_gbps_" + c.column + " / bandwidth_gbps_" + local->column);
    }
  }
}

INFRABENCH_REGISTER(numa_matrix, "bandwidth/numa_matrix")
    .describe(
        "STREAM bandwidth from threads on one NUMA node (row) to memory bound to each node "
        "(columns bandwidth_gbps_mem<N>): the host's node x node matrix")
    .add_int64_axis(
        "cpu_node", node_id_defaults(),
        infrabench::int_axis("NUMA node whose CPUs run the threads (the row); default: every "
                             "online node",
                             0))
    .add_int64_axis("mem_node", {-1},
                    infrabench::int_axis("memory node (column) to measure; -1 = every node", -1))
    .add_int64_axis("threads", {0},
                    infrabench::int_axis("threads on the row's CPUs; 0 = one per CPU", 0))
    .add_int64_axis("array_size", {std::int64_t{128} << 20},
                    infrabench::bytes_axis("bytes per STREAM array (three per cell)", 4096))
    .add_string_axis("kernel", {"triad"},
                     infrabench::choice_axis("STREAM kernel: copy c=a or triad a=b+s*c",
                                             {"copy", "triad"}))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      std::int64_t bytes = 0, columns = 1;
      for (const auto& [name, value] : cfg) {
        if (name == "array_size") bytes = std::get<std::int64_t>(value);
        if (name == "mem_node" && std::get<std::int64_t>(value) == -1) {
          columns = static_cast<std::int64_t>(node_ids().size());
        }
      }
      return 3 * bytes * columns;
    });

}  // namespace
