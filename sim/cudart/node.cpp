// Reads the node file (docs/simulation.md) once: the GPUs CUDA shows this process and the faults
// that apply to it. Also the sim query (sim/include/infrabench_sim.h) that the harness and the
// other shims call to learn about the simulation without parsing the file again.
#include "node.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace infrabench::sim {
namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "infrabench: error: simulated GPU node: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(2);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

int world_rank() {
  for (const char* name :
       {"INFRABENCH_SIM_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const int r = env_int(name, -1); r >= 0) return r;
  }
  return 0;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

// Whether fault `f` names this process (its selectors "rank" and "host"; "gpu" is the caller's).
bool fault_is_ours(const json& f, int rank, const std::string& host) {
  if (f.contains("rank") && f["rank"].get<int>() != rank) return false;
  if (f.contains("host") && f["host"].get<std::string>() != host) return false;
  return true;
}

const std::set<std::string>& known_fault_kinds() {
  static const std::set<std::string> kinds = {"missing",        "oom",       "gemm_wrong",
                                              "nccl_peer_dies", "nccl_hang", "launch_fails"};
  return kinds;
}

gpu parse_gpu(const json& g, int index) {
  gpu d;
  d.node_index = index;
  d.name = get_or<std::string>(g, "name", "Simulated GPU");
  d.uuid = get_or<std::string>(g, "uuid", "GPU-5151" + std::to_string(1000 + index));
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x10 + index);
  d.pci_bus_id = get_or<std::string>(g, "pci_bus_id", bus);
  const auto cc = get_or<std::string>(g, "compute_capability", "9.0");
  if (std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor) != 2) {
    refuse("gpus[" + std::to_string(index) + "].compute_capability '" + cc + "' is not M.m");
  }
  d.sm_count = get_or<int>(g, "sm_count", 132);
  d.gemm_tflops = get_or<double>(g, "gemm_tflops", 400.0);
  d.sm_clock_mhz = get_or<int>(g, "max_sm_clock_mhz", get_or<int>(g, "sm_clock_mhz", 1980));
  d.mem_clock_mhz = get_or<int>(g, "max_mem_clock_mhz", get_or<int>(g, "mem_clock_mhz", 2619));
  d.mem_bus_width_bits = get_or<int>(g, "mem_bus_width_bits", 5120);
  d.l2_cache_bytes = get_or<int>(g, "l2_cache_mib", 50) << 20;
  d.shared_mem_optin_bytes = get_or<int>(g, "shared_mem_per_block_optin_kib", 227) << 10;
  d.ecc_enabled = get_or<bool>(g, "ecc_enabled", true);
  d.memory_bytes = get_or<std::uint64_t>(g, "memory_total_mib", 81559) << 20;
  const auto mode = get_or<std::string>(g, "compute_mode", "default");
  if (mode == "default") {
    d.mode = compute_mode::normal;
  } else if (mode == "exclusive_process") {
    d.mode = compute_mode::exclusive_process;
  } else if (mode == "prohibited") {
    d.mode = compute_mode::prohibited;
  } else {
    refuse("gpus[" + std::to_string(index) + "].compute_mode '" + mode +
           "' is not default, exclusive_process or prohibited");
  }
  return d;
}

// Applies the faults that change what CUDA sees of GPU `d` (or drop it: false).
bool apply_faults(gpu& d, const json& faults, int rank, const std::string& host) {
  for (const auto& f : faults) {
    if (!fault_is_ours(f, rank, host)) continue;
    if (f.contains("gpu") && f["gpu"].get<int>() != d.node_index) continue;
    const auto kind = f["kind"].get<std::string>();
    if (kind == "missing") return false;
    if (kind == "oom") d.oom_after_bytes = get_or<std::uint64_t>(f, "after_bytes", 0);
    if (kind == "gemm_wrong") d.gemm_wrong = true;
  }
  return true;
}

// CUDA_VISIBLE_DEVICES: a comma-separated list of indices or GPU- uuids; the first entry that
// names no GPU ends the list, as the CUDA runtime does.
std::vector<gpu> visible(const std::vector<gpu>& all) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) return all;
  std::vector<gpu> out;
  std::stringstream in(env);
  std::string item;
  while (std::getline(in, item, ',')) {
    // An index counts the GPUs the driver sees (a missing one is not counted), as CUDA's does.
    const gpu* found = nullptr;
    const bool numeric = !item.empty() && item.size() < 6 &&
                         item.find_first_not_of("0123456789") == std::string::npos;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const bool by_index = numeric && std::stoul(item) == i;
      const bool by_uuid = item.rfind("GPU-", 0) == 0 && all[i].uuid.rfind(item, 0) == 0;
      if (by_index || by_uuid) found = &all[i];
    }
    if (found == nullptr) break;
    out.push_back(*found);
  }
  return out;
}

