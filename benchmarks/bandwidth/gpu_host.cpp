// bandwidth/h2d, bandwidth/d2h, bandwidth/bidirectional: host<->GPU copies over PCIe (or C2C), as
// nvbandwidth measures them. One row per host memory node (`numa_node`); its cells are the GPUs
// (bandwidth_gbps_gpu<N>, efficiency_pct_gpu<N> against the GPU's PCIe link). bidirectional
// measures each direction as nvbandwidth does, while the other direction copies twice the bytes
// at the same time (cells gpu<N>_h2d and gpu<N>_d2h), and the two directions summed over one
// bracket (cell gpu<N>; with copy=sm one split-warp kernel moves both). Timed by the harness
// (gpu_row, state::exec_gpu_batched): pinned copies are queued behind its blocking kernel and
// bracketed by one event pair per batch; pageable copies cannot be held (the runtime stages them
// through the calling thread), so the events bracket them as they are issued.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
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

// What one cell of a row times: one direction alone, one direction while the other copies twice
// the bytes (nvbandwidth's interfering copy, so it still runs when the measured one ends), or
// both directions summed over one bracket.
enum class cell_kind { up, down, up_under_down, down_under_up, both };

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

// One row's configuration, read from the axes.
struct host_config {
  direction dir = direction::h2d;
  std::size_t size = 0;
  bool pinned = false;
  bool sm = false;           // copy kernel instead of the copy engine
  std::int64_t node_id = 0;  // the row: the host memory's NUMA node
  bool up = false;           // host -> GPU copies
  bool down = false;         // GPU -> host copies
  [[nodiscard]] gpu::host_kind kind() const {
    return pinned ? gpu::host_kind::pinned : gpu::host_kind::pageable;
  }
  [[nodiscard]] int node() const { return static_cast<int>(node_id); }
  // Bytes of each buffer: bidirectional cells copy up to twice the size (the interfering copy).
  [[nodiscard]] std::size_t buffer_bytes() const { return up && down ? 2 * size : size; }
};

// What one row owns while it runs: the shared host source, the GPU cells and their timing.
// Declared in the order they must be torn down in reverse (cells before the row that times them).
struct host_row {
  std::unique_ptr<gpu::host_buffer> source;  // the source of host -> GPU copies
  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<host_cell>> cells;
};

// Reads the axes; skips the combinations pageable memory cannot run.
[[nodiscard]] host_config resolve_config(infrabench::state& st, direction dir) {
  host_config cfg;
  cfg.dir = dir;
  cfg.size = static_cast<std::size_t>(st.get_int64("size"));
  cfg.pinned = st.get_string("memory") == "pinned";
  cfg.sm = st.get_string("copy") == "sm";
  cfg.node_id = st.get_int64("numa_node");
  cfg.up = dir != direction::d2h;
  cfg.down = dir != direction::h2d;
  if (cfg.sm && !cfg.pinned) {
    st.skip(
        "copy=sm reads and writes host memory from kernels through mapped pinned pages; "
        "pageable memory has no device mapping (use memory=pinned)");
  }
  if (dir == direction::bidirectional && !cfg.pinned) {
    st.skip(
        "pageable copies are staged synchronously by the calling thread, so the two "
        "directions cannot overlap; bidirectional needs memory=pinned");
  }
  return cfg;
}

// The GPUs of the row's columns; skips when the gpu axis names none that exists.
[[nodiscard]] std::vector<int> resolve_gpus(infrabench::state& st) {
  const int count = gpu::node_device_count(st);
  std::string error;
  std::vector<int> gpus = topo::select_columns(count, st.get_int64("gpu"), &error);
  if (!error.empty()) st.skip(error);
  return gpus;
}

// Where the host pages really are: the row is labelled with this node.
void check_host_node(infrabench::state& st, const host_config& cfg, const gpu::host_buffer& b,
                     const std::string& what) {
  if (const auto& e = b.binding_error(); !e.empty()) {
    st.add_warning(what + " not bound to node " + std::to_string(cfg.node_id) + ": " + e +
                   "; placed by first touch from the node's CPUs");
  }
  if (const auto wrong = bw::check_placement(b.get(), b.bytes(), cfg.node())) {
    if (wrong->starts_with("cannot query")) {
      st.add_warning(what + ": " + *wrong);
    } else {
      st.check(false, what + ": " + *wrong);
    }
  }
}

