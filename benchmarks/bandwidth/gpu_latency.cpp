// bandwidth/gpu_latency: what one small transfer costs. memcpy_h2d/memcpy_d2h: the round trip of
// one cudaMemcpyAsync of copy_size bytes from pinned memory plus cudaStreamSynchronize, on the
// host clock (what an application waits). chase_device/chase_host: one GPU thread follows a
// random chain of dependent 8-byte loads through working_set bytes of device memory (HBM latency)
// or of pinned host memory (the PCIe round trip), timed with CUDA events. bandwidth/p2p_latency
// (nvbandwidth's device_to_device_latency_sm): the same chase by a thread of GPU `src` (the row)
// through the memory of each other GPU (the columns), over NVLink or PCIe with peer access.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
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

// A chain link per 128-byte line (the GPU's L2 line), so no two links share a line.
constexpr std::size_t line_bytes = 128;
constexpr std::uint64_t chain_seed = 42;

// Sattolo's algorithm: a random permutation that is one cycle through every line.
[[nodiscard]] std::vector<std::uint32_t> random_cycle(std::size_t lines) {
  std::vector<std::uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0U);
  std::mt19937_64 rng(chain_seed);
  for (std::size_t i = lines - 1; i > 0; --i) {
    std::uniform_int_distribution<std::size_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  // order is a cyclic sequence; next[order[k]] = order[k + 1].
  std::vector<std::uint32_t> next(lines);
  for (std::size_t k = 0; k < lines; ++k) next[order[k]] = order[(k + 1) % lines];
  return next;
}

struct latency_cell {
  int device = 0;  // the GPU whose thread chases (and whose stream and events time it)
  std::unique_ptr<gpu::stream> s;
  // memcpy tests
  std::unique_ptr<gpu::host_buffer> host;
  std::unique_ptr<gpu::device_buffer> dev;
  // chase tests
  std::unique_ptr<gpu::device_buffer> chain_dev, end;
  std::unique_ptr<gpu::host_buffer> chain_host;
  std::unique_ptr<gpu::event> start, stop;  // timing events around one chase kernel
  std::uintptr_t base = 0;                  // device address of line 0
  unsigned long long at = 0;                // where the next sample continues
  std::uint64_t steps_done = 0;             // every link followed, warm-up included
};

// One configuration, read from the axes.
struct latency_config {
  std::string test;
  bool chase = false;    // a pointer chase, not a memcpy round trip
  bool on_host = false;  // the chain lives in pinned host memory
  int holder = -1;       // chase_peer: the GPU whose memory holds the chain
  std::size_t copy_size = 0;
  std::size_t working_set = 0;
  std::size_t lines = 0;    // chain links
  std::uint64_t steps = 0;  // links followed per sample
};

// What one row owns while it runs.
struct latency_row {
  std::vector<std::uint32_t> next;  // the chain's cycle (chase tests)
  topo::cell_sweep sweep;
  std::vector<std::unique_ptr<latency_cell>> cells;
};

// Reads the axes; fails on a working set the chain cannot span.
[[nodiscard]] latency_config resolve_config(infrabench::state& st) {
  latency_config cfg;
  cfg.test = st.get_string("test");
  cfg.chase = cfg.test.starts_with("chase");
  cfg.on_host = cfg.test == "chase_host";
  cfg.copy_size = static_cast<std::size_t>(st.get_int64("copy_size"));
  cfg.working_set = static_cast<std::size_t>(st.get_int64("working_set"));
  cfg.lines = cfg.working_set / line_bytes;
  if (cfg.chase && cfg.lines < 2) st.fail("working_set must hold at least two 128-byte lines");
  if (cfg.chase && cfg.lines > (std::size_t{1} << 32)) st.fail("working_set above 512 GiB");
  // ~20-60 ms per sample: HBM loads take ~0.5-1 us, host loads over PCIe ~1-2 us.
  cfg.steps = cfg.on_host ? (std::uint64_t{1} << 14) : (std::uint64_t{1} << 15);
  return cfg;
}