std::vector<std::vector<bool>> parse_p2p(const json& j, const std::vector<gpu>& gpus) {
  const std::size_t n = gpus.size();
  const json p = j.contains("p2p") ? j["p2p"] : json("all");
  std::vector<std::vector<bool>> out(n, std::vector<bool>(n, p.is_string() && p == "all"));
  if (p.is_array()) {
    for (const auto& pair : p) {
      for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t b = 0; b < n; ++b) {
          if (gpus[a].node_index == pair.at(0).get<int>() &&
              gpus[b].node_index == pair.at(1).get<int>()) {
            out[a][b] = true;
          }
        }
      }
    }
  }
  for (std::size_t a = 0; a < n; ++a) out[a][a] = false;
  return out;
}

// The simulated NCCL's faults (sim/nccl, which reads them through infrabench_sim_fault): their
// keys checked here, so that a typo is refused at start rather than a fault that never happens.
void check_nccl_fault(const json& f) {
  const std::string kind = f["kind"].get<std::string>();
  if (kind == "nccl_peer_dies") {
    const json when = f.contains("when") ? f["when"] : json("before_init");
    if (when != "before_init" && when != "after_init") {
      refuse("fault " + f.dump() + ": \"when\" is not before_init or after_init");
    }
  }
  if (f.contains("after_calls") &&
      (!f["after_calls"].is_number_integer() || f["after_calls"].get<long long>() < 0)) {
    refuse("fault " + f.dump() + ": \"after_calls\" is not a count");
  }
  if (f.contains("op") && !f["op"].is_string())
    refuse("fault " + f.dump() + ": \"op\" is not a name");
}

void check_faults(const json& faults) {
  if (!faults.is_array()) refuse("\"faults\" is not an array");
  for (const auto& f : faults) {
    if (!f.is_object() || !f.contains("kind") || !f["kind"].is_string() ||
        !known_fault_kinds().contains(f["kind"].get<std::string>())) {
      refuse("unknown fault " + f.dump() + " (docs/simulation.md lists the kinds)");
    }
    check_nccl_fault(f);
  }
}

// "nccl_version" (what the simulated NCCL's ncclGetVersion answers): "M.m.p" or a version code.
void check_nccl_version(const json& j) {
  if (!j.contains("nccl_version")) return;
  const json& v = j["nccl_version"];
  int major = 0, minor = 0;
  const bool ok =
      v.is_number_unsigned() ||
      (v.is_string() && std::sscanf(v.get<std::string>().c_str(), "%d.%d", &major, &minor) == 2);
  if (!ok) refuse("\"nccl_version\" " + v.dump() + " is not a version like \"2.18.5\"");
}

node load(const char* path) {
  node n;
  n.path = path;
  std::ifstream in(path);
  if (!in) refuse(std::string("cannot read node file ") + path);
  json j;
  try {
    j = json::parse(in);
    n.rank = world_rank();
    n.host = host_name();
    n.driver_version = get_or<int>(j, "cuda_driver_version", 13000);
    n.kernel_us = get_or<double>(j, "kernel_us", 5.0);
    const json faults = j.contains("faults") ? j["faults"] : json::array();
    check_faults(faults);
    check_nccl_version(j);
    n.faults_json = faults.dump();
    std::vector<gpu> all;
    const json gpus = j.contains("gpus") ? j["gpus"] : json::array();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      gpu d = parse_gpu(gpus[i], static_cast<int>(i));
      if (apply_faults(d, faults, n.rank, n.host)) all.push_back(std::move(d));
    }
    n.gpus = visible(all);
    n.p2p = parse_p2p(j, n.gpus);
  } catch (const json::exception& e) {
    refuse(std::string(path) + ": " + e.what());
  }
  return n;
}

}  // namespace

const node& the_node() {
  static const node n = [] {
    const char* path = std::getenv("INFRABENCH_SIM_NODE");
    if (path == nullptr || *path == '\0') {
      refuse("the simulated CUDA runtime was loaded without INFRABENCH_SIM_NODE");
    }
    return load(path);
  }();
  return n;
}

}  // namespace infrabench::sim

// ---- the sim query (sim/include/infrabench_sim.h)
extern "C" {

__attribute__((visibility("default"))) const char* infrabench_sim_node(void) {
  return infrabench::sim::the_node().path.c_str();
}

__attribute__((visibility("default"))) int infrabench_sim_rank(void) {
  return infrabench::sim::the_node().rank;
}

__attribute__((visibility("default"))) int infrabench_sim_fault(const char* kind, int gpu, int rank,
                                                                char* out, std::size_t n) {
  using nlohmann::json;
  const auto& node = infrabench::sim::the_node();
  const json faults = json::parse(node.faults_json);
  for (const auto& f : faults) {
    if (f["kind"] != kind) continue;
    if (f.contains("host") && f["host"].get<std::string>() != node.host) continue;
    if (rank >= 0 && f.contains("rank") && f["rank"].get<int>() != rank) continue;
    if (gpu >= 0 && f.contains("gpu") && f["gpu"].get<int>() != gpu) continue;
    if (out != nullptr && n > 0) {
      const std::string text = f.dump();
      std::snprintf(out, n, "%s", text.c_str());
    }
    return 1;
  }
  return 0;
}

}  // extern "C"
