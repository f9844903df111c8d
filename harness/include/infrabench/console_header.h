// The first lines `run` prints (rank 0, table format): which machine this is, what it has, and
// what the run spans, in at most six lines of at most 120 columns. Everything comes from what the
// run already collected (the inventory, the capabilities probe, the communicator): nothing is
// probed again for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "infrabench/capabilities.h"

namespace infrabench {

struct console_header_facts {
  std::string version, commit;  // "0.1.0", "cabde0cad..." (shown to 8 characters)
  std::string host;
  std::string cpu_model;
  int sockets = 0, cores = 0, threads = 0, usable_cpus = 0;
  int online_cpus = 0;  // the machine's (0: unknown); fewer usable: bound (cpu_binding_note)
  std::int64_t memory_total_bytes = 0, memory_available_bytes = 0;
  int numa_nodes = 0;
  std::vector<std::string> gpu_names;  // one per GPU, as CUDA names it
  std::int64_t gpu_memory_bytes = 0;   // the first GPU's
  std::string nvidia_driver;           // "550.54.15" (NVML), "" when unknown
  std::string no_gpu_reason;           // why there is none (the probe's reason), "" with GPUs
  std::string cuda_runtime, cuda_driver, nccl, mpi;  // versions, "" when not there
  bool cuda_built = true, nccl_built = true;
  int ranks = 1, hosts = 1;
  std::string launcher = "single";  // the communicator's backend: "single" or "mpi"
  std::string simulated_node;       // the node file of a simulated GPU node, "" on hardware
};

// The facts from the inventory (collect_system_inventory), the capabilities, and the world.
[[nodiscard]] console_header_facts header_facts(const nlohmann::json& inventory,
                                                const capabilities& caps, int ranks,
                                                const std::vector<std::string>& hostnames,
                                                const std::string& launcher);

// The header's lines: at most six (seven on a simulated node), each at most `width` columns.
[[nodiscard]] std::vector<std::string> format_header(const console_header_facts& f,
                                                     std::size_t width);

}  // namespace infrabench
