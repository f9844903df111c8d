// CUDA plumbing for the GPU data-movement benchmarks (compiled only with CUDA): errors with
// context, RAII for streams, events, device and host buffers, the spin-kernel gate that holds a
// stream until every timed copy is queued (nvbandwidth's method), device-side pattern fills and
// checksums, and the theoretical ceilings of the links a copy crosses.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu_shared.h"
#include "topology/ceiling.h"
#include "topology/link.h"
#include "topology/numa.h"

namespace infrabench::bw::gpu {

// Throws std::runtime_error "file:line: call: <CUDA error text> (<name>)" and clears the
// runtime's sticky last error so later calls do not report it again.
[[noreturn]] void throw_cuda(cudaError_t rc, const char* call, const char* file, int line);
inline void check_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess) throw_cuda(rc, call, file, line);
}
// "out of memory (cudaErrorMemoryAllocation)"; clears the last error.
[[nodiscard]] std::string error_text(cudaError_t rc);

}  // namespace infrabench::bw::gpu

#define IB_CUDA(call) ::infrabench::bw::gpu::check_cuda((call), #call, __FILE__, __LINE__)

namespace infrabench::bw::gpu {

[[nodiscard]] int device_count();

// Makes `device` current for the scope and restores the previous one.
class device_scope {
 public:
  explicit device_scope(int device);
  ~device_scope();
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int m_previous = 0;
};

struct device_info {
  int index = 0;
  std::string name;
  int sm_count = 1;
  int cc_major = 0, cc_minor = 0;
  long long memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::string bus_id;  // normalized "0000:3b:00.0"; empty when unknown
};
[[nodiscard]] device_info query_device(int device);

// Empty when `bytes` fit in the device's free memory, else "needs 2.0 GiB on GPU 1; 1.2 GiB
// free of 79.1 GiB" (topo::fits_message).
[[nodiscard]] std::string check_fits(int device, std::size_t bytes);

// The facts about `d` the pure ceiling logic (topology/ceiling.h) needs.
[[nodiscard]] topo::gpu_identity identity(const device_info& d);

class device_buffer {
 public:
  device_buffer(int device, std::size_t bytes);
  ~device_buffer();
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  [[nodiscard]] void* get() const { return m_ptr; }
  [[nodiscard]] int device() const { return m_device; }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }

 private:
  int m_device;
  std::size_t m_bytes;
  void* m_ptr = nullptr;
};

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

class stream {
 public:
  explicit stream(int device);
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return m_stream; }
  [[nodiscard]] int device() const { return m_device; }

 private:
  int m_device;
  cudaStream_t m_stream = nullptr;
};

// An event for ordering only (no timing), created on `device`.
class event {
 public:
  explicit event(int device);
  ~event();
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  [[nodiscard]] cudaEvent_t get() const { return m_event; }

 private:
  cudaEvent_t m_event = nullptr;
};

// nvbandwidth's measurement: block(s) queues the spin kernel, which holds the stream until
// release(); the caller queues the start event and every copy behind it, so the copies run back
// to back with no launch gaps in the timed interval. A spin kernel that gave up (its timeout
// passed before the release, e.g. the host was preempted) is counted in `expired()`.
class stream_gate {
 public:
  stream_gate();
  ~stream_gate();
  stream_gate(const stream_gate&) = delete;
  stream_gate& operator=(const stream_gate&) = delete;
  void block(const stream& s);
  void release();
  [[nodiscard]] int expired() const { return m_expired; }

 private:
  volatile int* m_flag = nullptr;
  std::int64_t m_blocked_at_ns = 0;
  int m_expired = 0;
};
inline constexpr std::uint64_t spin_timeout_ns = 2'000'000'000;

// Number of blocks for the copy kernels on `device`: enough 512-thread blocks to fill every SM.
[[nodiscard]] int copy_blocks(const device_info& d);

// Synchronous helpers for set-up and verification (never inside a timed region).
void fill_device(int device, void* p, std::size_t bytes, std::uint64_t seed);
[[nodiscard]] std::uint64_t checksum_device(int device, const void* p, std::size_t bytes);

// The PCIe link of the device at `bus_id` now: from NVML when it loads, else sysfs (the link's
// `source` says which). GPUs lower the link speed when idle, so read it right after the timed
// copies.
[[nodiscard]] topo::pcie_link read_pcie_link(const std::string& bus_id);

// The ceiling of a host<->GPU transfer: the GPU's PCIe link at its current state, times
// `directions` (2 for bidirectional). Sets `why_not` when unknown and `warning` when the link runs
// below its maximum.
[[nodiscard]] std::optional<topo::ceiling> pcie_ceiling(const device_info& d, int directions,
                                                        std::string* why_not, std::string* warning);

// The ceiling of a copy within one GPU: its DRAM/HBM peak (clock x bus width).
[[nodiscard]] std::optional<topo::ceiling> memory_ceiling(const device_info& d,
                                                          std::string* why_not);

// The ceiling of a copy from GPU a to GPU b: the NVLinks between them (NVML, every link up or
// down), or, without any, the narrower of their two PCIe links (topo::peer_ceiling_of).
// `directions` 2 for bidirectional.
[[nodiscard]] std::optional<topo::ceiling> peer_ceiling(const device_info& a, const device_info& b,
                                                        int directions, std::string* why_not,
                                                        std::string* warning);

// Host nodes: the NUMA node list (one node 0 with every CPU where sysfs has none), and the CPUs
// of a node that this process may use.
[[nodiscard]] std::vector<topo::numa_node> host_nodes();
[[nodiscard]] std::vector<int> usable_cpus(const topo::numa_node& n);

}  // namespace infrabench::bw::gpu
