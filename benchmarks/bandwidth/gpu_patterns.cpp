// bandwidth/host_to_all, all_to_host, all_to_one, one_to_all and the host patterns'
// *_bidirectional: nvbandwidth's many-to-one tests. host_to_all / all_to_host give one row per
// host NUMA node whose cells are the GPUs: each cell is that GPU's copy to or from the host,
// measured while every other GPU copies in the same direction (two GPUs behind one PCIe switch
// uplink show as about half their link each); the bidirectional ones measure it while the GPU's
// own reverse direction and both directions of every other GPU run.
// all_to_one / one_to_all give one row whose cells are the target GPUs: each cell is the total
// bandwidth into (all_to_one) or out of (one_to_all) the target while all its peers copy with it
// at once, pushed by the sender (access=write) or pulled by the receiver (access=read). The plans
// (who copies what, who issues it, what counts) are kernels/topology/traffic.h, unit-tested on the
// CPU; timing is the harness's (gpu_row: blocking kernel, one event pair per batch).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/copy.h"
#include "gpu_common.h"
#include "gpu_shared.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "topology/numa.h"
#include "topology/pattern.h"
#include "topology/traffic.h"

namespace {

namespace topo = infrabench::kernels::topology;
namespace kcu = infrabench::kernels::cuda;
namespace bw = infrabench::bw;
namespace gpu = infrabench::bw::gpu;
using topo::traffic_pattern;

constexpr std::uint64_t seed_base = 0x5eed3003;
constexpr std::uint64_t seed_poison = 0xdeadbeef;

[[nodiscard]] std::uint64_t seed_of(const topo::traffic_end& src, const topo::traffic_end& dst) {
  return seed_base + (src.host ? 1000 : 0) + 16 * static_cast<std::uint64_t>(src.index) +
         static_cast<std::uint64_t>(dst.index) + (dst.host ? 5000 : 0);
}

// One copy of a cell with its buffers and stream. Host ends are pinned memory on the row's node
// (mapped, so an SM copy kernel reaches them); device ends live on their GPU.
struct copy_slot {
  topo::planned_copy plan;
  std::unique_ptr<gpu::host_buffer> host;       // the host end, when there is one
  std::unique_ptr<gpu::device_buffer> src_dev;  // device source
  std::unique_ptr<gpu::device_buffer> dst_dev;  // device destination
  std::unique_ptr<gpu::stream> s;               // on the issuer
  int blocks = 1;
  std::size_t bytes = 0;  // size x plan.size_factor