// The chain holds device addresses: line i's first word is the address of line next[i].
void write_chain(latency_cell& c, const latency_config& cfg,
                 const std::vector<std::uint32_t>& next) {
  std::vector<std::uint64_t> image(cfg.working_set / 8, 0);
  for (std::size_t i = 0; i < cfg.lines; ++i) {
    image[i * (line_bytes / 8)] = c.base + std::uint64_t{next[i]} * line_bytes;
  }
  if (cfg.on_host) {
    std::memcpy(c.chain_host->get(), image.data(), image.size() * 8);
  } else {
    // Unified addressing: the copy finds the chain on whichever GPU holds it.
    const gpu::device_scope scope(c.device);
    IB_CUDA(cudaMemcpy(c.chain_dev->get(), image.data(), image.size() * 8, cudaMemcpyHostToDevice));
  }
}

// GPU g's buffers, stream and events. Returns why the cell does not fit on the GPU (empty when
// it does); throws when an allocation fails.
[[nodiscard]] std::string setup_cell(latency_cell& c, const latency_config& cfg,
                                     const std::vector<std::uint32_t>& next, int g) {
  c.device = g;
  c.s = std::make_unique<gpu::stream>(g);
  if (!cfg.chase) {
    if (std::string why = gpu::check_fits(g, cfg.copy_size); !why.empty()) return why;
    c.host = std::make_unique<gpu::host_buffer>(cfg.copy_size, gpu::host_kind::pinned, -1);
    c.dev = std::make_unique<gpu::device_buffer>(g, cfg.copy_size);
    return {};
  }
  if (!cfg.on_host) {
    // The chain lives on the reading GPU, or for chase_peer on the GPU whose memory is read.
    const int holder = cfg.holder >= 0 ? cfg.holder : g;
    if (std::string why = gpu::check_fits(holder, cfg.working_set); !why.empty()) return why;
    c.chain_dev = std::make_unique<gpu::device_buffer>(holder, cfg.working_set);
    c.base = reinterpret_cast<std::uintptr_t>(c.chain_dev->get());
  } else {
    c.chain_host = std::make_unique<gpu::host_buffer>(cfg.working_set, gpu::host_kind::pinned, -1);
    c.base = reinterpret_cast<std::uintptr_t>(c.chain_host->device_ptr());
  }
  write_chain(c, cfg, next);
  c.end = std::make_unique<gpu::device_buffer>(g, sizeof(unsigned long long));
  c.at = c.base;
  c.start = std::make_unique<gpu::event>(g, /*timing=*/true);
  c.stop = std::make_unique<gpu::event>(g, /*timing=*/true);
  return {};
}

