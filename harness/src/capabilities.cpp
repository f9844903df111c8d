// The capabilities probe: CPU ISA (cpuid + XCR0), affinity, available memory, and the per-backend
// probes (CUDA, NCCL, io_uring, MPI). Also the requirement objects benchmarks state.
#include "infrabench/capabilities.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "infrabench/backend_loader.h"
#include "infrabench/compiled_in.h"
#include "infrabench/modules/mpi_api.h"
#include "infrabench/probe_detail.h"
#include "infrabench/sysinfo.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace infrabench {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct cpuid_regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Zeroes when the leaf is beyond the CPU's maximum, so a missing leaf reads as "no features".
cpuid_regs cpuid(unsigned leaf, unsigned subleaf) {
  cpuid_regs r;
  if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return {};
  return r;
}

bool bit(unsigned reg, int n) {
  return ((reg >> n) & 1U) != 0;
}

// Read with inline asm rather than _xgetbv() so this file needs no -mxsave target flag.
std::uint64_t read_xcr0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<std::uint64_t>(edx) << 32) | eax;
}

cpu_isa probe_isa() {
  cpu_isa isa;
  const cpuid_regs l1 = cpuid(1, 0);
  const cpuid_regs l7 = cpuid(7, 0);
  const cpuid_regs l7s1 = cpuid(7, 1);

  // A CPU can report AVX while the OS does not save the YMM/ZMM state on context switch (old
  // kernels, some hypervisors, `noxsave`); executing AVX then corrupts registers or faults. So
  // every AVX-family flag below counts only when XCR0 says the OS saves that state.
  std::uint64_t xcr0 = 0;
  if (bit(l1.ecx, 27)) xcr0 = read_xcr0();     // OSXSAVE: xgetbv is usable
  constexpr std::uint64_t xcr0_avx = 0x6;      // SSE (bit 1) + AVX upper halves (bit 2)
  constexpr std::uint64_t xcr0_avx512 = 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM (bits 5-7)
  constexpr std::uint64_t xcr0_amx = 0x60000;  // XTILECFG, XTILEDATA (bits 17-18)
  isa.os_saves_avx = (xcr0 & xcr0_avx) == xcr0_avx;
  isa.os_saves_avx512 = isa.os_saves_avx && (xcr0 & xcr0_avx512) == xcr0_avx512;
  const bool os_saves_amx = (xcr0 & xcr0_amx) == xcr0_amx;

  isa.sse42 = bit(l1.ecx, 20);
  isa.avx = isa.os_saves_avx && bit(l1.ecx, 28);
  isa.fma = isa.os_saves_avx && bit(l1.ecx, 12);
  isa.avx2 = isa.os_saves_avx && bit(l7.ebx, 5);

  const bool z = isa.os_saves_avx512;
  isa.avx512f = z && bit(l7.ebx, 16);
  isa.avx512dq = z && bit(l7.ebx, 17);
  isa.avx512bw = z && bit(l7.ebx, 30);
  isa.avx512vl = z && bit(l7.ebx, 31);
  isa.avx512_vnni = z && bit(l7.ecx, 11);
  isa.avx512_fp16 = z && bit(l7.edx, 23);
  isa.avx512_bf16 = z && bit(l7s1.eax, 5);

  // Linux also wants arch_prctl(ARCH_REQ_XCOMP_PERM) before the first tile instruction; that is
  // the AMX kernel's business. Here we only say the hardware and the OS state support it.
  isa.amx_bf16 = os_saves_amx && bit(l7.edx, 22);
  isa.amx_tile = os_saves_amx && bit(l7.edx, 24);
  isa.amx_int8 = os_saves_amx && bit(l7.edx, 25);
  return isa;
}

#else

// Not x86: there are no x86 ISA extensions to report.
cpu_isa probe_isa() {
  return {};
}

#endif