  [[nodiscard]] const void* src_ptr(bool sm) const {
    if (!plan.src.host) return src_dev->get();
    return sm ? host->device_ptr() : host->get();
  }
  [[nodiscard]] void* dst_ptr(bool sm) const {
    if (!plan.dst.host) return dst_dev->get();
    return sm ? host->device_ptr() : host->get();
  }
  // One copy on its issuer's stream (the issuer must be current).
  void enqueue(bool sm) const {
    if (sm) {
      IB_CUDA(kcu::launch_copy(dst_ptr(sm), src_ptr(sm), bytes, blocks, s->get()));
    } else {
      IB_CUDA(cudaMemcpyAsync(dst_ptr(sm), src_ptr(sm), bytes, cudaMemcpyDefault, s->get()));
    }
  }
};

struct cell_copies {
  int target = 0;
  std::vector<std::unique_ptr<copy_slot>> copies;
};

[[nodiscard]] std::vector<topo::planned_copy> plan_of(const cell_copies& cell) {
  std::vector<topo::planned_copy> v;
  for (const auto& c : cell.copies) v.push_back(c->plan);
  return v;
}

// Buffers, fill patterns and a stream for every copy of `plan`.
std::unique_ptr<cell_copies> build_cell(int target, const std::vector<topo::planned_copy>& plan,
                                        std::size_t size, int node) {
  auto cell = std::make_unique<cell_copies>();
  cell->target = target;
  for (const auto& p : plan) {
    auto c = std::make_unique<copy_slot>();
    c->plan = p;
    c->bytes = size * static_cast<std::size_t>(p.size_factor);
    const std::size_t bytes = c->bytes;
    const std::uint64_t seed = seed_of(p.src, p.dst);
    if (p.src.host || p.dst.host) {
      c->host = std::make_unique<gpu::host_buffer>(bytes, gpu::host_kind::pinned, node);
      topo::fill_pattern(c->host->get(), bytes, p.src.host ? seed : seed_poison);
    }
    if (!p.src.host) {
      c->src_dev = std::make_unique<gpu::device_buffer>(p.src.index, bytes);
      gpu::fill_device(p.src.index, c->src_dev->get(), bytes, seed);
    }
    if (!p.dst.host) {
      c->dst_dev = std::make_unique<gpu::device_buffer>(p.dst.index, bytes);
      gpu::fill_device(p.dst.index, c->dst_dev->get(), bytes, seed_poison);
    }
    c->s = std::make_unique<gpu::stream>(p.issuer);
    // The issuer's copy kernels run at once (one_to_all pushes to every peer, the bidirectional
    // patterns copy both ways): sharing its SMs, each gets one block per SM so they overlap.
    c->blocks =
        gpu::copy_blocks(gpu::query_device(p.issuer), topo::copies_issued_by(plan, p.issuer));
    cell->copies.push_back(std::move(c));
  }
  return cell;
}

// Every destination holds its source's pattern.
void verify_cell(infrabench::state& st, const cell_copies& cell) {
  for (const auto& c : cell.copies) {
    const auto& p = c->plan;
    const std::size_t size = c->bytes;
    const std::uint64_t seed = seed_of(p.src, p.dst);
    const std::string what =
        (p.src.host ? std::string("host") : "GPU " + std::to_string(p.src.index)) + " -> " +
        (p.dst.host ? std::string("host") : "GPU " + std::to_string(p.dst.index));
    if (p.dst.host) {
      if (const auto at = topo::find_pattern_mismatch(c->host->get(), size, seed)) {
        st.check(false, what + " destination: byte " + std::to_string(*at) +
                            " differs from the source pattern");
      }
    } else {
      const gpu::device_scope scope(p.dst.index);
      IB_CUDA(cudaDeviceSynchronize());
      if (const auto problem = topo::compare_checksum(
              topo::pattern_checksum(seed, size),
              gpu::checksum_device(p.dst.index, c->dst_dev->get(), size), what + " destination")) {
        st.check(false, *problem);
      }
    }
  }
}

// The cell's timing: the first counted copy's stream is held and bracketed; the other counted
// copies join the bracket (the figure is their total), uncounted ones load the links meanwhile.
void add_to_row(gpu::gpu_row& row, topo::cell_sweep& sweep, const cell_copies& cell, bool sm) {
  const copy_slot& main = *cell.copies.front();
  infrabench::gpu_exec_options opts;
  // Every copy of the cell queues behind the held stream (the others wait for its fork event):
  // the launches per batch are capped by all of them (issue 38: 7 x 256 copies with 8 GPUs could
  // fill CUDA's launch queue and reach the blocking kernel's 2 s timeout).
  opts.operations_per_launch = static_cast<int>(cell.copies.size());
  for (std::size_t k = 1; k < cell.copies.size(); ++k) {
    const copy_slot& c = *cell.copies[k];
    const infrabench::gpu_stream_ref ref{c.s->get(), c.plan.issuer};
    (c.plan.counted ? opts.joined : opts.interfering).push_back(ref);
  }
  const cell_copies* cp = &cell;
  row.add(sweep, "gpu" + std::to_string(cell.target), {main.s->get(), main.plan.issuer},
          std::move(opts), [cp, sm] {
            for (const auto& c : cp->copies) {
              const gpu::device_scope scope(c->plan.issuer);
              c->enqueue(sm);
            }
          });
}

// The GPUs of a pattern's row: every GPU and the columns the `gpu` axis selects. Skips when the
// machine has too few GPUs for `p` (a device it lacks, not an unsupported feature) or the axis
// names none.
struct pattern_gpus {
  std::vector<int> all;
  std::vector<int> targets;
};
[[nodiscard]] pattern_gpus resolve_gpus(infrabench::state& st, traffic_pattern p) {
  const int count = gpu::node_device_count(st);
  if (auto why = topo::pattern_skip_reason(p, count); !why.empty()) {
    st.skip(infrabench::reason_code::no_device, why);
  }
  std::string error;
  pattern_gpus g;
  g.targets = topo::select_columns(count, st.get_int64("gpu"), &error);
  if (!error.empty()) st.skip(error);
  for (int i = 0; i < count; ++i) g.all.push_back(i);
  return g;
}

// Builds the cell of column gpu<t> and adds it to the row; a cell that does not fit (`why`) or
// cannot be built is n/a with the reason.
void add_cell(topo::cell_sweep& sweep, gpu::gpu_row& row,
              std::vector<std::unique_ptr<cell_copies>>& cells, int t, const std::string& why,
              const std::function<std::unique_ptr<cell_copies>()>& build, bool sm) {
  const std::string column = "gpu" + std::to_string(t);
  if (!why.empty()) {
    sweep.add_na(column, why, /*is_error=*/true);
    return;
  }
  try {
    cells.push_back(build());
  } catch (const std::exception& e) {
    sweep.add_na(column, e.what(), /*is_error=*/true);
    return;
  }
  add_to_row(row, sweep, *cells.back(), sm);
}

void host_pattern(infrabench::state& st, traffic_pattern p) {
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const bool sm = st.get_string("copy") == "sm";
  const auto node_id = st.get_int64("numa_node");
  const pattern_gpus gpus = resolve_gpus(st, p);
  const std::vector<int>& all = gpus.all;
  const std::vector<int>& targets = gpus.targets;

  const auto nodes = bw::host_nodes();
  const topo::numa_node& node = gpu::row_node(st, node_id, nodes);
  const bw::scoped_affinity affinity(gpu::usable_cpus(node));

  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<cell_copies>> cells;
  for (int t : targets) {
    const auto plan =
        topo::plan_cell(p, topo::traffic_access::write, t, all, static_cast<int>(node_id));
    std::string why;
    for (int g : all) {
      const auto units = static_cast<std::size_t>(topo::size_units_on(plan, g));
      if (why.empty()) why = gpu::check_fits(g, size * units);
    }
    add_cell(
        sweep, row, cells, t, why,
        [&] { return build_cell(t, plan, size, static_cast<int>(node_id)); }, sm);
  }
  bw::require_runnable(st, sweep);
  row.exec(st, sweep);
  for (const auto& c : cells) verify_cell(st, *c);

  // The links now, while they are still trained up from the copies.
  std::map<int, const cell_copies*> by_target;
  for (const auto& c : cells) by_target[c->target] = c.get();
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    const int t = std::stoi(c.column.substr(3));
    bw::bandwidth_cell_info info;
    info.bytes_per_op = static_cast<double>(size);
    std::string warning;
    info.ceiling =
        gpu::pcie_ceiling(gpu::query_device(t), 1, &info.ceiling_unknown_reason, &warning);
    if (!warning.empty()) st.add_warning(c.column + ": " + warning);
    info.what = std::string(sm ? "SM copy kernels" : "copy engines") + ": " +
                topo::describe_plan(plan_of(*by_target.at(t)));
    return info;
  });
}

