#include "gpu_common.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <stdexcept>

#include "cuda/copy.h"
#include "cuda/spin.h"
#include "gpu_nvml.h"
#include "infrabench/thread_pool.h"

namespace infrabench::bw::gpu {
namespace {

[[nodiscard]] std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[nodiscard]] std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

[[nodiscard]] int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

}  // namespace

void throw_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  std::string f(file);
  if (const auto slash = f.rfind('/'); slash != std::string::npos) f = f.substr(slash + 1);
  throw std::runtime_error(f + ":" + std::to_string(line) + ": " + call + ": " + error_text(rc));
}

std::string error_text(cudaError_t rc) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorString(rc)) + " (" + cudaGetErrorName(rc) + ")";
}

int device_count() {
  int count = 0;
  IB_CUDA(cudaGetDeviceCount(&count));
  return count;
}

device_scope::device_scope(int device) {
  IB_CUDA(cudaGetDevice(&m_previous));
  IB_CUDA(cudaSetDevice(device));
}

device_scope::~device_scope() {
  (void)cudaSetDevice(m_previous);
}

device_info query_device(int device) {
  device_info d;
  d.index = device;
  cudaDeviceProp prop{};
  IB_CUDA(cudaGetDeviceProperties(&prop, device));
  d.name = prop.name;
  d.sm_count = std::max(1, prop.multiProcessorCount);
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain (kHz, bits).
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  d.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) {
    d.bus_id = topo::normalize_pci_bus_id(bus);
  } else {
    (void)cudaGetLastError();
  }
  return d;
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

device_buffer::device_buffer(int device, std::size_t bytes) : m_device(device), m_bytes(bytes) {
  const device_scope scope(device);
  IB_CUDA(cudaMalloc(&m_ptr, std::max<std::size_t>(bytes, 1)));
}

device_buffer::~device_buffer() {
  if (!m_ptr) return;
  (void)cudaSetDevice(m_device);
  (void)cudaFree(m_ptr);
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

stream::stream(int device) : m_device(device) {
  const device_scope scope(device);
  IB_CUDA(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
}

stream::~stream() {
  (void)cudaSetDevice(m_device);
  (void)cudaStreamDestroy(m_stream);
}

event::event(int device) {
  const device_scope scope(device);
  IB_CUDA(cudaEventCreateWithFlags(&m_event, cudaEventDisableTiming));
}

event::~event() {
  (void)cudaEventDestroy(m_event);
}

stream_gate::stream_gate() {
  void* p = nullptr;
  // Portable and mapped: every GPU's spin kernel reads the flag straight from host memory.
  IB_CUDA(cudaHostAlloc(&p, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
  m_flag = static_cast<volatile int*>(p);
  *m_flag = 1;
}

stream_gate::~stream_gate() {
  (void)cudaFreeHost(const_cast<int*>(m_flag));
}

void stream_gate::block(const stream& s) {
  *m_flag = 0;
  const device_scope scope(s.device());
  void* dev = nullptr;
  IB_CUDA(cudaHostGetDevicePointer(&dev, const_cast<int*>(m_flag), 0));
  IB_CUDA(static_cast<cudaError_t>(infrabench::kernels::cuda::launch_spin(
      static_cast<volatile int*>(dev), spin_timeout_ns, s.get())));
  m_blocked_at_ns = now_ns();
}

void stream_gate::release() {
  if (now_ns() - m_blocked_at_ns >= static_cast<std::int64_t>(spin_timeout_ns)) ++m_expired;
  *m_flag = 1;
}

int copy_blocks(const device_info& d) {
  return d.sm_count * 4;
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
  if (auto link = nvml_pcie_link(bus_id, nullptr)) return *link;
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
  const auto peak = topo::memory_peak_gbps(d.memory_clock_khz, d.memory_bus_bits);
  if (!peak) {
    if (why_not) *why_not = "memory clock or bus width not reported by the driver";
    return std::nullopt;
  }
  topo::ceiling c;
  c.gbps = *peak;
  c.description = topo::format_gbps(*peak) + " GB/s: " + d.name + " memory peak, 2 x " +
                  std::to_string(d.memory_clock_khz / 1000) + " MHz x " +
                  std::to_string(d.memory_bus_bits) + " bits";
  return c;
}

std::optional<topo::ceiling> peer_ceiling(const device_info& a, const device_info& b,
                                          int directions, std::string* why_not,
                                          std::string* warning) {
  topo::nvlink_inventory la, lb;
  if (!a.bus_id.empty() && !b.bus_id.empty()) {
    la = nvlinks_of(a.bus_id);
    lb = nvlinks_of(b.bus_id);
  }
  return unpack(topo::peer_ceiling_of(identity(a), identity(b), la, lb, pcie_choice(a, directions),
                                      pcie_choice(b, directions), directions),
                why_not, warning);
}

std::vector<topo::numa_node> host_nodes() {
  std::vector<topo::numa_node> nodes = topo::read_numa_nodes();
  if (nodes.empty()) {
    topo::numa_node only;
    only.id = 0;
    only.cpus = infrabench::allowed_cpus();
    only.has_memory = true;
    nodes.push_back(std::move(only));
  }
  return nodes;
}

std::vector<int> usable_cpus(const topo::numa_node& n) {
  std::vector<int> out;
  const auto allowed = infrabench::allowed_cpus();
  for (int c : n.cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) out.push_back(c);
  }
  return out;
}

}  // namespace infrabench::bw::gpu