// The host source of host -> GPU copies (none for d2h), filled with the pattern.
[[nodiscard]] std::unique_ptr<gpu::host_buffer> make_host_source(infrabench::state& st,
                                                                 const host_config& cfg) {
  if (!cfg.up) return nullptr;
  auto source = std::make_unique<gpu::host_buffer>(cfg.buffer_bytes(), cfg.kind(), cfg.node());
  topo::fill_pattern(source->get(), cfg.buffer_bytes(), host_seed);
  check_host_node(st, cfg, *source, "host source");
  return source;
}

// GPU g's buffers and streams, destinations filled so a copy that did not happen is seen. Throws
// when an allocation fails.
[[nodiscard]] std::unique_ptr<host_cell> make_cell(infrabench::state& st, const host_config& cfg,
                                                   int g) {
  auto c = std::make_unique<host_cell>();
  c->device = g;
  c->info = gpu::query_device(g);
  c->out_seed = host_seed + 1 + static_cast<std::uint64_t>(g);
  const std::size_t bytes = cfg.buffer_bytes();
  if (cfg.up) {
    c->dev_in = std::make_unique<gpu::device_buffer>(g, bytes);
    gpu::fill_device(g, c->dev_in->get(), bytes, ~host_seed);  // differs from the source
    c->up = std::make_unique<gpu::stream>(g);
  }
  if (cfg.down) {
    c->dev_out = std::make_unique<gpu::device_buffer>(g, bytes);
    gpu::fill_device(g, c->dev_out->get(), bytes, c->out_seed);
    c->host_out = std::make_unique<gpu::host_buffer>(bytes, cfg.kind(), cfg.node());
    check_host_node(st, cfg, *c->host_out, "host destination of GPU " + std::to_string(g));
    c->down = std::make_unique<gpu::stream>(g);
  }
  return c;
}

// One copy of `bytes` in the given direction on the cell's stream (current device: the cell's
// GPU).
void enqueue_up(const host_config& cfg, const host_cell& cell, const gpu::host_buffer& source,
                std::size_t bytes, int blocks) {
  if (cfg.sm) {
    IB_CUDA(static_cast<cudaError_t>(
        kcu::launch_copy(cell.dev_in->get(), source.device_ptr(), bytes, blocks, cell.up->get())));
  } else {
    IB_CUDA(cudaMemcpyAsync(cell.dev_in->get(), source.get(), bytes, cudaMemcpyHostToDevice,
                            cell.up->get()));
  }
}
void enqueue_down(const host_config& cfg, const host_cell& cell, std::size_t bytes, int blocks) {
  if (cfg.sm) {
    IB_CUDA(static_cast<cudaError_t>(kcu::launch_copy(
        cell.host_out->device_ptr(), cell.dev_out->get(), bytes, blocks, cell.down->get())));
  } else {
    IB_CUDA(cudaMemcpyAsync(cell.host_out->get(), cell.dev_out->get(), bytes,
                            cudaMemcpyDeviceToHost, cell.down->get()));
  }
}

[[nodiscard]] std::string column_of(int g, cell_kind k) {
  const std::string base = "gpu" + std::to_string(g);
  switch (k) {
    case cell_kind::up_under_down:
      return base + "_h2d";
    case cell_kind::down_under_up:
      return base + "_d2h";
    default:
      return base;
  }
}

// The cells of GPU g: the one direction of h2d/d2h; for bidirectional each direction under the
// other's interfering copy, then both summed.
[[nodiscard]] std::vector<cell_kind> kinds_of(direction d) {
  switch (d) {
    case direction::h2d:
      return {cell_kind::up};
    case direction::d2h:
      return {cell_kind::down};
    case direction::bidirectional:
      break;
  }
  return {cell_kind::up_under_down, cell_kind::down_under_up, cell_kind::both};
}

