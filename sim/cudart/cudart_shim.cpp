// A CUDA runtime for the simulated node (docs/simulation.md): the entry points
// libinfrabench_cuda.so imports, answered from the node file on the CPU. Device memory is host
// memory (mmap), every copy is a memcpy done when it is enqueued (so streams and events need no
// threads: an event records the host clock), our kernels' launches are checked and counted but do
// not compute (infrabench_sim_noop_launches tells the harness, which then calls their checks not
// verified). Contexts open lazily, one per device per process, as the real runtime's primary
// contexts do; exclusive-process mode holds a lock file per GPU, so a second process is refused as
// it would be.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels.h"
#include "node.h"

#define SIM_API extern "C" __attribute__((visibility("default")))

namespace infrabench::sim {
namespace {

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;
std::atomic<unsigned long long> g_noop_launches{0};

enum class mem_kind { device, pinned };
struct allocation {
  int device;
  std::size_t bytes;
  mem_kind kind;
};

struct process_state {
  std::mutex mu;
  std::map<void*, allocation> allocations;
  std::map<const void*, std::size_t> registered;  // cudaHostRegister'ed ranges
  std::vector<std::uint64_t> live_bytes;          // per device
  std::vector<bool> context_open;
  std::vector<std::vector<bool>> peer_enabled;
  double last_event_ms = 0;
  // Per device: when (host steady clock, ms) the work not computed so far (no-op kernels and
  // GEMMs, each taking its simulated device time) would be done. Events record it and
  // synchronisation waits for it, so a loop of such work takes its simulated time, as on a GPU.
  std::vector<double> busy_until_ms;
};

process_state& ps() {
  static process_state* s = [] {
    auto* p = new process_state;  // never destroyed: other libraries' destructors may still free
    const std::size_t n = the_node().gpus.size();
    p->live_bytes.assign(n, 0);
    p->context_open.assign(n, false);
    p->busy_until_ms.assign(n, 0.0);
    p->peer_enabled.assign(n, std::vector<bool>(n, false));
    return p;
  }();
  return *s;
}

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

bool valid_device(int d) {
  return d >= 0 && d < static_cast<int>(the_node().gpus.size());
}

std::string lock_dir() {
  if (const char* d = std::getenv("INFRABENCH_SIM_RUN_DIR"); d != nullptr && *d != '\0') return d;
  return "/tmp/infrabench-sim-" + std::to_string(::getuid());
}

// Exclusive-process mode: one process per GPU, as the driver enforces. The lock is the open file
// (flock), so it goes with the process however it ends.
cudaError_t take_exclusive(const gpu& g) {
  const std::string dir = lock_dir();
  ::mkdir(dir.c_str(), 0700);
  const std::string path = dir + "/" + the_node().host + "-" + g.pci_bus_id + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return cudaErrorDevicesUnavailable;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return cudaErrorDevicesUnavailable;
  }
  return cudaSuccess;  // fd stays open for the life of the process
}

// Opens device d's context (the caller holds ps().mu), as the first call that needs one does.
cudaError_t open_context_locked(int d) {
  auto& s = ps();
  if (s.context_open[d]) return cudaSuccess;
  const gpu& g = the_node().gpus[d];
  if (g.mode == compute_mode::prohibited) return cudaErrorDevicesUnavailable;
  if (g.mode == compute_mode::exclusive_process) {
    if (const cudaError_t e = take_exclusive(g); e != cudaSuccess) return e;
  }
  s.context_open[d] = true;
  return cudaSuccess;
}

cudaError_t open_context(int d) {
  if (!valid_device(d)) return cudaErrorInvalidDevice;
  const std::lock_guard lock(ps().mu);
  return open_context_locked(d);
}

bool driver_too_old() {
  return the_node().driver_version < CUDART_VERSION;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct sim_stream {
  int device;
  unsigned flags;
};
struct sim_event {
  int device;
  unsigned flags;
  bool recorded = false;
  double at_ms = 0;
};

int device_of_stream(cudaStream_t s) {
  return s == nullptr ? t_device : reinterpret_cast<sim_stream*>(s)->device;
}

// Until the host clock reaches `at_ms`: what the simulated device takes for work not computed.
void wait_until_ms(double at_ms) {
  const double left = at_ms - now_ms();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(left));
}

void wait_for_device(int d) {
  if (d < 0 || d >= static_cast<int>(the_node().gpus.size())) return;
  double until = 0;
  {
    const std::lock_guard lock(ps().mu);
    until = ps().busy_until_ms[static_cast<std::size_t>(d)];
  }
  wait_until_ms(until);
}

void* map_bytes(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

cudaError_t allocate(void** out, std::size_t bytes, int device, mem_kind kind) {
  if (out == nullptr) return cudaErrorInvalidValue;
  *out = nullptr;
  if (bytes == 0) return cudaSuccess;
  auto& s = ps();
  const std::lock_guard lock(s.mu);
  if (kind == mem_kind::device) {
    if (const cudaError_t e = open_context_locked(device); e != cudaSuccess) return e;
    const gpu& g = the_node().gpus[device];
    const std::uint64_t limit = std::min(g.memory_bytes, g.oom_after_bytes);
    if (s.live_bytes[device] + bytes > limit) return cudaErrorMemoryAllocation;
  }
  void* p = map_bytes(bytes);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  s.allocations[p] = {device, bytes, kind};
  if (kind == mem_kind::device) s.live_bytes[device] += bytes;
  *out = p;
  return cudaSuccess;
}

cudaError_t release(void* p, mem_kind kind) {
  auto& s = ps();
  const std::lock_guard lock(s.mu);
  const auto it = s.allocations.find(p);
  if (it == s.allocations.end() || it->second.kind != kind) return cudaErrorInvalidValue;
  if (kind == mem_kind::device) s.live_bytes[it->second.device] -= it->second.bytes;
  ::munmap(p, it->second.bytes);
  s.allocations.erase(it);
  return cudaSuccess;
}

// Work on the current device that was not computed: counted, and its device time added.
void not_computed(double device_us) {
  g_noop_launches.fetch_add(1);
  if (!valid_device(t_device)) return;
  const std::lock_guard lock(ps().mu);
  double& busy = ps().busy_until_ms[static_cast<std::size_t>(t_device)];
  busy = std::max(busy, now_ms()) + device_us / 1000;
}

struct call_config {
  dim3 grid, block;
  std::size_t shared = 0;
  void* stream = nullptr;
};
thread_local std::vector<call_config> t_configs;

}  // namespace
}  // namespace infrabench::sim

