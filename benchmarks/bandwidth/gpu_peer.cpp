// bandwidth/d2d and bandwidth/p2p: copies inside one GPU (against its memory peak) and between
// GPUs (against the NVLinks or PCIe links joining them). p2p gives one row per source GPU (`src`)
// whose cells are the destination GPUs, so the report's table for p2p is nvbandwidth's src x dst
// matrix; a pair without peer access is n/a with the reason and the rest of the row runs.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cuda/copy.h"
#include "gpu_common.h"
#include "gpu_shared.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "topology/pattern.h"

namespace {

namespace topo = infrabench::kernels::topology;
namespace kcu = infrabench::kernels::cuda;
namespace bw = infrabench::bw;
namespace gpu = infrabench::bw::gpu;

constexpr std::uint64_t seed_forward = 0x5eed1001;
constexpr std::uint64_t seed_reverse = 0x5eed2002;
constexpr std::uint64_t seed_poison = 0xdeadbeef;

// One copy of `bytes` from src to dst on `s` (whose device must be current): a copy engine
// (cudaMemcpyAsync; between GPUs with peer access it is a direct peer copy) or the SM copy kernel.
void enqueue_copy(bool sm, void* dst, const void* src, std::size_t bytes, int blocks,
                  const gpu::stream& s) {
  if (sm) {
    IB_CUDA(static_cast<cudaError_t>(kcu::launch_copy(dst, src, bytes, blocks, s.get())));
  } else {
    IB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.get()));
  }
}

// ---- bandwidth/d2d ----------------------------------------------------------------------------

struct d2d_cell {
  int device = 0;
  gpu::device_info info;
  std::unique_ptr<gpu::device_buffer> src, dst;
  std::unique_ptr<gpu::stream> s;
};

void d2d(infrabench::state& st) {
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const bool sm = st.get_string("copy") == "sm";
  std::string error;
  const auto gpus = topo::select_columns(gpu::node_device_count(st), st.get_int64("gpu"), &error);
  if (!error.empty()) st.skip(error);

  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<d2d_cell>> cells;
  for (int g : gpus) {
    const std::string column = "gpu" + std::to_string(g);
    if (std::string why = gpu::check_fits(g, 2 * size); !why.empty()) {
      sweep.add_na(column, why, /*is_error=*/true);
      continue;
    }
    auto c = std::make_unique<d2d_cell>();
    try {
      c->device = g;
      c->info = gpu::query_device(g);
      c->src = std::make_unique<gpu::device_buffer>(g, size);
      c->dst = std::make_unique<gpu::device_buffer>(g, size);
      gpu::fill_device(g, c->src->get(), size, seed_forward + static_cast<std::uint64_t>(g));
      gpu::fill_device(g, c->dst->get(), size, seed_poison);
      c->s = std::make_unique<gpu::stream>(g);
    } catch (const std::exception& e) {
      sweep.add_na(column, e.what(), /*is_error=*/true);
      continue;
    }
    d2d_cell* cell = c.get();
    cells.push_back(std::move(c));
    const int blocks = gpu::copy_blocks(cell->info);
    row.add(sweep, column, {cell->s->get(), g}, {}, [cell, sm, size, blocks] {
      enqueue_copy(sm, cell->dst->get(), cell->src->get(), size, blocks, *cell->s);
    });
  }
  bw::require_runnable(st, sweep);
  row.exec(st, sweep);
  for (const auto& c : cells) {
    const gpu::device_scope scope(c->device);
    IB_CUDA(cudaDeviceSynchronize());
    const auto problem = topo::compare_checksum(
        topo::pattern_checksum(seed_forward + static_cast<std::uint64_t>(c->device), size),
        gpu::checksum_device(c->device, c->dst->get(), size),
        "GPU " + std::to_string(c->device) + " copy destination");
    if (problem) st.check(false, *problem);
  }
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    const int g = std::stoi(c.column.substr(3));
    const gpu::device_info d = gpu::query_device(g);
    bw::bandwidth_cell_info info;
    // A copy reads and writes every byte: counted twice, as STREAM counts copy (nvbandwidth
    // counts it once, so its figure is half of this).
    info.bytes_per_op = 2.0 * static_cast<double>(size);
    info.ceiling = gpu::memory_ceiling(d, &info.ceiling_unknown_reason);
    info.what = std::string(sm ? "SM copy kernel" : "copy engine") + " within GPU " +
                std::to_string(g) + ", bytes read + written";
    return info;
  });
}