// The number of CPUs in this process's affinity mask, which is what a benchmark's threads can
// actually use (taskset, cgroups cpusets, mpirun --bind-to), unlike the count of online CPUs.
int probe_logical_cpus() {
  // cpu_set_t holds 1024 CPUs; grow the dynamic set until the kernel's mask fits.
  for (int n = 1024; n <= (1 << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(static_cast<std::size_t>(n));
    if (set == nullptr) break;
    const std::size_t size = CPU_ALLOC_SIZE(static_cast<std::size_t>(n));
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      const int count = CPU_COUNT_S(size, set);
      CPU_FREE(set);
      return count > 0 ? count : 1;
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) break;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::int64_t probe_memory_available() {
  std::ifstream in("/proc/meminfo");
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    const long long bytes = sysfs::meminfo_bytes(text.str(), "MemAvailable");
    if (bytes >= 0) return bytes;
  }
  // Kernels before 3.14 lack MemAvailable; free pages undercount (no page cache) but are > 0.
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) return static_cast<std::int64_t>(pages) * page_size;
  return 0;
}

void probe_mpi(capabilities& caps, int world_size) {
  caps.world_size = world_size;
  if (!build::compiled_in(build::backend::mpi)) {
    caps.mpi.available = false;
    caps.mpi.compiled_in = false;
    caps.mpi.reason = "not compiled in (INFRABENCH_WITH_MPI=OFF)";
    return;
  }
  // The MPI module (loaded at start-up) read the library's version before MPI_Init.
  const backends::loaded_module& m = backends::load("mpi");
  if (!m.loaded()) {
    caps.mpi.available = false;
    caps.mpi.reason = m.reason.text;
    return;
  }
  const auto& api = *reinterpret_cast<const infrabench_mpi_api*>(m.table);
  caps.mpi.version = std::string(m.table->version) + " (MPI " + std::to_string(api.mpi_version) +
                     "." + std::to_string(api.mpi_subversion) + ")";
  caps.mpi.available = world_size > 1;
  if (!caps.mpi.available) caps.mpi.reason = "not launched by mpirun/srun (world size 1)";
}

// One failing probe must not take the others (or the run) down: it becomes the feature's reason.
template <class F>
void guarded(feature& f, const char* what, F&& probe) {
  try {
    probe();
  } catch (const std::exception& e) {
    f.available = false;
    f.reason = std::string(what) + " probe failed: " + e.what();
  } catch (...) {
    f.available = false;
    f.reason = std::string(what) + " probe failed with an unknown exception";
  }
}

nlohmann::json feature_json(const feature& f) {
  nlohmann::json j;
  j["available"] = f.available;
  j["version"] = f.version.empty() ? nlohmann::json() : nlohmann::json(f.version);
  j["reason"] = f.available || f.reason.empty() ? nlohmann::json() : nlohmann::json(f.reason);
  return j;
}

// The reason for a missing ISA extension; the probe already folded XCR0 into the flag.
std::string need_isa(bool present, const char* pretty, const char* flag) {
  if (present) return {};
  return std::string("CPU lacks ") + pretty + " (" + flag + ")";
}

std::string need_feature(const feature& f, const char* name) {
  if (f.available) return {};
  if (!f.reason.empty()) return f.reason;
  return std::string(name) + " not available";
}

