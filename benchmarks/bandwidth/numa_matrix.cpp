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
// Named as well: the STREAM constants and helpers share names with host_memory.cpp's, and a unity
// build (cmake/infrabench_unity.cmake) may compile the two files as one.
namespace numa_matrix_bench {

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

// One row's configuration: the kernel, the array size and the threads on the row's CPUs.
struct numa_config {
  kc::stream_op op = kc::stream_op::triad;
  std::size_t array_bytes = 0;
  std::size_t n = 0;  // elements per array
  int cpu_node = 0;   // the row
  topo::numa_row_plan plan;
  std::vector<int> cpus;  // the row's CPUs this process may use
  std::size_t threads = 0;
};

// The host's NUMA nodes (bw::host_nodes), saying so when sysfs has none and one is assumed.
[[nodiscard]] std::vector<topo::numa_node> read_nodes(infrabench::state& st) {
  bool assumed = false;
  std::vector<topo::numa_node> nodes = bw::host_nodes(&assumed);
  if (assumed) st.add_warning("no NUMA information in sysfs: treated as one node 0");
  return nodes;
}

// Reads the axes and plans the row; fails on an unknown kernel, skips a row that cannot run here.
[[nodiscard]] numa_config resolve_config(infrabench::state& st) {
  numa_config cfg;
  const auto op = kc::parse_stream_op(st.get_string("kernel"));
  if (!op) st.fail("unknown kernel " + st.get_string("kernel"));
  cfg.op = *op;
  cfg.array_bytes = static_cast<std::size_t>(st.get_int64("array_size"));
  cfg.n = cfg.array_bytes / sizeof(double);
  cfg.plan =
      topo::plan_numa_row(read_nodes(st), st.get_int64("cpu_node"), st.get_int64("mem_node"));
  if (!cfg.plan.skip.empty()) st.skip(cfg.plan.skip);

  // The row's CPUs that this process may use (taskset, cgroup cpusets, mpirun binding).
  const auto allowed = infrabench::allowed_cpus();
  for (int c : cfg.plan.cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) cfg.cpus.push_back(c);
  }
  if (cfg.cpus.empty()) {
    st.skip("none of NUMA node " + std::to_string(st.get_int64("cpu_node")) +
            "'s CPUs are in this process's affinity mask");
  }
  cfg.threads = static_cast<std::size_t>(st.get_int64("threads"));
  if (cfg.threads == 0) cfg.threads = cfg.cpus.size();
  if (cfg.threads > cfg.cpus.size()) {
    st.add_warning(std::to_string(cfg.threads) + " threads share the node's " +
                   std::to_string(cfg.cpus.size()) + " CPUs");
  }
  cfg.cpu_node = static_cast<int>(st.get_int64("cpu_node"));
  return cfg;
}

// Thread-level affinity: each worker stays on one of the row's CPUs for the whole run.
void pin_workers(infrabench::thread_pool& pool, const std::vector<int>& cpus) {
  pool.run([&](std::size_t t) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[t % cpus.size()], &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
      throw std::runtime_error("sched_setaffinity to CPU " + std::to_string(cpus[t % cpus.size()]) +
                               " failed");
    }
  });
}

// The cell's three arrays bound to `node`, first-touched by the threads that will stream them;
// nullopt after marking the cell n/a when the pages cannot be put on the node.
[[nodiscard]] std::optional<cell_arrays> place_arrays(infrabench::state& st, const numa_config& cfg,
                                                      infrabench::thread_pool& pool,
                                                      topo::cell_sweep& sweep,
                                                      const std::string& column, int node) {
  cell_arrays ca;
  ca.a = std::make_unique<bw::node_memory>(cfg.array_bytes, node, /*touch=*/false);
  ca.b = std::make_unique<bw::node_memory>(cfg.array_bytes, node, /*touch=*/false);
  ca.c = std::make_unique<bw::node_memory>(cfg.array_bytes, node, /*touch=*/false);
  const std::string& bind_error = ca.a->binding_error();
  if (!bind_error.empty() && node != cfg.cpu_node) {
    // Without the binding, first touch would put the pages on the row's own node.
    sweep.add_na(column, "cannot bind memory to node " + std::to_string(node) + ": " + bind_error);
    return std::nullopt;
  }
  if (!bind_error.empty()) {
    st.add_warning(column + ": " + bind_error + "; pages placed by first touch from node " +
                   std::to_string(cfg.cpu_node) + "'s CPUs");
  }
  const kc::stream_arrays arr = ca.arrays();
  pool.run([&](std::size_t t) {
    const auto r = chunk(cfg.n, t, cfg.threads);
    std::fill(arr.a + r.begin, arr.a + r.end, init_a);
    std::fill(arr.b + r.begin, arr.b + r.end, init_b);
    std::fill(arr.c + r.begin, arr.c + r.end, init_c);
  });
  std::optional<std::string> misplaced;
  for (const auto* m : {ca.a.get(), ca.b.get(), ca.c.get()}) {
    if (!misplaced) misplaced = bw::check_placement(m->data(), cfg.array_bytes, node);
  }
  if (misplaced && misplaced->starts_with("cannot query")) {
    st.add_warning(column + ": " + *misplaced);
  } else if (misplaced) {
    sweep.add_na(column, *misplaced, /*is_error=*/true);
    return std::nullopt;
  }
  return ca;
}