// The harness's timing of one cell. Pinned copies are held behind its blocking kernel. The
// measured direction's stream is bracketed; the other direction's stream either interferes
// (starts with the bracket, copies twice the bytes, is not waited for: nvbandwidth's method) or,
// for the summed cell, joins the bracket. With copy=sm the summed cell is one split-warp kernel
// (half the warps each way); two kernels that must overlap get one block per SM each.
void add_timed_cell(host_row& r, const host_config& cfg, cell_kind kind, const host_cell& cell) {
  infrabench::gpu_exec_options opts;
  opts.block = cfg.pinned;
  const gpu::host_buffer* source = r.source.get();
  const std::size_t size = cfg.size;
  const bool split = cfg.sm && kind == cell_kind::both;
  const bool two_streams = kind != cell_kind::up && kind != cell_kind::down && !split;
  const int blocks = gpu::copy_blocks(cell.info, two_streams ? 2 : 1);
  const bool main_up =
      kind == cell_kind::up || kind == cell_kind::up_under_down || kind == cell_kind::both;
  const gpu::stream& timed = main_up ? *cell.up : *cell.down;
  if (kind == cell_kind::up_under_down) opts.interfering.push_back({cell.down->get(), cell.device});
  if (kind == cell_kind::down_under_up) opts.interfering.push_back({cell.up->get(), cell.device});
  if (kind == cell_kind::both && !split) opts.joined.push_back({cell.down->get(), cell.device});
  r.row.add(r.sweep, column_of(cell.device, kind), {timed.get(), cell.device}, std::move(opts),
            [&cfg, &cell, source, size, blocks, kind, split] {
              if (split) {
                IB_CUDA(static_cast<cudaError_t>(kcu::launch_copy_split(
                    cell.dev_in->get(), source->device_ptr(), cell.host_out->device_ptr(),
                    cell.dev_out->get(), size, blocks, cell.up->get())));
                return;
              }
              switch (kind) {
                case cell_kind::up:
                  enqueue_up(cfg, cell, *source, size, blocks);
                  break;
                case cell_kind::down:
                  enqueue_down(cfg, cell, size, blocks);
                  break;
                case cell_kind::up_under_down:
                  enqueue_up(cfg, cell, *source, size, blocks);
                  enqueue_down(cfg, cell, 2 * size, blocks);
                  break;
                case cell_kind::down_under_up:
                  enqueue_down(cfg, cell, size, blocks);
                  enqueue_up(cfg, cell, *source, 2 * size, blocks);
                  break;
                case cell_kind::both:
                  enqueue_up(cfg, cell, *source, size, blocks);
                  enqueue_down(cfg, cell, size, blocks);
                  break;
              }
            });
}

// One cell per GPU, or n/a with the reason when its memory does not fit or cannot be set up.
void build_row(infrabench::state& st, const host_config& cfg, const std::vector<int>& gpus,
               host_row& r) {
  for (int g : gpus) {
    const auto kinds = kinds_of(cfg.dir);
    const auto na = [&](const std::string& why) {
      for (const cell_kind k : kinds) r.sweep.add_na(column_of(g, k), why, /*is_error=*/true);
    };
    const std::size_t device_bytes = cfg.buffer_bytes() * (cfg.up && cfg.down ? 2 : 1);
    if (std::string why = gpu::check_fits(g, device_bytes); !why.empty()) {
      na(why);
      continue;
    }
    std::unique_ptr<host_cell> c;
    try {
      c = make_cell(st, cfg, g);
    } catch (const std::exception& e) {
      na(e.what());
      continue;
    }
    r.cells.push_back(std::move(c));
    for (const cell_kind k : kinds) add_timed_cell(r, cfg, k, *r.cells.back());
  }
}

// Every destination holds its source's pattern.
void verify_cells(infrabench::state& st, const host_config& cfg, const host_row& r) {
  for (const auto& c : r.cells) {
    const gpu::device_scope scope(c->device);
    IB_CUDA(cudaDeviceSynchronize());
    // Every byte a copy wrote (the interfering copies write twice the size).
    const std::size_t bytes = cfg.buffer_bytes();
    if (cfg.up) {
      const auto problem = topo::compare_checksum(
          topo::pattern_checksum(host_seed, bytes),
          gpu::checksum_device(c->device, c->dev_in->get(), bytes),
          "GPU " + std::to_string(c->device) + " destination of host -> GPU");
      if (problem) st.check(false, *problem);
    }
    if (cfg.down) {
      if (const auto at = topo::find_pattern_mismatch(c->host_out->get(), bytes, c->out_seed)) {
        st.check(false, "host destination of GPU " + std::to_string(c->device) + " -> host: byte " +
                            std::to_string(*at) + " differs from the GPU's source pattern");
      }
    }
  }
}