std::string check_avx2(const capabilities& c) {
  return need_isa(c.isa.avx2, "AVX2", "avx2");
}
std::string check_avx512f(const capabilities& c) {
  return need_isa(c.isa.avx512f, "AVX-512 Foundation", "avx512f");
}
std::string check_avx512bw(const capabilities& c) {
  return need_isa(c.isa.avx512bw, "AVX-512 BW", "avx512bw");
}
std::string check_avx512_bf16(const capabilities& c) {
  return need_isa(c.isa.avx512_bf16, "AVX-512 BF16", "avx512_bf16");
}
std::string check_avx512_fp16(const capabilities& c) {
  return need_isa(c.isa.avx512_fp16, "AVX-512 FP16", "avx512_fp16");
}
std::string check_cuda(const capabilities& c) {
  return need_feature(c.cuda, "CUDA");
}
// Without a usable GPU, CUDA's reason: the one req::cuda gives beside it, said once
// (benchmark::unmet); with one, whether cuBLAS opened.
std::string check_cublas(const capabilities& c) {
  if (!c.cuda.available) return need_feature(c.cuda, "CUDA");
  return need_feature(c.cublas, "cuBLAS");
}
std::string check_nccl(const capabilities& c) {
  return need_feature(c.nccl, "NCCL");
}
std::string check_io_uring(const capabilities& c) {
  return need_feature(c.io_uring, "io_uring");
}
std::string check_mpi(const capabilities& c) {
  return need_feature(c.mpi, "MPI");
}
// The codes of unmet feature requirements: a backend left out of the build, else what is missing
// at run time (a GPU, ranks, kernel support).
reason_code missing_device(const feature& f) {
  return f.compiled_in ? reason_code::no_device : reason_code::not_built;
}
reason_code code_cuda(const capabilities& c) {
  return missing_device(c.cuda);
}
reason_code code_cublas(const capabilities& c) {
  return c.cuda.available ? reason_code::unsupported : missing_device(c.cuda);
}
reason_code code_nccl(const capabilities& c) {
  return missing_device(c.nccl);
}
reason_code code_io_uring(const capabilities& c) {
  return c.io_uring.compiled_in ? reason_code::unsupported : reason_code::not_built;
}
reason_code code_mpi(const capabilities& c) {
  return c.mpi.compiled_in ? reason_code::needs_ranks : reason_code::not_built;
}
reason_code code_needs_ranks(const capabilities&) {
  return reason_code::needs_ranks;
}

std::string check_multi_rank(const capabilities& c) {
  if (c.world_size >= 2) return {};
  return "needs at least 2 ranks (world size " + std::to_string(c.world_size) +
         "): launch with mpirun -np N";
}

}  // namespace

nlohmann::json capabilities::to_json() const {
  nlohmann::json j;
  j["isa"] = {
      {"sse4_2", isa.sse42},
      {"avx", isa.avx},
      {"avx2", isa.avx2},
      {"fma", isa.fma},
      {"avx512f", isa.avx512f},
      {"avx512bw", isa.avx512bw},
      {"avx512vl", isa.avx512vl},
      {"avx512dq", isa.avx512dq},
      {"avx512_vnni", isa.avx512_vnni},
      {"avx512_bf16", isa.avx512_bf16},
      {"avx512_fp16", isa.avx512_fp16},
      {"amx_tile", isa.amx_tile},
      {"amx_bf16", isa.amx_bf16},
      {"amx_int8", isa.amx_int8},
      {"os_saves_avx", isa.os_saves_avx},
      {"os_saves_avx512", isa.os_saves_avx512},
  };
  j["logical_cpus"] = logical_cpus;
  j["online_cpus"] = online_cpus;
  j["memory_available_bytes"] = memory_available_bytes;
  j["cuda"] = feature_json(cuda);
  j["cuda"]["device_count"] = cuda_device_count;
  j["cuda"]["driver_version"] =
      cuda_driver_version.empty() ? nlohmann::json() : nlohmann::json(cuda_driver_version);
  j["cublas"] = feature_json(cublas);
  j["nccl"] = feature_json(nccl);
  j["io_uring"] = feature_json(io_uring);
  j["mpi"] = feature_json(mpi);
  j["world_size"] = world_size;
  return j;
}

std::string cpu_binding_note(int usable, int online, bool launched) {
  if (usable >= online) return {};
  const std::string share = std::to_string(usable) + " of " + std::to_string(online) + " CPUs";
  if (!launched) {
    return "this process may use " + share +
           " (taskset or a cpuset): the node-wide CPU and memory benchmarks measure only these";
  }
  return "this rank is bound to " + share +
         " by the launcher (Open MPI binds ranks to a core or socket by default): the node "
         "leader's host-memory, preprocessing and host-to-GPU benchmarks use only these; launch "
         "with mpirun --bind-to none (Slurm: srun --cpu-bind=none) to measure the whole machine";
}