using namespace infrabench::sim;

// ---- the sim query
SIM_API unsigned long long infrabench_sim_noop_launches(void) {
  return g_noop_launches.load();
}

// ---- versions and errors
SIM_API cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return ret(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}
SIM_API cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return ret(cudaErrorInvalidValue);
  *v = the_node().driver_version;
  return cudaSuccess;
}
SIM_API cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
SIM_API cudaError_t cudaPeekAtLastError(void) {
  return t_last_error;
}

namespace {
struct error_text {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr error_text k_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
};
const error_text* find_error(cudaError_t e) {
  for (const auto& t : k_errors) {
    if (t.code == e) return &t;
  }
  return nullptr;
}
}  // namespace

SIM_API const char* cudaGetErrorName(cudaError_t e) {
  const auto* t = find_error(e);
  return t != nullptr ? t->name : "cudaErrorUnknown";
}
SIM_API const char* cudaGetErrorString(cudaError_t e) {
  const auto* t = find_error(e);
  return t != nullptr ? t->text : "unknown error";
}

// ---- devices
SIM_API cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return ret(cudaErrorInvalidValue);
  if (driver_too_old()) return ret(cudaErrorInsufficientDriver);
  *count = static_cast<int>(the_node().gpus.size());
  return *count == 0 ? ret(cudaErrorNoDevice) : cudaSuccess;
}
SIM_API cudaError_t cudaGetDevice(int* d) {
  if (d == nullptr) return ret(cudaErrorInvalidValue);
  *d = t_device;
  return cudaSuccess;
}
// Since CUDA 12 cudaSetDevice initialises the device's primary context at once: so does this.
SIM_API cudaError_t cudaSetDevice(int d) {
  if (driver_too_old()) return ret(cudaErrorInsufficientDriver);
  if (const cudaError_t e = open_context(d); e != cudaSuccess) return ret(e);
  t_device = d;
  return cudaSuccess;
}
SIM_API cudaError_t cudaDeviceSynchronize(void) {
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  wait_for_device(t_device);
  return cudaSuccess;
}
SIM_API cudaError_t cudaDeviceReset(void) {
  return cudaSuccess;
}

