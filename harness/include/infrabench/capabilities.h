// What was compiled in and what this machine has: probed once, in one place, after argument
// parsing (and after MPI init). Benchmarks state requirements against it; the runner skips a
// benchmark whose requirements are unmet with the reason recorded here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "infrabench/reason.h"

namespace infrabench {

struct feature {
  bool available = false;
  std::string reason;       // why not, when !available ("not compiled in", the OS/driver error)
  std::string version;      // library/runtime version when known
  bool compiled_in = true;  // false: the build left it out (reason_code::not_built)
};

struct cpu_isa {
  bool sse42 = false, avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool os_saves_avx = false, os_saves_avx512 = false;  // XCR0: the OS saves the wide registers
};

struct capabilities {
  cpu_isa isa;
  int logical_cpus = 1;                     // CPUs this process may run on (sched_getaffinity)
  int online_cpus = 1;                      // CPUs the machine has online (sysconf)
  std::int64_t memory_available_bytes = 0;  // MemAvailable from /proc/meminfo

  feature cuda;  // available = at least one device; version = runtime version
  int cuda_device_count = 0;
  // The GPU this rank runs its one-GPU work on (GEMMs, the training step): one rank per GPU by
  // its rank on the host (gpu_for_local_rank), made current when the run starts; -1 without CUDA.
  int rank_gpu = -1;
  std::string cuda_driver_version;
  int exclusive_process_gpus =
      0;  // GPUs in EXCLUSIVE_PROCESS compute mode (cudaDevAttrComputeMode)
  // Why the node leader cannot reach every GPU of its host (node_gpus_reason), "" when it can: the
  // node-wide multi-GPU benchmarks skip with it. Set once the ranks per host are known.
  std::string node_gpus_reason;
  feature cublas;
  feature nccl;
  feature io_uring;  // available = rings can be set up and the read opcodes are supported
  feature mpi;       // available = built with MPI and launched under a launcher
  int world_size = 1;

  [[nodiscard]] nlohmann::json to_json() const;
};

// The GPU a rank drives: one per rank by its rank on the host, wrapping when there are more ranks
// than devices (several ranks then share a GPU). -1 without a device.
[[nodiscard]] inline int gpu_for_local_rank(int local_rank, int device_count) {
  return device_count <= 0 || local_rank < 0 ? -1 : local_rank % device_count;
}

// Why this process may use fewer CPUs than the machine has online, and what to do, or "" when it
// may use them all. `launched`: started by mpirun/srun, whose default binding (Open MPI binds
// ranks to a core or socket) confines the node leader's host-memory, preprocessing and
// host-to-GPU benchmarks to its share (issue 38).
[[nodiscard]] std::string cpu_binding_note(int usable, int online, bool launched);

// What decides whether one process of a host can open every GPU of it (issue 38).
struct node_gpu_view {
  int cuda_visible = 0;       // GPUs CUDA shows this process (cudaGetDeviceCount)
  int nvml_count = -1;        // GPUs the host has (NVML; -1: unknown)
  std::string visible_env;    // CUDA_VISIBLE_DEVICES ("" when unset)
  int exclusive_process = 0;  // GPUs in EXCLUSIVE_PROCESS compute mode
  int ranks_on_host = 1;
};
// Why not, with what to do, or "": per-task CUDA_VISIBLE_DEVICES (srun --gpus-per-task) shows a
// rank fewer GPUs than the host has, so the node leader's p2p, many-to-one, PCIe load and stress
// see only its own; in EXCLUSIVE_PROCESS mode the GPUs the other ranks of the host use cannot be
// opened by the leader.
[[nodiscard]] std::string node_gpus_reason(const node_gpu_view& v);

// Runs every probe. Cheap (milliseconds); call once and pass the result around.
[[nodiscard]] capabilities probe_capabilities(int world_size);

// A named requirement: returns an empty string when met, else the reason it is not. `code` gives
// the reason's code (reason.h) when unmet; without one it is reason_code::unsupported.
// The name is a view, not a std::string: the req:: objects are constinit, and clang (the
// sanitizer builds' compiler) cannot constant-initialise libstdc++ 12's std::string. So a name
// must outlive every requirement made with it: a string literal, or a string made once for the
// program (backend_loader.cpp's placeholder names).
struct requirement {
  std::string_view name;
  std::string (*check)(const capabilities&);
  reason_code (*code)(const capabilities&) = nullptr;
  [[nodiscard]] coded_reason unmet(const capabilities& caps) const;
};

namespace req {
extern const requirement avx2;
extern const requirement avx512f;
extern const requirement avx512bw;
extern const requirement avx512_bf16;
extern const requirement avx512_fp16;
extern const requirement cuda;
// cuBLAS opened (a CUDA build opens it only where a GPU is usable: harness/src/cublas_loader.cpp).
extern const requirement cublas;
extern const requirement nccl;
extern const requirement io_uring;
extern const requirement mpi;
extern const requirement multi_rank;  // at least two ranks in the world
}  // namespace req

}  // namespace infrabench
