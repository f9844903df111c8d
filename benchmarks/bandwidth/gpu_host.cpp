// bandwidth/h2d, bandwidth/d2h, bandwidth/bidirectional: host<->GPU copies over PCIe (or C2C), as
// nvbandwidth measures them. One row per host memory node (`numa_node`); its cells are the GPUs
// (bandwidth_gbps_gpu<N>, efficiency_pct_gpu<N> against the GPU's PCIe link). Timed by the
// harness (gpu_row, state::exec_gpu_batched): pinned copies are queued behind its blocking kernel
// and bracketed by one event pair per batch; pageable copies cannot be held (the runtime stages
// them through the calling thread), so the events bracket them as they are issued.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cuda/copy.h"
#include "gpu_common.h"
#include "gpu_shared.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "topology/numa.h"
#include "topology/pattern.h"

namespace {

namespace topo = infrabench::kernels::topology;
namespace kcu = infrabench::kernels::cuda;
namespace bw = infrabench::bw;
namespace gpu = infrabench::bw::gpu;

enum class direction { h2d, d2h, bidirectional };

constexpr std::uint64_t host_seed = 0x5eed0001;

// Everything one GPU cell owns. Host destinations are per cell so each GPU's copies are verified
// on their own; the host source is shared (read only).
struct host_cell {
  int device = 0;
  gpu::device_info info;
  std::unique_ptr<gpu::device_buffer> dev_in;   // h2d destination
  std::unique_ptr<gpu::device_buffer> dev_out;  // d2h source
  std::unique_ptr<gpu::host_buffer> host_out;   // d2h destination
  std::unique_ptr<gpu::stream> up, down;        // h2d and d2h streams
  std::uint64_t out_seed = 0;
};

[[nodiscard]] std::string dir_name(direction d) {
  return d == direction::h2d ? "host -> GPU" : d == direction::d2h ? "GPU -> host" : "host <-> GPU";
}

void host_copies(infrabench::state& st, direction dir) {
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const bool pinned = st.get_string("memory") == "pinned";
  const bool sm = st.get_string("copy") == "sm";
  const auto node_id = st.get_int64("numa_node");

  if (sm && !pinned) {
    st.skip(
        "copy=sm reads and writes host memory from kernels through mapped pinned pages; "
        "pageable memory has no device mapping (use memory=pinned)");
  }
  if (dir == direction::bidirectional && !pinned) {
    st.skip(
        "pageable copies are staged synchronously by the calling thread, so the two "
        "directions cannot overlap; bidirectional needs memory=pinned");
  }

  const int count = gpu::device_count();
  std::string error;
  const std::vector<int> gpus = topo::select_columns(count, st.get_int64("gpu"), &error);
  if (!error.empty()) st.skip(error);

  const auto nodes = gpu::host_nodes();
  const topo::numa_node* node = nullptr;
  for (const auto& n : nodes) {
    if (n.id == node_id) node = &n;
  }
  if (!node) {
    std::vector<int> ids;
    for (const auto& n : nodes) ids.push_back(n.id);
    std::string why;
    (void)topo::select_ids(ids, node_id, &why, "NUMA node");
    st.skip(why);
  }
  if (!node->has_memory) st.skip("NUMA node " + std::to_string(node_id) + " has no memory");
  // The issuing thread runs on the memory's node: pageable copies are staged by it, and pinned
  // copies' doorbells come from it.
  const bw::scoped_affinity affinity(gpu::usable_cpus(*node));

  const gpu::host_kind kind = pinned ? gpu::host_kind::pinned : gpu::host_kind::pageable;
  const bool up = dir != direction::d2h;
  const bool down = dir != direction::h2d;
  std::unique_ptr<gpu::host_buffer> host_in;  // the source of host -> GPU copies
  if (up) {
    host_in = std::make_unique<gpu::host_buffer>(size, kind, static_cast<int>(node_id));
    topo::fill_pattern(host_in->get(), size, host_seed);
  }
  // Where the host pages really are: the row is labelled with this node.
  const auto check_node = [&](const gpu::host_buffer& b, const std::string& what) {
    if (const auto& e = b.binding_error(); !e.empty()) {
      st.add_warning(what + " not bound to node " + std::to_string(node_id) + ": " + e +
                     "; placed by first touch from the node's CPUs");
    }
    if (const auto wrong = bw::check_placement(b.get(), b.bytes(), static_cast<int>(node_id))) {
      if (wrong->starts_with("cannot query")) {
        st.add_warning(what + ": " + *wrong);
      } else {
        st.check(false, what + ": " + *wrong);
      }
    }
  };
  if (host_in) check_node(*host_in, "host source");
  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<host_cell>> cells;
  for (int g : gpus) {
    const std::string column = "gpu" + std::to_string(g);
    const std::size_t device_bytes = size * (up && down ? 2 : 1);
    if (std::string why = gpu::check_fits(g, device_bytes); !why.empty()) {
      sweep.add_na(column, why, /*is_error=*/true);
      continue;
    }
    auto c = std::make_unique<host_cell>();
    try {
      c->device = g;
      c->info = gpu::query_device(g);
      c->out_seed = host_seed + 1 + static_cast<std::uint64_t>(g);
      if (up) {
        c->dev_in = std::make_unique<gpu::device_buffer>(g, size);
        gpu::fill_device(g, c->dev_in->get(), size, ~host_seed);  // differs from the source
        c->up = std::make_unique<gpu::stream>(g);
      }
      if (down) {
        c->dev_out = std::make_unique<gpu::device_buffer>(g, size);
        gpu::fill_device(g, c->dev_out->get(), size, c->out_seed);
        c->host_out = std::make_unique<gpu::host_buffer>(size, kind, static_cast<int>(node_id));
        check_node(*c->host_out, "host destination of GPU " + std::to_string(g));
        c->down = std::make_unique<gpu::stream>(g);
      }
    } catch (const std::exception& e) {
      sweep.add_na(column, e.what(), /*is_error=*/true);
      continue;
    }
    host_cell* cell = c.get();
    cells.push_back(std::move(c));
    const int blocks = gpu::copy_blocks(cell->info);
    // One copy in the given direction on stream s (current device: the cell's GPU).
    auto enqueue_up = [cell, &host_in, size, sm, blocks] {
      if (sm) {
        IB_CUDA(static_cast<cudaError_t>(kcu::launch_copy(
            cell->dev_in->get(), host_in->device_ptr(), size, blocks, cell->up->get())));
      } else {
        IB_CUDA(cudaMemcpyAsync(cell->dev_in->get(), host_in->get(), size, cudaMemcpyHostToDevice,
                                cell->up->get()));
      }
    };
    auto enqueue_down = [cell, size, sm, blocks] {
      if (sm) {
        IB_CUDA(static_cast<cudaError_t>(kcu::launch_copy(
            cell->host_out->device_ptr(), cell->dev_out->get(), size, blocks, cell->down->get())));
      } else {
        IB_CUDA(cudaMemcpyAsync(cell->host_out->get(), cell->dev_out->get(), size,
                                cudaMemcpyDeviceToHost, cell->down->get()));
      }
    };
    // The harness's timing of one cell: pinned copies held behind its blocking kernel; the
    // bidirectional d2h stream joins the h2d stream's bracket (it starts at the start event, and
    // the stop event waits for it).
    infrabench::gpu_exec_options opts;
    opts.block = pinned;
    const gpu::stream& timed = up ? *cell->up : *cell->down;
    if (up && down) opts.joined.push_back({cell->down->get(), g});
    row.add(sweep, column, {timed.get(), g}, std::move(opts), [up, down, enqueue_up, enqueue_down] {
      if (up) enqueue_up();
      if (down) enqueue_down();
    });
  }
  bw::require_runnable(st, sweep);
  row.exec(st, sweep);

  // Verification: every destination holds its source's pattern.
  for (const auto& c : cells) {
    const gpu::device_scope scope(c->device);
    IB_CUDA(cudaDeviceSynchronize());
    if (up) {
      const auto problem = topo::compare_checksum(
          topo::pattern_checksum(host_seed, size),
          gpu::checksum_device(c->device, c->dev_in->get(), size),
          "GPU " + std::to_string(c->device) + " destination of host -> GPU");
      if (problem) st.check(false, *problem);
    }
    if (down) {
      if (const auto at = topo::find_pattern_mismatch(c->host_out->get(), size, c->out_seed)) {
        st.check(false, "host destination of GPU " + std::to_string(c->device) + " -> host: byte " +
                            std::to_string(*at) + " differs from the GPU's source pattern");
      }
    }
  }

  // Read the links now, while they are still trained up from the copies (GPUs drop to a low
  // PCIe speed when idle).
  const int directions = up && down ? 2 : 1;
  const double bytes_per_op = static_cast<double>(size) * directions;
  std::vector<std::string> warned;
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    bw::bandwidth_cell_info info;
    info.bytes_per_op = bytes_per_op;
    const int g = std::stoi(c.column.substr(3));
    const gpu::device_info d = gpu::query_device(g);
    std::string warning;
    info.ceiling = gpu::pcie_ceiling(d, directions, &info.ceiling_unknown_reason, &warning);
    if (!warning.empty()) st.add_warning(c.column + ": " + warning);
    info.what = dir_name(dir) + " (" + std::string(pinned ? "pinned" : "pageable") + ", " +
                (sm ? "SM copy kernel" : "copy engine") + "), host memory on node " +
                std::to_string(node_id) + ", GPU " + std::to_string(g) +
                (directions == 2 ? ", both directions summed" : "");
    return info;
  });
}