SIM_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (p == nullptr) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  const gpu& g = the_node().gpus[d];
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", g.name.c_str());
  for (std::size_t i = 0; i < sizeof p->uuid.bytes; ++i) {
    p->uuid.bytes[i] = static_cast<char>(i < g.uuid.size() ? g.uuid[g.uuid.size() - 1 - i] : 0);
  }
  p->totalGlobalMem = g.memory_bytes;
  p->sharedMemPerBlock = 48 << 10;
  p->sharedMemPerBlockOptin = static_cast<std::size_t>(g.shared_mem_optin_bytes);
  p->sharedMemPerMultiprocessor = static_cast<std::size_t>(g.shared_mem_optin_bytes) + (1 << 10);
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = g.cc_major;
  p->minor = g.cc_minor;
  p->multiProcessorCount = g.sm_count;
  p->l2CacheSize = g.l2_cache_bytes;
  p->memoryBusWidth = g.mem_bus_width_bits;
  p->canMapHostMemory = 1;
  p->unifiedAddressing = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->ECCEnabled = g.ecc_enabled ? 1 : 0;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::sscanf(g.pci_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  p->pciDomainID = static_cast<int>(domain);
  p->pciBusID = static_cast<int>(bus);
  p->pciDeviceID = static_cast<int>(dev);
  return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int d) {
  if (v == nullptr) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  const gpu& g = the_node().gpus[d];
  switch (attr) {
    case cudaDevAttrClockRate:
      *v = g.sm_clock_mhz * 1000;
      break;
    case cudaDevAttrMemoryClockRate:
      *v = g.mem_clock_mhz * 1000;
      break;
    case cudaDevAttrMultiProcessorCount:
      *v = g.sm_count;
      break;
    case cudaDevAttrGlobalMemoryBusWidth:
      *v = g.mem_bus_width_bits;
      break;
    case cudaDevAttrEccEnabled:
      *v = g.ecc_enabled ? 1 : 0;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = g.cc_major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = g.cc_minor;
      break;
    case cudaDevAttrL2CacheSize:
      *v = g.l2_cache_bytes;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = g.shared_mem_optin_bytes;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *v = 1024;
      break;
    case cudaDevAttrWarpSize:
      *v = 32;
      break;
    case cudaDevAttrComputeMode:
      *v = g.mode == compute_mode::exclusive_process ? cudaComputeModeExclusiveProcess
           : g.mode == compute_mode::prohibited      ? cudaComputeModeProhibited
                                                     : cudaComputeModeDefault;
      break;
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrConcurrentKernels:
      *v = 1;
      break;
    default:
      *v = 0;
      break;
  }
  return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetPCIBusId(char* buf, int len, int d) {
  if (buf == nullptr || len <= 0) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  const std::string& id = the_node().gpus[d].pci_bus_id;  // "00000000:17:00.0" -> "0000:17:00.0"
  const std::string shortened = id.size() > 12 ? id.substr(id.size() - 12) : id;
  std::snprintf(buf, static_cast<std::size_t>(len), "%s", shortened.c_str());
  return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (can == nullptr) return ret(cudaErrorInvalidValue);
  if (!valid_device(d) || !valid_device(peer)) return ret(cudaErrorInvalidDevice);
  *can = the_node().p2p[d][peer] ? 1 : 0;
  return cudaSuccess;
}
SIM_API cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  if (!valid_device(peer)) return ret(cudaErrorInvalidDevice);
  const int d = t_device;
  if (const cudaError_t e = open_context(d); e != cudaSuccess) return ret(e);
  if (!the_node().p2p[d][peer]) return ret(cudaErrorPeerAccessUnsupported);
  if (const cudaError_t e = open_context(peer); e != cudaSuccess) return ret(e);
  const std::lock_guard lock(ps().mu);
  if (ps().peer_enabled[d][peer]) return ret(cudaErrorPeerAccessAlreadyEnabled);
  ps().peer_enabled[d][peer] = true;
  return cudaSuccess;
}