// One cell per memory node of the plan, timed on the host clock around one pass of the kernel.
void build_row(infrabench::state& st, const numa_config& cfg, infrabench::thread_pool& pool,
               topo::cell_sweep& sweep, std::vector<cell_arrays>& arrays) {
  const kc::stream_kernel kernel =
      kc::select_stream_kernel(cfg.op, kc::store_kind::regular, kc::best_simd_isa());
  arrays.reserve(cfg.plan.columns.size());
  const std::size_t n = cfg.n, threads = cfg.threads;
  for (const auto& col : cfg.plan.columns) {
    const std::string column = "mem" + std::to_string(col.node);
    if (!col.na_reason.empty()) {
      sweep.add_na(column, col.na_reason);
      continue;
    }
    auto ca = place_arrays(st, cfg, pool, sweep, column, col.node);
    if (!ca) continue;
    arrays.push_back(std::move(*ca));
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
}

// Every element of every cell's arrays: the written one holds the result, the others are intact.
void verify_arrays(infrabench::state& st, const numa_config& cfg,
                   const std::vector<cell_arrays>& arrays) {
  const auto expected = expected_after(cfg.op);
  for (const auto& ca : arrays) {
    const kc::stream_arrays arr = ca.arrays();
    const std::array<const double*, 3> data{arr.a, arr.b, arr.c};
    for (std::size_t k = 0; k < 3; ++k) {
      const auto bad =
          std::find_if(data[k], data[k] + cfg.n, [&](double v) { return v != expected[k]; });
      if (bad != data[k] + cfg.n) {
        st.check(false, "array " + std::string(1, static_cast<char>('a' + k)) + "[" +
                            std::to_string(bad - data[k]) + "] = " + std::to_string(*bad) +
                            ", expected " + std::to_string(expected[k]));
      }
    }
  }
}

// Each remote cell relative to the row's own node: the NUMA penalty as one number.
void report_relative_to_local(infrabench::state& st, const numa_config& cfg,
                              const topo::cell_sweep& sweep) {
  const topo::cell_sweep::cell* local = nullptr;
  for (const auto& c : sweep.cells()) {
    if (c.runnable() && c.column == "mem" + std::to_string(cfg.cpu_node)) local = &c;
  }
  if (!local || local->samples.empty()) return;
  const double local_median = topo::summarize_cell(local->samples).median;
  for (const auto& c : sweep.cells()) {
    if (!c.runnable() || &c == local || c.samples.empty()) continue;
    const double median = topo::summarize_cell(c.samples).median;
    st.add_metric(topo::cell_metric("relative_to_local_pct", c.column), "%",
                  100.0 * local_median / median, true,
                  "bandwidth_gbps_" + c.column + " / bandwidth_gbps_" + local->column);
  }
}

void report_row(infrabench::state& st, const numa_config& cfg, const topo::cell_sweep& sweep) {
  const double bytes =
      static_cast<double>(kc::stream_arrays_read(cfg.op) + kc::stream_arrays_written(cfg.op)) *
      static_cast<double>(cfg.n * sizeof(double));
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    bw::bandwidth_cell_info info;
    info.bytes_per_op = bytes;
    info.what = std::to_string(cfg.threads) + " threads on node " + std::to_string(cfg.cpu_node) +
                ", " + std::string(kc::to_string(cfg.op)) + " over memory on node " +
                c.column.substr(3) + " (STREAM byte count)";
    return info;
  });
  report_relative_to_local(st, cfg, sweep);
}

void numa_matrix(infrabench::state& st) {
  const numa_config cfg = resolve_config(st);
  infrabench::thread_pool pool(cfg.threads, /*pin=*/false);
  pin_workers(pool, cfg.cpus);
  topo::cell_sweep sweep;
  std::vector<cell_arrays> arrays;
  build_row(st, cfg, pool, sweep, arrays);
  bw::require_runnable(st, sweep);
  st.exec_timed([&] { return sweep.run_once(); }, "cpu_steady_clock");
  verify_arrays(st, cfg, arrays);
  report_row(st, cfg, sweep);
}

INFRABENCH_REGISTER(numa_matrix, "bandwidth/numa_matrix")
    .describe(
        "STREAM bandwidth from threads on one NUMA node (row) to memory bound to each node "
        "(columns bandwidth_gbps_mem<N>): the host's node x node matrix")
    .produces(bw::bandwidth_row_metrics(/*with_ceiling=*/false))
    .produces(topo::cell_metric("relative_to_local_pct", "*"), "%", infrabench::better::higher)
    .relate(topo::cell_metric("relative_to_local_pct", "*"), infrabench::relation_kind::fraction_of,
            "the local node's bandwidth")
    .add_int64_axis(
        "cpu_node", node_id_defaults(),
        infrabench::int_axis("NUMA node whose CPUs run the threads (the row); default: every "
                             "online node",
                             0))
    .add_int64_axis("mem_node", {-1},
                    infrabench::int_axis("memory node (column) to measure; -1 = every node", -1))
    .add_int64_axis("threads", {0},
                    infrabench::thread_count_axis("threads on the row's CPUs; 0 = one per CPU"))
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

}  // namespace numa_matrix_bench
}  // namespace