// The NUMA nodes for the row axis's default, read once from sysfs at registration (they do not
// change while the process runs; a machine without NUMA sysfs has node 0).
[[nodiscard]] std::vector<std::int64_t> node_defaults() {
  std::vector<std::int64_t> out;
  for (int id : topo::online_numa_node_ids()) out.push_back(id);
  return out;
}

infrabench::benchmark& host_axes(infrabench::benchmark& b, direction dir) {
  return b.require(infrabench::req::cuda)
      .add_int64_axis("size",
                      {std::int64_t{4} << 10, std::int64_t{64} << 10, std::int64_t{1} << 20,
                       std::int64_t{16} << 20, std::int64_t{256} << 20},
                      infrabench::bytes_axis("bytes per copy (sweep: -a size=4KiB:1GiB)", 1))
      .add_string_axis(
          "memory", {"pinned", "pageable"},
          infrabench::choice_axis("host memory: pinned (registered, DMA-able) or pageable",
                                  {"pinned", "pageable"}))
      .add_string_axis("copy", {"ce", "sm"},
                       infrabench::choice_axis(
                           "ce: cudaMemcpyAsync on a copy engine; sm: a copy kernel", {"ce", "sm"}))
      .add_int64_axis(
          "numa_node", node_defaults(),
          infrabench::int_axis("NUMA node of the host memory (the row); default: every node", 0))
      .add_int64_axis("gpu", {-1},
                      infrabench::int_axis("GPU (column) to measure; -1 = every GPU", -1))
      .memory_estimate([dir](const infrabench::config& cfg) -> std::int64_t {
        // One host source, and for d2h one destination per GPU (counted once here).
        const std::int64_t size = infrabench::config_int64(cfg, "size", 0);
        return dir == direction::bidirectional ? 2 * size : size;
      });
}