void peer_pattern(infrabench::state& st, traffic_pattern p) {
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const bool sm = st.get_string("copy") == "sm";
  const auto access =
      st.get_string("access") == "read" ? topo::traffic_access::read : topo::traffic_access::write;
  const pattern_gpus gpus = resolve_gpus(st, p);
  const std::vector<int>& all = gpus.all;
  const std::vector<int>& targets = gpus.targets;

  // Peer access, enabled once per ordered pair; pairs without it are left out with a warning.
  std::map<std::pair<int, int>, std::string> no_access;
  const auto peer_ok = [&](int from, int to) {
    std::string why;
    if (gpu::enable_peer(from, to, &why)) return true;
    no_access[{from, to}] = why;
    return false;
  };

  topo::cell_sweep sweep;
  gpu::gpu_row row;
  std::vector<std::unique_ptr<cell_copies>> cells;
  for (int t : targets) {
    const std::string column = "gpu" + std::to_string(t);
    const auto plan = topo::plan_cell(p, access, t, all, -1, peer_ok);
    if (plan.empty()) {
      sweep.add_na(column, "no peer of GPU " + std::to_string(t) + " has peer access with it");
      continue;
    }
    std::string why = gpu::check_fits(t, size * plan.size());
    for (const auto& c : plan) {
      const int other = c.src.index == t ? c.dst.index : c.src.index;
      if (why.empty()) why = gpu::check_fits(other, size);
    }
    add_cell(
        sweep, row, cells, t, why, [&] { return build_cell(t, plan, size, -1); }, sm);
  }
  for (const auto& [pair, why] : no_access) st.add_warning("left out: " + why);
  bw::require_runnable(st, sweep);
  row.exec(st, sweep);
  for (const auto& c : cells) verify_cell(st, *c);

  std::map<int, const cell_copies*> by_target;
  for (const auto& c : cells) by_target[c->target] = c.get();
  bw::report_bandwidth_row(st, sweep, [&](const topo::cell_sweep::cell& c) {
    const auto plan = plan_of(*by_target.at(std::stoi(c.column.substr(3))));
    bw::bandwidth_cell_info info;
    info.bytes_per_op = topo::counted_bytes(plan, static_cast<double>(size));
    // The ceiling of many-to-one traffic is the target's whole link budget (all its NVLinks, or
    // its PCIe link), which per-pair figures do not give on switched systems: not claimed.
    info.ceiling_unknown_reason =
        "the ceiling of many-to-one traffic depends on the switch topology; compare with "
        "bandwidth/p2p of the same pairs";
    info.what =
        std::string(sm ? "SM copy kernels" : "copy engines") + ": " + topo::describe_plan(plan);
    return info;
  });
}

[[nodiscard]] std::vector<std::int64_t> node_defaults() {
  std::vector<std::int64_t> out;
  for (int id : topo::online_numa_node_ids()) out.push_back(id);
  return out;
}