// ---- bandwidth/p2p ----------------------------------------------------------------------------

struct p2p_cell {
  int src = 0, dst = 0;
  gpu::device_info src_info, dst_info;
  std::unique_ptr<gpu::device_buffer> src_data, dst_recv;  // forward: src_data -> dst_recv
  std::unique_ptr<gpu::device_buffer> dst_data, src_recv;  // reverse (bidir): dst_data -> src_recv
  std::unique_ptr<gpu::stream> fwd, rev;
};

// One row's configuration, read from the axes: the source GPU and its destination columns.
struct p2p_config {
  std::size_t size = 0;
  bool sm = false;     // copy kernel instead of the copy engine
  bool read = false;   // the destination pulls (else the source pushes)
  bool bidir = false;  // both directions at once
  int src = 0;         // the row
  std::vector<int> dsts;
  [[nodiscard]] int directions() const { return bidir ? 2 : 1; }
};

// What one row owns while it runs. Declared in the order they must be torn down in reverse
// (cells before the row that times them).
struct p2p_row {
  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<p2p_cell>> cells;
};

// Reads the axes; skips a row this machine's GPUs cannot give.
[[nodiscard]] p2p_config resolve_config(infrabench::state& st) {
  p2p_config cfg;
  cfg.size = static_cast<std::size_t>(st.get_int64("size"));
  cfg.sm = st.get_string("copy") == "sm";
  cfg.read = st.get_string("access") == "read";
  cfg.bidir = st.get_string("traffic") == "bidir";
  const int count = gpu::node_device_count(st);
  const std::int64_t src = st.get_int64("src");
  // A GPU the machine does not have (the second GPU, or the row's source) is a missing device,
  // not an unsupported feature: reports count the two apart.
  if (src >= count) {
    st.skip(infrabench::reason_code::no_device, topo::missing_index_reason("GPU", src, count));
  }
  if (count < 2) {
    st.skip(infrabench::reason_code::no_device,
            "peer-to-peer needs two GPUs: this machine has 1 CUDA device");
  }
  if (st.get_int64("dst") == src) {
    st.skip("src and dst are the same GPU; bandwidth/d2d measures copies within one GPU");
  }
  std::string error;
  cfg.dsts = topo::select_columns(count, st.get_int64("dst"), &error);
  if (!error.empty()) st.skip(error);
  cfg.src = static_cast<int>(src);
  return cfg;
}

// Whether the pair src -> d can run: peer access both ways and room for its buffers on both
// GPUs. Marks the cell n/a with the reason when not.
[[nodiscard]] bool pair_runnable(const p2p_config& cfg, int d, const std::string& column,
                                 topo::cell_sweep& sweep) {
  const int s = cfg.src;
  const std::size_t per_gpu = cfg.size * (cfg.bidir ? 2 : 1);
  std::string why;
  if (!gpu::enable_peer(s, d, &why) || !gpu::enable_peer(d, s, &why)) {
    sweep.add_na(column, why);
    return false;
  }
  if (why = gpu::check_fits(s, per_gpu); why.empty()) why = gpu::check_fits(d, per_gpu);
  if (!why.empty()) {
    sweep.add_na(column, why, /*is_error=*/true);
    return false;
  }
  return true;
}

// One direction's buffers: `data` on GPU `from` holding the pattern of `seed`, and `recv` on GPU
// `to`, poisoned so a copy that did not happen is seen.
void make_copy_buffers(int from, int to, std::size_t size, std::uint64_t seed,
                       std::unique_ptr<gpu::device_buffer>& data,
                       std::unique_ptr<gpu::device_buffer>& recv) {
  data = std::make_unique<gpu::device_buffer>(from, size);
  recv = std::make_unique<gpu::device_buffer>(to, size);
  gpu::fill_device(from, data->get(), size, seed);
  gpu::fill_device(to, recv->get(), size, seed_poison);
}

