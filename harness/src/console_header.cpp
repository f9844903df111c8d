#include "infrabench/console_header.h"

#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "infrabench/simulation.h"
#include "infrabench/text_layout.h"

namespace infrabench {
namespace {

using nlohmann::json;

// A value of the inventory, or `fallback` where it is missing or null (an unreadable sysfs file).
template <typename T>
T value_at(const json& j, const json::json_pointer& p, T fallback) {
  if (!j.contains(p) || j.at(p).is_null()) return fallback;
  try {
    return j.at(p).get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

std::string plural(long long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Decimal units, as everywhere in infrabench: "25.3 GB".
std::string gigabytes(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

// "8 x NVIDIA H100 80GB HBM3" (or each name with its count, for a mixed node).
std::string gpu_list(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& n : names) {
    if (!counts.empty() && counts.back().first == n)
      ++counts.back().second;
    else
      counts.emplace_back(n, 1);
  }
  std::string out;
  for (const auto& [n, c] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(c) + " x " + n;
  return out;
}

std::string gpus_line(const console_header_facts& f) {
  if (f.gpu_names.empty())
    return "none: " + (f.no_gpu_reason.empty() ? std::string("no CUDA device") : f.no_gpu_reason);
  std::string line = gpu_list(f.gpu_names);
  if (f.gpu_memory_bytes > 0) line += " (" + gigabytes(f.gpu_memory_bytes) + " each)";
  if (!f.nvidia_driver.empty()) line += ", driver " + f.nvidia_driver;
  return line;
}

std::string versions_line(const console_header_facts& f) {
  std::string cuda = !f.cuda_built
                         ? "CUDA not built in"
                         : "CUDA runtime " + (f.cuda_runtime.empty() ? "?" : f.cuda_runtime) +
                               ", driver " + (f.cuda_driver.empty() ? "none" : f.cuda_driver);
  std::string nccl =
      !f.nccl_built ? "NCCL not built in" : "NCCL " + (f.nccl.empty() ? std::string("?") : f.nccl);
  return cuda + "; " + nccl;
}

std::string world_line(const console_header_facts& f) {
  std::string line = plural(f.ranks, "rank", "ranks") + " on " + plural(f.hosts, "host", "hosts");
  if (f.launcher != "mpi") line += " (not launched by mpirun or srun)";
  if (!f.mpi.empty()) line += ", " + f.mpi;
  return line;
}

}  // namespace

console_header_facts header_facts(const json& inv, const capabilities& caps, int ranks,
                                  const std::vector<std::string>& hostnames,
                                  const std::string& launcher) {
  console_header_facts f;
  using ptr = json::json_pointer;
  f.version = value_at<std::string>(inv, ptr("/build/version"), "");
  f.commit = value_at<std::string>(inv, ptr("/build/git_commit"), "");
  f.host = value_at<std::string>(inv, ptr("/hostname"), "");
  f.cpu_model = value_at<std::string>(inv, ptr("/cpu/model"), "unknown CPU");
  f.sockets = value_at<int>(inv, ptr("/cpu/sockets"), 0);
  f.cores = value_at<int>(inv, ptr("/cpu/cores"), 0);
  f.threads = value_at<int>(inv, ptr("/cpu/threads"), 0);
  f.usable_cpus = caps.logical_cpus;
  f.online_cpus = caps.online_cpus;
  f.memory_total_bytes = value_at<std::int64_t>(inv, ptr("/memory/total_bytes"), 0);
  f.memory_available_bytes = caps.memory_available_bytes;
  f.numa_nodes =
      inv.contains("numa") && inv["numa"].is_array() ? static_cast<int>(inv["numa"].size()) : 0;
  if (inv.contains("gpus") && inv["gpus"].is_array()) {
    for (const auto& g : inv["gpus"]) f.gpu_names.push_back(g.value("name", std::string("GPU")));
    if (!inv["gpus"].empty())
      f.gpu_memory_bytes = value_at<std::int64_t>(inv["gpus"][0], ptr("/memory_bytes"), 0);
  }
  f.nvidia_driver = value_at<std::string>(inv, ptr("/devices/driver_version"), "");
  f.no_gpu_reason = caps.cuda.available ? "" : caps.cuda.reason;
  f.cuda_built = caps.cuda.compiled_in;
  f.nccl_built = caps.nccl.compiled_in;
  f.cuda_runtime = caps.cuda.version;
  f.cuda_driver = caps.cuda_driver_version;
  f.nccl = caps.nccl.version;
  f.mpi = caps.mpi.version;
  f.ranks = ranks;
  f.hosts = static_cast<int>(std::set<std::string>(hostnames.begin(), hostnames.end()).size());
  f.launcher = launcher;
  f.simulated_node = simulation::node_file();
  return f;
}

std::vector<std::string> format_header(const console_header_facts& f, std::size_t width) {
  std::string first = "infrabench " + f.version;
  if (!f.commit.empty()) first += " (" + f.commit.substr(0, 8) + ")";
  first += " on " + (f.host.empty() ? std::string("this host") : f.host);
  std::string cpu =
      f.cpu_model + ": " + plural(f.sockets, "socket", "sockets") + ", " +
      plural(f.cores, "core", "cores") + ", " + plural(f.threads, "thread", "threads") + " (" +
      std::to_string(f.usable_cpus) +
      (f.online_cpus > f.usable_cpus ? " of " + std::to_string(f.online_cpus) +
                                           " usable: bound; mpirun --bind-to none for all)"
                                     : " usable by this run)");
  std::string memory = gigabytes(f.memory_total_bytes) + ", " +
                       gigabytes(f.memory_available_bytes) + " available, " +
                       plural(f.numa_nodes, "NUMA node", "NUMA nodes");
  std::vector<std::string> lines{first,
                                 "  cpu      " + cpu,
                                 "  memory   " + memory,
                                 "  gpus     " + gpus_line(f),
                                 "  libs     " + versions_line(f),
                                 "  world    " + world_line(f)};
  if (!f.simulated_node.empty()) {
    // First, so that no one reads the numbers below as a GPU's (docs/simulation.md).
    lines.insert(lines.begin(), "SIMULATED GPU node (" + f.simulated_node +
                                    "): no number below is a measurement of GPU hardware");
  }
  for (auto& l : lines) l = clip(l, width);
  return lines;
}

}  // namespace infrabench