// ---- memory
SIM_API cudaError_t cudaMalloc(void** p, size_t bytes) {
  return ret(allocate(p, bytes, t_device, mem_kind::device));
}
SIM_API cudaError_t cudaFree(void* p) {
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  return p == nullptr ? cudaSuccess : ret(release(p, mem_kind::device));
}
SIM_API cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return ret(allocate(p, bytes, t_device, mem_kind::pinned));
}
SIM_API cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  return ret(allocate(p, bytes, t_device, mem_kind::pinned));
}
SIM_API cudaError_t cudaFreeHost(void* p) {
  return p == nullptr ? cudaSuccess : ret(release(p, mem_kind::pinned));
}
SIM_API cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned int) {
  if (p == nullptr || bytes == 0) return ret(cudaErrorInvalidValue);
  const std::lock_guard lock(ps().mu);
  if (!ps().registered.emplace(p, bytes).second) return ret(cudaErrorHostMemoryAlreadyRegistered);
  return cudaSuccess;
}
SIM_API cudaError_t cudaHostUnregister(void* p) {
  const std::lock_guard lock(ps().mu);
  if (ps().registered.erase(p) == 0) return ret(cudaErrorHostMemoryNotRegistered);
  return cudaSuccess;
}
SIM_API cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned int) {
  if (dev == nullptr || host == nullptr) return ret(cudaErrorInvalidValue);
  *dev = host;  // device memory is host memory
  return cudaSuccess;
}
SIM_API cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  const gpu& g = the_node().gpus[t_device];
  const std::lock_guard lock(ps().mu);
  const std::uint64_t limit = std::min(g.memory_bytes, g.oom_after_bytes);
  const std::uint64_t live = ps().live_bytes[t_device];
  if (free_bytes != nullptr) *free_bytes = live < limit ? limit - live : 0;
  if (total != nullptr) *total = g.memory_bytes;
  return cudaSuccess;
}
SIM_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  if (bytes > 0 && (dst == nullptr || src == nullptr)) return ret(cudaErrorInvalidValue);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
SIM_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                    cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
SIM_API cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
SIM_API cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t bytes,
                                        cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
SIM_API cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  if (bytes > 0 && p == nullptr) return ret(cudaErrorInvalidValue);
  std::memset(p, value, bytes);
  return cudaSuccess;
}
SIM_API cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  return cudaMemset(p, value, bytes);
}

// ---- streams and events: work is done when enqueued, so every wait has already finished.
SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (s == nullptr) return ret(cudaErrorInvalidValue);
  if (const cudaError_t e = open_context(t_device); e != cudaSuccess) return ret(e);
  *s = reinterpret_cast<cudaStream_t>(new sim_stream{t_device, flags});
  return cudaSuccess;
}
SIM_API cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithFlags(s, 0);
}
SIM_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<sim_stream*>(s);
  return cudaSuccess;
}
SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  wait_for_device(device_of_stream(s));
  return cudaSuccess;
}
SIM_API cudaError_t cudaStreamQuery(cudaStream_t) {
  return cudaSuccess;
}
SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned int) {
  return e == nullptr ? ret(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (e == nullptr) return ret(cudaErrorInvalidValue);
  if (const cudaError_t err = open_context(t_device); err != cudaSuccess) return ret(err);
  *e = reinterpret_cast<cudaEvent_t>(new sim_event{t_device, flags});
  return cudaSuccess;
}
SIM_API cudaError_t cudaEventCreate(cudaEvent_t* e) {
  return cudaEventCreateWithFlags(e, 0);
}
SIM_API cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<sim_event*>(e);
  return cudaSuccess;
}
// The real runtime refuses an event and a stream of different devices.
SIM_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  auto* ev = reinterpret_cast<sim_event*>(e);
  if (ev == nullptr || ev->device != device_of_stream(s)) {
    return ret(cudaErrorInvalidResourceHandle);
  }
  // Strictly increasing by at least the real timer's resolution (0.5 us): two records around
  // work that took no host time still give a positive interval, never a division by zero.
  const std::lock_guard lock(ps().mu);
  ev->at_ms = std::max({now_ms(), ps().busy_until_ms[static_cast<std::size_t>(ev->device)],
                        ps().last_event_ms + 0.0005});
  ps().last_event_ms = ev->at_ms;
  ev->recorded = true;
  return cudaSuccess;
}
SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e == nullptr) return ret(cudaErrorInvalidResourceHandle);
  wait_until_ms(reinterpret_cast<sim_event*>(e)->at_ms);
  return cudaSuccess;
}
SIM_API cudaError_t cudaEventQuery(cudaEvent_t e) {
  return e == nullptr ? ret(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
SIM_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  auto* ea = reinterpret_cast<sim_event*>(a);
  auto* eb = reinterpret_cast<sim_event*>(b);
  if (ms == nullptr || ea == nullptr || eb == nullptr) return ret(cudaErrorInvalidValue);
  if (((ea->flags | eb->flags) & cudaEventDisableTiming) != 0 || !ea->recorded || !eb->recorded) {
    return ret(cudaErrorInvalidResourceHandle);
  }
  *ms = static_cast<float>(eb->at_ms - ea->at_ms);
  return cudaSuccess;
}

// ---- kernels: registered, configured, checked as a launch is, counted, and not run.
SIM_API void** __cudaRegisterFatBinary(void* fat) {
  static std::mutex mu;
  static std::vector<void**> handles;
  const std::lock_guard lock(mu);
  handles.push_back(new void*(fat));
  return handles.back();
}
SIM_API void __cudaRegisterFatBinaryEnd(void**) {}
SIM_API void __cudaUnregisterFatBinary(void**) {}
namespace {
// Each kernel's device symbol by its host stub's address (what a launch names it by).
std::map<const void*, std::string>& kernel_names() {
  static auto* names = new std::map<const void*, std::string>;
  return *names;
}
std::mutex g_kernels_mu;
}  // namespace
SIM_API void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name,
                                    int, uint3*, uint3*, dim3*, dim3*, int*) {
  const std::lock_guard lock(g_kernels_mu);
  if (device_name != nullptr) kernel_names()[host_fun] = device_name;
}
SIM_API void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
SIM_API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                             struct CUstream_st* stream) {
  t_configs.push_back({grid, block, shared, stream});
  return 0;
}
SIM_API cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared,
                                               void* stream) {
  if (t_configs.empty()) return cudaErrorInvalidConfiguration;
  const call_config c = t_configs.back();
  t_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}