std::string node_gpus_reason(const node_gpu_view& v) {
  // One process limited to some GPUs on purpose (CUDA_VISIBLE_DEVICES=0 infrabench run) measures
  // those; several ranks of a host each shown their own are a launcher's per-task binding.
  if (v.ranks_on_host > 1 && !v.visible_env.empty() && v.nvml_count > v.cuda_visible) {
    return "CUDA_VISIBLE_DEVICES=" + v.visible_env + " shows this rank " +
           std::to_string(v.cuda_visible) + " of the host's " + std::to_string(v.nvml_count) +
           " GPUs (per-task GPU binding, e.g. srun --gpus-per-task): the node-wide multi-GPU "
           "benchmarks need every GPU visible; launch with them all visible (srun "
           "--gpu-bind=none, no per-task CUDA_VISIBLE_DEVICES): each rank still drives one GPU, "
           "by its rank on the host";
  }
  if (v.exclusive_process > 0 && v.ranks_on_host > 1) {
    return std::to_string(v.exclusive_process) +
           " GPU(s) of this host are in EXCLUSIVE_PROCESS compute mode: the node leader cannot "
           "open the GPUs the host's other ranks use; set the default mode for the run "
           "(nvidia-smi -c DEFAULT), or run the node-wide GPU benchmarks in a one-process run";
  }
  return {};
}

capabilities probe_capabilities(int world_size) {
  capabilities caps;
  caps.isa = probe_isa();
  caps.logical_cpus = probe_logical_cpus();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  caps.online_cpus = std::max(caps.logical_cpus, online > 0 ? static_cast<int>(online) : 1);
  caps.memory_available_bytes = probe_memory_available();

  guarded(caps.cuda, "CUDA", [&] { detail::probe_cuda(caps); });
  if (!caps.cuda.available) {
    caps.cuda_device_count = 0;
    if (caps.cublas.reason.empty()) caps.cublas.reason = caps.cuda.reason;
  }
  // NCCL needs a device, so it is probed after CUDA and reads caps.cuda.
  guarded(caps.nccl, "NCCL", [&] { detail::probe_nccl(caps); });
  guarded(caps.io_uring, "io_uring", [&] { detail::probe_io_uring(caps); });
  guarded(caps.mpi, "MPI", [&] { probe_mpi(caps, world_size); });
  caps.world_size = world_size;
  return caps;
}

// constinit: benchmarks copy these while registering during static initialisation of other
// translation units, so they must not depend on this file's dynamic initialisation order.
namespace req {
constinit const requirement avx2{"avx2", &check_avx2};
constinit const requirement avx512f{"avx512f", &check_avx512f};
constinit const requirement avx512bw{"avx512bw", &check_avx512bw};
constinit const requirement avx512_bf16{"avx512_bf16", &check_avx512_bf16};
constinit const requirement avx512_fp16{"avx512_fp16", &check_avx512_fp16};
constinit const requirement cuda{"cuda", &check_cuda, &code_cuda};
constinit const requirement cublas{"cublas", &check_cublas, &code_cublas};
constinit const requirement nccl{"nccl", &check_nccl, &code_nccl};
constinit const requirement io_uring{"io_uring", &check_io_uring, &code_io_uring};
constinit const requirement mpi{"mpi", &check_mpi, &code_mpi};
constinit const requirement multi_rank{"multi_rank", &check_multi_rank, &code_needs_ranks};
}  // namespace req

coded_reason requirement::unmet(const capabilities& caps) const {
  std::string why = check(caps);
  if (why.empty()) return {};
  return {code ? code(caps) : reason_code::unsupported, std::move(why)};
}

}  // namespace infrabench