// One sample of a memcpy test: the host clock around one copy and its synchronisation.
[[nodiscard]] double time_memcpy(const latency_cell& cell, bool h2d, std::size_t copy_size) {
  const gpu::device_scope scope(cell.device);
  const auto t0 = std::chrono::steady_clock::now();
  if (h2d) {
    IB_CUDA(cudaMemcpyAsync(cell.dev->get(), cell.host->get(), copy_size, cudaMemcpyHostToDevice,
                            cell.s->get()));
  } else {
    IB_CUDA(cudaMemcpyAsync(cell.host->get(), cell.dev->get(), copy_size, cudaMemcpyDeviceToHost,
                            cell.s->get()));
  }
  IB_CUDA(cudaStreamSynchronize(cell.s->get()));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One sample of a chase test: `steps` links followed by one kernel, timed by CUDA events.
[[nodiscard]] double time_chase(latency_cell& cell, std::uint64_t steps) {
  const gpu::device_scope scope(cell.device);
  // One kernel of ~20-60 ms per sample: launch gaps do not matter, so no blocking kernel.
  IB_CUDA(cudaEventRecord(cell.start->get(), cell.s->get()));
  IB_CUDA(kcu::launch_chase(reinterpret_cast<const void*>(cell.at), steps,
                            static_cast<unsigned long long*>(cell.end->get()), cell.s->get()));
  IB_CUDA(cudaEventRecord(cell.stop->get(), cell.s->get()));
  IB_CUDA(cudaEventSynchronize(cell.stop->get()));
  float ms = 0;
  IB_CUDA(cudaEventElapsedTime(&ms, cell.start->get(), cell.stop->get()));
  const double t = ms * 1e-3;
  // Continue from here next time: a chain restarted at line 0 would soon sit in L2.
  IB_CUDA(cudaMemcpy(&cell.at, cell.end->get(), sizeof cell.at, cudaMemcpyDeviceToHost));
  cell.steps_done += steps;
  return t;
}

// A cell of `r` read by `device` as `cfg` says; null (and the column n/a with the reason) when its
// memory does not fit or cannot be set up.
latency_cell* add_cell(latency_row& r, const latency_config& cfg, int device,
                       const std::string& column) {
  auto c = std::make_unique<latency_cell>();
  std::string why;
  try {
    why = setup_cell(*c, cfg, r.next, device);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!why.empty()) {
    r.sweep.add_na(column, why, /*is_error=*/true);
    return nullptr;
  }
  r.cells.push_back(std::move(c));
  return r.cells.back().get();
}

// One cell per GPU, or n/a with the reason when its memory does not fit or cannot be set up.
void build_row(const latency_config& cfg, const std::vector<int>& gpus, latency_row& r) {
  for (int g : gpus) {
    const std::string column = "gpu" + std::to_string(g);
    latency_cell* cell = add_cell(r, cfg, g, column);
    if (cell == nullptr) continue;
    if (!cfg.chase) {
      const bool h2d = cfg.test == "memcpy_h2d";
      const std::size_t copy_size = cfg.copy_size;
      r.sweep.add(column, [cell, h2d, copy_size] { return time_memcpy(*cell, h2d, copy_size); });
    } else {
      const std::uint64_t steps = cfg.steps;
      r.sweep.add(column, [cell, steps] { return time_chase(*cell, steps); });
    }
  }
}

// Where each chain must end after every link followed: walked on the host over the same cycle.
void verify_chase(infrabench::state& st, const latency_config& cfg, const latency_row& r) {
  for (const auto& c : r.cells) {
    std::size_t line = 0;
    for (std::uint64_t k = 0; k < c->steps_done % cfg.lines; ++k) line = r.next[line];
    const std::uint64_t expected = c->base + line * line_bytes;
    if (c->at != expected) {
      st.check(false, "GPU " + std::to_string(c->device) + ": the chase ended at line " +
                          std::to_string((c->at - c->base) / line_bytes) + ", expected line " +
                          std::to_string(line));
    }
  }
}

void report_row(infrabench::state& st, const latency_config& cfg, const topo::cell_sweep& sweep) {
  if (cfg.chase) {
    bw::report_latency_row(st, sweep, static_cast<double>(cfg.steps), "ns",
                           std::string(cfg.on_host ? "pinned host memory" : "device memory") +
                               ": time of " + std::to_string(cfg.steps) +
                               " dependent 8-byte loads (one GPU thread, L1 bypassed) / loads, "
                               "random cycle over " +
                               bw::format_gib(static_cast<double>(cfg.working_set)));
  } else {
    bw::report_latency_row(st, sweep, 1.0, "us",
                           "host clock around cudaMemcpyAsync(" + std::to_string(cfg.copy_size) +
                               " B, pinned) + cudaStreamSynchronize");
  }
}

void gpu_latency(infrabench::state& st) {
  const latency_config cfg = resolve_config(st);
  std::string error;
  const auto gpus = topo::select_columns(gpu::node_device_count(st), st.get_int64("gpu"), &error);
  if (!error.empty()) st.skip(error);

  latency_row r;
  if (cfg.chase) r.next = random_cycle(cfg.lines);
  build_row(cfg, gpus, r);
  bw::require_runnable(st, r.sweep);
  st.exec_timed([&] { return r.sweep.run_once(); }, cfg.chase ? "cuda_event" : "cpu_steady_clock");
  if (cfg.chase) verify_chase(st, cfg, r);
  report_row(st, cfg, r.sweep);
}

// ---- bandwidth/p2p_latency ----------------------------------------------------------------------

// Row `src`: GPU src's thread chases through the memory of every other GPU (the columns) with
// peer access; a pair without it is n/a with the reason.
void p2p_latency(infrabench::state& st) {
  latency_config cfg;
  cfg.test = "chase_peer";
  cfg.chase = true;
  cfg.working_set = static_cast<std::size_t>(st.get_int64("working_set"));
  cfg.lines = cfg.working_set / line_bytes;
  if (cfg.lines < 2) st.fail("working_set must hold at least two 128-byte lines");
  if (cfg.lines > (std::size_t{1} << 32)) st.fail("working_set above 512 GiB");
  // ~10-30 ms per sample: a load from a peer over NVLink or PCIe takes ~0.7-2 us.
  cfg.steps = std::uint64_t{1} << 14;
  const int count = gpu::node_device_count(st);
  const std::int64_t src = st.get_int64("src");
  if (src >= count) {
    st.skip(infrabench::reason_code::no_device, topo::missing_index_reason("GPU", src, count));
  }
  if (count < 2) {
    st.skip(infrabench::reason_code::no_device,
            "device-to-device latency needs two GPUs (nvbandwidth device_to_device_latency_sm "
            "reads a peer's memory): this machine has 1 CUDA device; bandwidth/gpu_latency "
            "test=chase_device measures a GPU's own memory");
  }
  std::string error;
  const auto dsts = topo::select_columns(count, st.get_int64("dst"), &error);
  if (!error.empty()) st.skip(error);

  const int reader = static_cast<int>(src);
  latency_row r;
  r.next = random_cycle(cfg.lines);
  for (int d : dsts) {
    if (d == reader) continue;  // its own memory is bandwidth/gpu_latency test=chase_device
    const std::string column = "gpu" + std::to_string(d);
    std::string why;
    if (!gpu::enable_peer(reader, d, &why)) {
      r.sweep.add_na(column, why);
      continue;
    }
    latency_config mine = cfg;
    mine.holder = d;
    latency_cell* cell = add_cell(r, mine, reader, column);
    if (cell == nullptr) continue;
    const std::uint64_t steps = cfg.steps;
    r.sweep.add(column, [cell, steps] { return time_chase(*cell, steps); });
  }
  bw::require_runnable(st, r.sweep);
  st.exec_timed([&] { return r.sweep.run_once(); }, "cuda_event");
  verify_chase(st, cfg, r);
  bw::report_latency_row(st, r.sweep, static_cast<double>(cfg.steps), "ns",
                         "memory of the column's GPU read by GPU " + std::to_string(reader) +
                             " through peer access: time of " + std::to_string(cfg.steps) +
                             " dependent 8-byte loads (one GPU thread, L1 bypassed) / loads, "
                             "random cycle over " +
                             bw::format_gib(static_cast<double>(cfg.working_set)));
}

INFRABENCH_REGISTER(gpu_latency, "bandwidth/gpu_latency")
    .describe(
        "small-copy round trip (memcpy_h2d/d2h: latency_us_gpu<N>) and dependent-load latency "
        "of device or pinned host memory from a GPU pointer chase (chase_*: latency_ns_gpu<N>)")
    .produces(bw::latency_row_metric("us"))  // memcpy_* tests
    .produces(bw::latency_row_metric("ns"))  // chase_* tests
    .headline("latency_ns_*")
    .require(infrabench::req::cuda)
    .add_string_axis("test", {"memcpy_h2d", "memcpy_d2h", "chase_device", "chase_host"},
                     infrabench::choice_axis("what is timed", {"memcpy_h2d", "memcpy_d2h",
                                                               "chase_device", "chase_host"}))
    .add_int64_axis("copy_size", {8},
                    infrabench::bytes_axis("bytes per copy (memcpy tests only)", 1))
    .add_int64_axis(
        "working_set", {std::int64_t{256} << 20},
        infrabench::bytes_axis("bytes the chain spans (chase tests only; above L2 for DRAM)", 256))
    .add_int64_axis("gpu", {-1},
                    infrabench::int_axis("GPU (column) to measure; -1 = every GPU", -1))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      for (const auto& [name, value] : cfg) {
        // The host image of the chain (and the chain itself for chase_host).
        if (name == "working_set") return 2 * std::get<std::int64_t>(value);
      }
      return 0;
    });

INFRABENCH_REGISTER(p2p_latency, "bandwidth/p2p_latency")
    .describe(
        "dependent-load latency of another GPU's memory read by GPU src (the row) through peer "
        "access, one column per GPU whose memory is read (latency_ns_gpu<N>; nvbandwidth "
        "device_to_device_latency_sm); needs 2 GPUs")
    .produces(bw::latency_row_metric("ns"))
    .headline("latency_ns_*")
    .require(infrabench::req::cuda)
    .add_int64_axis(
        "src", {0, 1, 2, 3, 4, 5, 6, 7},
        infrabench::int_axis("reading GPU (the row); indices beyond the GPU count are skipped "
                             "with the count",
                             0))
    .add_int64_axis("dst", {-1},
                    infrabench::int_axis("GPU whose memory is read (column); -1 = every other GPU",
                                         -1))
    .add_int64_axis("working_set", {std::int64_t{256} << 20},
                    infrabench::bytes_axis("bytes the chain spans (above L2 for DRAM/HBM)", 256))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      // The host image of the chain.
      return infrabench::config_int64(cfg, "working_set", 0);
    });

}  // namespace
