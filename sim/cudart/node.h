// The simulated node, as the cudart shim sees it: the GPUs of this host from the node file
// ($INFRABENCH_SIM_NODE, docs/simulation.md), after faults that remove GPUs and after
// CUDA_VISIBLE_DEVICES, and the faults that apply to this process. Parsed once, on first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace infrabench::sim {

enum class compute_mode { normal, exclusive_process, prohibited };

struct gpu {
  int node_index = 0;  // index in the file's "gpus" (what faults and NVML name)
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // "00000000:17:00.0"
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  double gemm_tflops = 400;  // what a GEMM that is not computed is taken to run at
  int sm_clock_mhz = 1980;
  int mem_clock_mhz = 2619;
  int mem_bus_width_bits = 5120;
  int l2_cache_bytes = 50 << 20;
  int shared_mem_optin_bytes = 227 << 10;
  bool ecc_enabled = true;
  std::uint64_t memory_bytes = 0;
  compute_mode mode = compute_mode::normal;
  // The fault "oom": allocations fail once this many bytes are live (UINT64_MAX: the capacity).
  std::uint64_t oom_after_bytes = UINT64_MAX;
  bool gemm_wrong = false;  // fault "gemm_wrong"
};

struct node {
  std::string path;
  int driver_version = 13000;
  // Device time a kernel that does not compute is taken to use ("kernel_us" in the file): events
  // bracket it as they would a real launch, so timing code calibrates on plausible times.
  double kernel_us = 5;
  std::vector<gpu> gpus;  // as CUDA numbers them in this process
  // p2p[i][j]: whether CUDA device i can access device j (CUDA numbering).
  std::vector<std::vector<bool>> p2p;
  std::string faults_json;  // the file's "faults" array, as text, for infrabench_sim_fault
  int rank = 0;
  std::string host;
};

// The node; exits the process with status 2 and one line on stderr when the file is unreadable or
// malformed (the user asked for a simulation that cannot be made: nothing may run instead).
const node& the_node();

}  // namespace infrabench::sim