SIM_API cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* fun) {
  if (k == nullptr) return cudaErrorInvalidValue;
  *k = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}
SIM_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                       size_t shared, cudaStream_t stream) {
  const int d = t_device;
  if (const cudaError_t e = open_context(d); e != cudaSuccess) return ret(e);
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 ||
      shared > static_cast<std::size_t>(the_node().gpus[d].shared_mem_optin_bytes)) {
    return ret(cudaErrorInvalidConfiguration);
  }
  if (device_of_stream(stream) != d) return ret(cudaErrorInvalidResourceHandle);
  std::string name;
  {
    const std::lock_guard lock(g_kernels_mu);
    const auto it = kernel_names().find(reinterpret_cast<const void*>(kernel));
    if (it != kernel_names().end()) name = it->second;
  }
  if (!emulate_kernel(name.c_str(), args)) not_computed(the_node().kernel_us);
  return cudaSuccess;
}
SIM_API cudaError_t cudaLaunchKernel(const void* f, dim3 grid, dim3 block, void** args,
                                     size_t shared, cudaStream_t stream) {
  return __cudaLaunchKernel(reinterpret_cast<cudaKernel_t>(const_cast<void*>(f)), grid, block, args,
                            shared, stream);
}
// The limit a kernel may ask for is the device's opt-in shared memory per block.
SIM_API cudaError_t cudaFuncSetAttribute(const void* f, cudaFuncAttribute attr, int value) {
  if (f == nullptr) return ret(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      (value < 0 ||
       value > the_node().gpus.at(static_cast<std::size_t>(t_device)).shared_mem_optin_bytes)) {
    return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

// ---- for the other shims
SIM_API int infrabench_sim_node_index(int cuda_ordinal) {
  return valid_device(cuda_ordinal) ? the_node().gpus[cuda_ordinal].node_index : -1;
}
SIM_API void infrabench_sim_count_noop_launch(void) {
  not_computed(the_node().kernel_us);
}
// A GEMM of `flops` that was not computed: a launch, plus its time at the GPU's "gemm_tflops".
SIM_API void infrabench_sim_gemm_not_computed(double flops) {
  const double tflops = valid_device(t_device) ? the_node().gpus[t_device].gemm_tflops : 400;
  not_computed(the_node().kernel_us + flops / (tflops * 1e12) * 1e6);
}
