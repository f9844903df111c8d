#include "gpu_common.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <stdexcept>

#include "cuda/copy.h"
#include "hardware/gpu.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "topology/copy_grid.h"
#include "topology/nvml.h"

namespace infrabench::bw::gpu {
namespace {

[[nodiscard]] std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

}  // namespace

int node_device_count(infrabench::state& st) {
  if (const std::string& why = st.caps().node_gpus_reason; !why.empty())
    st.skip(infrabench::reason_code::no_device, why);
  return device_count();
}

std::string check_fits(int device, std::size_t bytes) {
  const device_scope scope(device);
  std::size_t free = 0, total = 0;
  IB_CUDA(cudaMemGetInfo(&free, &total));
  return topo::fits_message(device, bytes, free, total);
}

topo::gpu_identity identity(const device_info& d) {
  topo::gpu_identity g;
  g.index = d.index;
  g.name = d.name;
  g.cc_major = d.cc_major;
  g.cc_minor = d.cc_minor;
  g.bus_id = d.bus_id;
  return g;
}

host_buffer::host_buffer(std::size_t bytes, host_kind kind, int node)
    : m_bytes(bytes), m_memory(bytes, node) {
  if (kind == host_kind::pageable) return;
  IB_CUDA(cudaHostRegister(m_memory.data(), std::max<std::size_t>(bytes, 1),
                           cudaHostRegisterPortable | cudaHostRegisterMapped));
  m_registered = true;
  IB_CUDA(cudaHostGetDevicePointer(&m_device_ptr, m_memory.data(), 0));
}

host_buffer::~host_buffer() {
  if (m_registered) (void)cudaHostUnregister(m_memory.data());
}

void gpu_row::add(topo::cell_sweep& sweep, std::string column, gpu_stream_ref main,
                  gpu_exec_options options, std::function<void()> launch) {
  auto c = std::make_unique<cell>();
  c->timer = std::make_unique<gpu_batch_timer>(main, std::move(options));
  c->launch = std::move(launch);
  cell* p = c.get();
  m_cells.push_back(std::move(c));
  sweep.add_batched(std::move(column),
                    [p](std::int64_t n) { return p->timer->run(n, p->launch).per_iteration_s; });
}

void gpu_row::exec(state& st, topo::cell_sweep& sweep, std::string timer_name) {
  std::int64_t cap = max_iterations_per_sample;
  for (const auto& c : m_cells) cap = std::min(cap, c->timer->max_launches());
  // The copies warm up by time, as exec_gpu does: an idle GPU takes ~100 ms under load to settle
  // its clocks and its links their power state, where the calibration calls alone were a few ms
  // for a small copy. Through the cells' timers, not the sweep: the sweep leaves calls out of
  // the samples by count (gpu_calibration_calls), and a time-based warm-up's count varies.
  const auto timed = [](const std::function<double()>& row) {
    const auto t0 = std::chrono::steady_clock::now();
    const double per_launch = row();
    return batch_timing{
        per_launch, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  st.warm_up_gpu(
      [&](std::int64_t n) {
        return timed([&] {
          double per_launch = 0;
          for (const auto& c : m_cells) per_launch += c->timer->run(n, c->launch).per_iteration_s;
          return per_launch;
        });
      },
      cap);
  sweep.skip_first_calls(state::gpu_calibration_calls);
  st.exec_gpu_batched([&](std::int64_t n) { return timed([&] { return sweep.run_batch(n); }); },
                      cap, std::move(timer_name));
  int expired = 0;
  for (const auto& c : m_cells) expired += c->timer->blocking_timeouts();
  st.check(expired == 0, std::to_string(expired) +
                             " samples: the blocking kernel gave up before all copies were "
                             "queued; their timing includes queueing gaps");
}

bool enable_peer(int from, int to, std::string* why) {
  int can = 0;
  IB_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) {
    *why = "peer access unsupported from GPU " + std::to_string(from) + " to GPU " +
           std::to_string(to) + " (cudaDeviceCanAccessPeer = 0)";
    return false;
  }
  const device_scope scope(from);
  const cudaError_t rc = cudaDeviceEnablePeerAccess(to, 0);
  if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled) {
    *why = "cudaDeviceEnablePeerAccess(" + std::to_string(from) + " -> " + std::to_string(to) +
           "): " + error_text(rc);
    return false;
  }
  (void)cudaGetLastError();  // "already enabled" is sticky otherwise
  return true;
}

int copy_blocks(const device_info& d, int concurrent_kernels) {
  return topo::copy_blocks_for(d.sm_count, concurrent_kernels);
}

void fill_device(int device, void* p, std::size_t bytes, std::uint64_t seed) {
  const device_scope scope(device);
  const device_info d = query_device(device);
  IB_CUDA(static_cast<cudaError_t>(
      infrabench::kernels::cuda::launch_fill_pattern(p, bytes, seed, d.sm_count * 8, nullptr)));
  IB_CUDA(cudaDeviceSynchronize());
}

std::uint64_t checksum_device(int device, const void* p, std::size_t bytes) {
  const device_scope scope(device);
  const device_info d = query_device(device);
  const device_buffer sum(device, sizeof(unsigned long long));
  IB_CUDA(cudaMemset(sum.get(), 0, sizeof(unsigned long long)));
  IB_CUDA(static_cast<cudaError_t>(infrabench::kernels::cuda::launch_checksum(
      p, bytes, static_cast<unsigned long long*>(sum.get()), d.sm_count * 8, nullptr)));
  unsigned long long value = 0;
  IB_CUDA(cudaMemcpy(&value, sum.get(), sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

topo::pcie_link read_pcie_link(const std::string& bus_id) {
  // NVML where the driver's library loads (it reads the link from the driver, also inside
  // containers whose sysfs hides the device); sysfs otherwise.
  if (auto link = topo::nvml_pcie_link(bus_id, nullptr)) return *link;
  const std::string dir = "/sys/bus/pci/devices/" + bus_id + "/";
  return topo::pcie_link::from_sysfs(
      read_line(dir + "current_link_speed"), read_line(dir + "current_link_width"),
      read_line(dir + "max_link_speed"), read_line(dir + "max_link_width"));
}

namespace {

[[nodiscard]] topo::ceiling_choice pcie_choice(const device_info& d, int directions) {
  const topo::pcie_link link = d.bus_id.empty() ? topo::pcie_link{} : read_pcie_link(d.bus_id);
  return topo::pcie_ceiling_of(identity(d), link, directions);
}

[[nodiscard]] std::optional<topo::ceiling> unpack(topo::ceiling_choice c, std::string* why_not,
                                                  std::string* warning) {
  if (why_not && !c.chosen) *why_not = c.why_not;
  if (warning && !c.warning.empty()) *warning = c.warning;
  return c.chosen;
}

}  // namespace

std::optional<topo::ceiling> pcie_ceiling(const device_info& d, int directions,
                                          std::string* why_not, std::string* warning) {
  return unpack(pcie_choice(d, directions), why_not, warning);
}

std::optional<topo::ceiling> memory_ceiling(const device_info& d, std::string* why_not) {
  // The datasheet figure where the SKU is known (hardware/gpu.h), else clock x bus width.
  const auto peak =
      kernels::hardware::memory_peak(d.name, d.sm_count, d.memory_clock_khz, d.memory_bus_bits);
  if (!peak) {
    if (why_not) *why_not = "memory clock or bus width not reported by the driver";
    return std::nullopt;
  }
  topo::ceiling c;
  c.gbps = peak->value;
  c.description = topo::format_gbps(peak->value) + " GB/s: " + d.name + " " + peak->source;
  return c;
}

std::optional<topo::ceiling> peer_ceiling(const device_info& a, const device_info& b,
                                          int directions, std::string* why_not,
                                          std::string* warning) {
  topo::nvlink_inventory la, lb;
  if (!a.bus_id.empty() && !b.bus_id.empty()) {
    la = topo::nvlinks_of(a.bus_id);
    lb = topo::nvlinks_of(b.bus_id);
  }
  return unpack(topo::peer_ceiling_of(identity(a), identity(b), la, lb, pcie_choice(a, directions),
                                      pcie_choice(b, directions), directions),
                why_not, warning);
}

std::vector<int> usable_cpus(const topo::numa_node& n) {
  std::vector<int> out;
  const auto allowed = infrabench::allowed_cpus();
  for (int c : n.cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) out.push_back(c);
  }
  return out;
}

const topo::numa_node& row_node(state& st, std::int64_t node_id,
                                const std::vector<topo::numa_node>& nodes) {
  for (const auto& n : nodes) {
    if (n.id == node_id) {
      if (!n.has_memory) st.skip("NUMA node " + std::to_string(node_id) + " has no memory");
      return n;
    }
  }
  std::vector<int> ids;
  for (const auto& n : nodes) ids.push_back(n.id);
  std::string why;
  (void)topo::select_ids(ids, node_id, &why, "NUMA node");
  st.skip(why);
}

}  // namespace infrabench::bw::gpu
