// CUDA plumbing for the GPU data-movement benchmarks (compiled only with CUDA): host buffers on a
// NUMA node, device-side pattern fills and checksums, the theoretical ceilings of the links a
// copy crosses, and the harness's GPU timing applied to a row of cells (one per GPU). Errors,
// device buffers, streams and events are the code base's one CUDA layer (cuda/support.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/support.h"
#include "gpu_shared.h"
#include "infrabench/gpu_timing.h"
#include "topology/ceiling.h"
#include "topology/link.h"
#include "topology/numa.h"

namespace infrabench::bw::gpu {

// The code base's one CUDA layer (kernels/cuda/support.h): errors (IB_CUDA), RAII, devices.
namespace kcu = infrabench::kernels::cuda;
using kcu::device_buffer;
using kcu::device_count;
using kcu::device_info;
using kcu::device_scope;
using kcu::error_text;
using kcu::event;
using kcu::query_device;
using kcu::stream;

// The GPUs of this host, for a benchmark that drives several from one process (the node leader's
// copy matrices and patterns): device_count(), or a skip with what to do when this process cannot
// reach every GPU of the host (capabilities::node_gpus_reason: per-task CUDA_VISIBLE_DEVICES,
// EXCLUSIVE_PROCESS mode), where it would measure a part of the node as if it were the whole.
[[nodiscard]] int node_device_count(infrabench::state& st);

// Empty when `bytes` fit in the device's free memory, else "needs 2.0 GiB on GPU 1; 1.2 GiB
// free of 79.1 GiB" (topo::fits_message).
[[nodiscard]] std::string check_fits(int device, std::size_t bytes);

// The facts about `d` the pure ceiling logic (topology/ceiling.h) needs.
[[nodiscard]] topo::gpu_identity identity(const device_info& d);

enum class host_kind { pinned, pageable };

// Host memory on a NUMA node (node < 0: wherever first touch puts it). Pinned buffers are
// registered with cudaHostRegister (portable and mapped), so copy engines DMA them directly and
// kernels on any GPU reach them through device_ptr().
class host_buffer {
 public:
  host_buffer(std::size_t bytes, host_kind kind, int node);
  ~host_buffer();
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  [[nodiscard]] void* get() const { return m_memory.data(); }
  [[nodiscard]] void* device_ptr() const { return m_device_ptr; }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }
  [[nodiscard]] const std::string& binding_error() const { return m_memory.binding_error(); }

 private:
  std::size_t m_bytes;
  node_memory m_memory;
  bool m_registered = false;
  void* m_device_ptr = nullptr;
};

// A row of GPU cells timed by the harness (state::exec_gpu_batched): each cell has its own
// gpu_batch_timer (a blocking kernel holds its stream while the batch's launches are queued, one
// event pair brackets them), and each call of the row runs every cell's batch in turn. The
// row's sample is the sum of the cells' times per launch; a cell's own samples give its median.
class gpu_row {
 public:
  // A cell whose unit of work `launch` enqueues on `main` (and the joined streams of `options`).
  void add(topo::cell_sweep& sweep, std::string column, gpu_stream_ref main,
           gpu_exec_options options, std::function<void()> launch);
  // Warms the row up by time (state::warm_up_gpu), then samples it until the stopping rule is
  // met; marks the result invalid when a blocking kernel gave up before its batch was queued.
  void exec(state& st, topo::cell_sweep& sweep, std::string timer_name = "cuda_event_batch");

 private:
  struct cell {
    std::unique_ptr<gpu_batch_timer> timer;
    std::function<void()> launch;
  };
  std::vector<std::unique_ptr<cell>> m_cells;
};

// Enables access from GPU `from` to GPU `to`'s memory; false with `why` when the pair cannot.
[[nodiscard]] bool enable_peer(int from, int to, std::string* why);

// Blocks of 512 threads for one SM copy kernel on `d` while `concurrent_kernels` copy kernels run
// on it at once (topology/copy_grid.h): alone, enough to fill every SM; shared, one per SM, so the
// kernels overlap rather than run one after the other.
[[nodiscard]] int copy_blocks(const device_info& d, int concurrent_kernels = 1);

// Synchronous helpers for set-up and verification (never inside a timed region).
void fill_device(int device, void* p, std::size_t bytes, std::uint64_t seed);
[[nodiscard]] std::uint64_t checksum_device(int device, const void* p, std::size_t bytes);

// The PCIe link of the device at `bus_id`: its current state and its maximum, from NVML when it
// loads, else sysfs (the link's `source` says which).
[[nodiscard]] topo::pcie_link read_pcie_link(const std::string& bus_id);

// The ceiling of a host<->GPU transfer: the GPU's PCIe link at its maximum generation and width
// (an idle GPU lowers its current link, so the state read after the copies is not the link they
// ran on), times `directions` (2 for bidirectional). Sets `why_not` when unknown and `warning`
// when only the current state is known or the link is narrower than its maximum.
[[nodiscard]] std::optional<topo::ceiling> pcie_ceiling(const device_info& d, int directions,
                                                        std::string* why_not, std::string* warning);

// The ceiling of a copy within one GPU: its datasheet memory bandwidth (hardware/gpu.h), or for
// an unknown SKU its DRAM/HBM peak from clock x bus width.
[[nodiscard]] std::optional<topo::ceiling> memory_ceiling(const device_info& d,
                                                          std::string* why_not);

// The ceiling of a copy from GPU a to GPU b: the NVLinks between them (NVML, every link up or
// down), or, without any, the narrower of their two PCIe links (topo::peer_ceiling_of).
// `directions` 2 for bidirectional.
[[nodiscard]] std::optional<topo::ceiling> peer_ceiling(const device_info& a, const device_info& b,
                                                        int directions, std::string* why_not,
                                                        std::string* warning);

// The CPUs of a host node (bw::host_nodes) that this process may use.
[[nodiscard]] std::vector<int> usable_cpus(const topo::numa_node& n);
// The node of `nodes` a row's host memory is on; leaves the benchmark skipped when there is no
// such node or it has no memory.
[[nodiscard]] const topo::numa_node& row_node(state& st, std::int64_t node_id,
                                              const std::vector<topo::numa_node>& nodes);

}  // namespace infrabench::bw::gpu