// Bandwidth and efficiency per cell, against the GPU's PCIe link at its maximum (per direction;
// twice that for the summed cell).
void report_host_row(infrabench::state& st, const host_config& cfg, const topo::cell_sweep& sweep) {
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    const bool summed =
        cfg.dir == direction::bidirectional && c.column.find('_') == std::string::npos;
    const int directions = summed ? 2 : 1;
    bw::bandwidth_cell_info info;
    info.bytes_per_op = static_cast<double>(cfg.size) * directions;
    const int g = std::stoi(c.column.substr(3));
    const gpu::device_info d = gpu::query_device(g);
    std::string warning;
    info.ceiling = gpu::pcie_ceiling(d, directions, &info.ceiling_unknown_reason, &warning);
    if (!warning.empty()) st.add_warning(c.column + ": " + warning);
    std::string what = dir_name(cfg.dir);
    if (cfg.dir == direction::bidirectional) {
      what = summed ? "host <-> GPU, both directions summed over one bracket" +
                          std::string(cfg.sm ? " (one split-warp kernel: half the warps each way)"
                                             : "")
             : c.column.ends_with("_h2d")
                 ? "host -> GPU while GPU -> host copies twice the bytes at the same time"
                 : "GPU -> host while host -> GPU copies twice the bytes at the same time";
    }
    info.what = what + " (" + std::string(cfg.pinned ? "pinned" : "pageable") + ", " +
                (cfg.sm ? "SM copy kernel" : "copy engine") + "), host memory on node " +
                std::to_string(cfg.node_id) + ", GPU " + std::to_string(g);
    return info;
  });
}

void host_copies(infrabench::state& st, direction dir) {
  const host_config cfg = resolve_config(st, dir);
  const std::vector<int> gpus = resolve_gpus(st);
  // The issuing thread runs on the memory's node: pageable copies are staged by it, and pinned
  // copies' doorbells come from it.
  const auto nodes = bw::host_nodes();
  const bw::scoped_affinity affinity(gpu::usable_cpus(gpu::row_node(st, cfg.node_id, nodes)));
  host_row r;
  r.source = make_host_source(st, cfg);
  build_row(st, cfg, gpus, r);
  bw::require_runnable(st, r.sweep);
  r.row.exec(st, r.sweep);
  verify_cells(st, cfg, r);
  report_host_row(st, cfg, r.sweep);
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
      .produces(bw::bandwidth_row_metrics(/*with_ceiling=*/true))
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
        // One host source, and for d2h one destination per GPU (counted once here); the
        // bidirectional buffers hold twice the size (the interfering copies).
        const std::int64_t size = infrabench::config_int64(cfg, "size", 0);
        return dir == direction::bidirectional ? 4 * size : size;
      });
}

// One benchmark per direction, as the collectives register from their table.
struct direction_row {
  std::string_view name;
  direction dir;
  std::string_view description;
  infrabench::data_hop hop = infrabench::data_hop::none;  // the roofline's h2d hop: host -> GPU
};

const direction_row direction_rows[] = {
    {"bandwidth/h2d", direction::h2d,
     "host -> GPU copy bandwidth per host NUMA node (row) and GPU (columns bandwidth_gbps_gpu<N>, "
     "efficiency_pct_gpu<N> of the PCIe link); spin-kernel queued, CUDA-event timed, checksum "
     "verified",
     infrabench::data_hop::h2d},
    {"bandwidth/d2h", direction::d2h,
     "GPU -> host copy bandwidth per host NUMA node (row) and GPU (columns bandwidth_gbps_gpu<N>, "
     "efficiency_pct_gpu<N> of the PCIe link)",
     infrabench::data_hop::none},
    {"bandwidth/bidirectional", direction::bidirectional,
     "simultaneous host -> GPU and GPU -> host copies per host NUMA node (row) and GPU: each "
     "direction while the other copies twice the bytes, as nvbandwidth measures it "
     "(bandwidth_gbps_gpu<N>_h2d, _d2h), and both summed over one bracket (bandwidth_gbps_gpu<N>, "
     "against twice the PCIe link)",
     infrabench::data_hop::none},
};

[[maybe_unused]] const bool registered_gpu_host = [] {
  for (const direction_row& r : direction_rows) {
    const direction dir = r.dir;
    host_axes(infrabench::registry::instance()
                  .add(std::string(r.name), [dir](infrabench::state& st) { host_copies(st, dir); })
                  .describe(std::string(r.description)),
              dir)
        .measures(r.hop);
  }
  return true;
}();

}  // namespace