// The pair's buffers and streams. Throws when an allocation fails.
[[nodiscard]] std::unique_ptr<p2p_cell> make_cell(const p2p_config& cfg, int d) {
  const int s = cfg.src;
  const std::size_t size = cfg.size;
  auto c = std::make_unique<p2p_cell>();
  c->src = s;
  c->dst = d;
  c->src_info = gpu::query_device(s);
  c->dst_info = gpu::query_device(d);
  make_copy_buffers(s, d, size, seed_forward, c->src_data, c->dst_recv);
  // write: the source GPU pushes (its copy engine or kernel); read: the destination pulls.
  const int fwd_dev = cfg.read ? d : s;
  c->fwd = std::make_unique<gpu::stream>(fwd_dev);
  if (cfg.bidir) {
    make_copy_buffers(d, s, size, seed_reverse, c->dst_data, c->src_recv);
    const int rev_dev = cfg.read ? s : d;
    c->rev = std::make_unique<gpu::stream>(rev_dev);
  }
  return c;
}

// Copy blocks for a kernel running on `dev`, one of the pair's GPUs.
[[nodiscard]] int blocks_on(const p2p_cell& cell, int dev) {
  return gpu::copy_blocks(dev == cell.src ? cell.src_info : cell.dst_info);
}

// The harness's timing: the forward stream is held and bracketed; with bidir the reverse stream
// joins the bracket (starts at the start event, the stop event waits for it).
void add_timed_cell(p2p_row& r, const p2p_config& cfg, const std::string& column,
                    const p2p_cell* cell) {
  const int fwd_dev = cell->fwd->device();
  const int fwd_blocks = blocks_on(*cell, fwd_dev);
  int rev_blocks = 0;
  infrabench::gpu_exec_options opts;
  if (cfg.bidir) {
    const int rev_dev = cell->rev->device();
    rev_blocks = blocks_on(*cell, rev_dev);
    opts.joined.push_back({cell->rev->get(), rev_dev});
  }
  const bool sm = cfg.sm, bidir = cfg.bidir;
  const std::size_t size = cfg.size;
  r.row.add(r.sweep, column, {cell->fwd->get(), fwd_dev}, std::move(opts),
            [cell, sm, bidir, size, fwd_blocks, rev_blocks] {
              enqueue_copy(sm, cell->dst_recv->get(), cell->src_data->get(), size, fwd_blocks,
                           *cell->fwd);
              if (bidir) {
                const gpu::device_scope scope(cell->rev->device());
                enqueue_copy(sm, cell->src_recv->get(), cell->dst_data->get(), size, rev_blocks,
                             *cell->rev);
              }
            });
}

// One cell per destination GPU other than the source, or n/a with the reason.
void build_row(const p2p_config& cfg, p2p_row& r) {
  for (int d : cfg.dsts) {
    if (d == cfg.src) continue;  // the diagonal is bandwidth/d2d
    const std::string column = "gpu" + std::to_string(d);
    if (!pair_runnable(cfg, d, column, r.sweep)) continue;
    std::unique_ptr<p2p_cell> c;
    try {
      c = make_cell(cfg, d);
    } catch (const std::exception& e) {
      r.sweep.add_na(column, e.what(), /*is_error=*/true);
      continue;
    }
    r.cells.push_back(std::move(c));
    add_timed_cell(r, cfg, column, r.cells.back().get());
  }
}

// Every destination holds its source's pattern (both ways with bidir).
void verify_cells(infrabench::state& st, const p2p_config& cfg, const p2p_row& r) {
  for (const auto& c : r.cells) {
    for (int dev : {c->src, c->dst}) {
      const gpu::device_scope scope(dev);
      IB_CUDA(cudaDeviceSynchronize());
    }
    auto problem = topo::compare_checksum(
        topo::pattern_checksum(seed_forward, cfg.size),
        gpu::checksum_device(c->dst, c->dst_recv->get(), cfg.size),
        "GPU " + std::to_string(c->dst) + " <- GPU " + std::to_string(c->src) + " destination");
    if (problem) st.check(false, *problem);
    if (cfg.bidir) {
      problem = topo::compare_checksum(topo::pattern_checksum(seed_reverse, cfg.size),
                                       gpu::checksum_device(c->src, c->src_recv->get(), cfg.size),
                                       "GPU " + std::to_string(c->src) + " <- GPU " +
                                           std::to_string(c->dst) + " destination (reverse)");
      if (problem) st.check(false, *problem);
    }
  }
}