infrabench::benchmark& common_axes(infrabench::benchmark& b) {
  return b.require(infrabench::req::cuda)
      .produces(bw::bandwidth_row_metrics(/*with_ceiling=*/true))
      .add_int64_axis("size", {std::int64_t{64} << 20},
                      infrabench::bytes_axis("bytes per copy (sweep: -a size=4KiB:1GiB)", 1))
      .add_string_axis("copy", {"ce", "sm"},
                       infrabench::choice_axis(
                           "ce: cudaMemcpyAsync on a copy engine; sm: a copy kernel", {"ce", "sm"}))
      .add_int64_axis("gpu", {-1},
                      infrabench::int_axis("target GPU (column) to measure; -1 = every GPU", -1));
}

infrabench::benchmark& host_axes(infrabench::benchmark& b, bool bidirectional = false) {
  return common_axes(b)
      .add_int64_axis(
          "numa_node", node_defaults(),
          infrabench::int_axis("NUMA node of the host memory (the row); default: every node", 0))
      .memory_estimate([bidirectional](const infrabench::config& cfg) -> std::int64_t {
        // One pinned host buffer per copy; counted for two GPUs here (the GPU count is not
        // known before the run), more GPUs need more. The bidirectional patterns copy both ways,
        // their load twice the size: 1 + 2 + 2 x 2 sizes for two GPUs.
        const std::int64_t size = infrabench::config_int64(cfg, "size", 0);
        return bidirectional ? 7 * size : 2 * size;
      });
}

infrabench::benchmark& peer_axes(infrabench::benchmark& b) {
  return common_axes(b)
      .add_string_axis("access", {"write", "read"},
                       infrabench::choice_axis("write: the sender pushes; read: the receiver pulls",
                                               {"write", "read"}))
      .memory_estimate([](const infrabench::config&) -> std::int64_t { return 0; });
}

// One benchmark per traffic pattern, as the collectives register from their table.
struct pattern_row {
  std::string_view name;
  traffic_pattern pattern;
  bool host;           // host memory at one end (host_pattern, host_axes), else GPU peers
  bool bidirectional;  // host patterns: copies both ways (the memory estimate)
  std::string_view description;
};

const pattern_row pattern_rows[] = {
    {"bandwidth/host_to_all", traffic_pattern::host_to_all, true, false,
     "host -> GPU copy bandwidth of each GPU (cells bandwidth_gbps_gpu<N>) while every other GPU "
     "copies from the host too (nvbandwidth host_to_all): shared PCIe uplinks show; pinned "
     "memory; needs 2 GPUs"},
    {"bandwidth/all_to_host", traffic_pattern::all_to_host, true, false,
     "GPU -> host copy bandwidth of each GPU while every other GPU copies to the host too "
     "(nvbandwidth all_to_host); pinned memory; needs 2 GPUs"},
    {"bandwidth/host_to_all_bidirectional", traffic_pattern::host_to_all_bidirectional, true, true,
     "host -> GPU copy bandwidth of each GPU while it also copies to the host and every other GPU "
     "copies both ways (nvbandwidth host_to_all_bidirectional); pinned memory; needs 2 GPUs"},
    {"bandwidth/all_to_host_bidirectional", traffic_pattern::all_to_host_bidirectional, true, true,
     "GPU -> host copy bandwidth of each GPU while it also copies from the host and every other "
     "GPU copies both ways (nvbandwidth all_to_host_bidirectional); pinned memory; needs 2 GPUs"},
    {"bandwidth/all_to_one", traffic_pattern::all_to_one, false, false,
     "total bandwidth into each GPU (cells bandwidth_gbps_gpu<N>) while all its peers copy to it "
     "at once, pushed (access=write) or pulled (read) (nvbandwidth all_to_one); needs 2 GPUs with "
     "peer access"},
    {"bandwidth/one_to_all", traffic_pattern::one_to_all, false, false,
     "total bandwidth out of each GPU while it copies to all its peers at once (nvbandwidth "
     "one_to_all); needs 2 GPUs with peer access"},
};

[[maybe_unused]] const bool registered_gpu_patterns = [] {
  for (const pattern_row& r : pattern_rows) {
    const traffic_pattern p = r.pattern;
    auto& b = infrabench::registry::instance()
                  .add(std::string(r.name),
                       [p, host = r.host](infrabench::state& st) {
                         if (host) {
                           host_pattern(st, p);
                         } else {
                           peer_pattern(st, p);
                         }
                       })
                  .describe(std::string(r.description));
    if (r.host) {
      host_axes(b, r.bidirectional);
    } else {
      peer_axes(b);
    }
  }
  return true;
}();

}  // namespace