void h2d(infrabench::state& st) {
  host_copies(st, direction::h2d);
}
void d2h(infrabench::state& st) {
  host_copies(st, direction::d2h);
}
void bidirectional(infrabench::state& st) {
  host_copies(st, direction::bidirectional);
}

[[maybe_unused]] infrabench::benchmark& reg_h2d = host_axes(
    infrabench::registry::instance()
        .add("bandwidth/h2d", h2d)
        .describe(
            "host -> GPU copy bandwidth per host NUMA node (row) and GPU (columns "
            "bandwidth_gbps_gpu<N>, efficiency_pct_gpu<N> of the PCIe link); spin-kernel queued, "
            "CUDA-event timed, checksum verified"),
    direction::h2d);
[[maybe_unused]] infrabench::benchmark& reg_d2h =
    host_axes(infrabench::registry::instance()
                  .add("bandwidth/d2h", d2h)
                  .describe("GPU -> host copy bandwidth per host NUMA node (row) and GPU (columns "
                            "bandwidth_gbps_gpu<N>, efficiency_pct_gpu<N> of the PCIe link)"),
              direction::d2h);
[[maybe_unused]] infrabench::benchmark& reg_bidirectional = host_axes(
    infrabench::registry::instance()
        .add("bandwidth/bidirectional", bidirectional)
        .describe(
            "simultaneous host -> GPU and GPU -> host copies, both directions summed, per host "
            "NUMA "
            "node (row) and GPU (columns), against twice the PCIe link's per-direction ceiling"),
    direction::bidirectional);

}  // namespace