// Bandwidth and efficiency per cell against the NVLinks or PCIe links joining the pair.
void report_p2p_row(infrabench::state& st, const p2p_config& cfg, const topo::cell_sweep& sweep) {
  const int directions = cfg.directions();
  const int s = cfg.src;
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    const int d = std::stoi(c.column.substr(3));
    bw::bandwidth_cell_info info;
    info.bytes_per_op = static_cast<double>(cfg.size) * directions;
    std::string warning;
    info.ceiling = gpu::peer_ceiling(gpu::query_device(s), gpu::query_device(d), directions,
                                     &info.ceiling_unknown_reason, &warning);
    if (!warning.empty()) st.add_warning(c.column + ": " + warning);
    info.what = "GPU " + std::to_string(s) + " -> GPU " + std::to_string(d) + " (" +
                (cfg.sm ? "SM copy kernel" : "copy engine") + ", " +
                (cfg.read ? "destination reads" : "source writes") +
                (cfg.bidir ? ", both directions at once, summed)" : ")");
    return info;
  });
}

void p2p(infrabench::state& st) {
  const p2p_config cfg = resolve_config(st);
  p2p_row r;
  build_row(cfg, r);
  bw::require_runnable(st, r.sweep);
  r.row.exec(st, r.sweep);
  verify_cells(st, cfg, r);
  report_p2p_row(st, cfg, r.sweep);
}

[[nodiscard]] infrabench::axis_options size_axis(std::string text) {
  return infrabench::bytes_axis(std::move(text), 1);
}

INFRABENCH_REGISTER(d2d, "bandwidth/d2d")
    .describe(
        "copy within each GPU's memory (columns bandwidth_gbps_gpu<N>, bytes read + written, and "
        "efficiency_pct_gpu<N> of the memory peak); harness GPU timing (blocking kernel, one "
        "event pair per batch)")
    .produces(bw::bandwidth_row_metrics(/*with_ceiling=*/true))
    .require(infrabench::req::cuda)
    .add_int64_axis("size", {std::int64_t{256} << 20, std::int64_t{1} << 30},
                    size_axis("bytes per copy (larger than L2, or the copy stays in L2)"))
    .add_string_axis("copy", {"ce", "sm"},
                     infrabench::choice_axis(
                         "ce: cudaMemcpyAsync on a copy engine; sm: a copy kernel", {"ce", "sm"}))
    .add_int64_axis("gpu", {-1},
                    infrabench::int_axis("GPU (column) to measure; -1 = every GPU", -1));

INFRABENCH_REGISTER(p2p, "bandwidth/p2p")
    .describe(
        "GPU -> GPU copy bandwidth with peer access: one row per source GPU, columns "
        "bandwidth_gbps_gpu<dst> and efficiency_pct_gpu<dst> of the NVLink or PCIe path (the "
        "src x dst matrix); pairs without peer access are n/a with the reason")
    .produces(bw::bandwidth_row_metrics(/*with_ceiling=*/true))
    .require(infrabench::req::cuda)
    .add_int64_axis(
        "src", {0, 1, 2, 3, 4, 5, 6, 7},
        infrabench::int_axis("source GPU (the row); indices beyond the GPU count are skipped "
                             "with the count",
                             0))
    .add_int64_axis("dst", {-1},
                    infrabench::int_axis("destination GPU (column); -1 = every other GPU", -1))
    .add_int64_axis("size", {std::int64_t{256} << 20}, size_axis("bytes per copy"))
    .add_string_axis("copy", {"ce", "sm"},
                     infrabench::choice_axis(
                         "ce: cudaMemcpyAsync on a copy engine; sm: a copy kernel", {"ce", "sm"}))
    .add_string_axis(
        "access", {"write", "read"},
        infrabench::choice_axis("write: the source GPU pushes; read: the destination pulls",
                                {"write", "read"}))
    .add_string_axis(
        "traffic", {"uni", "bidir"},
        infrabench::choice_axis("uni: one direction; bidir: both directions at once (summed)",
                                {"uni", "bidir"}))
    .memory_estimate([](const infrabench::config&) -> std::int64_t { return 0; });

}  // namespace
