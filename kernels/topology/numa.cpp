#include "topology/numa.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] std::optional<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

[[nodiscard]] bool parse_int(std::string_view s, int& out) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out >= 0;
}

// "MemTotal" from a node's meminfo ("Node 0 MemTotal:       24563472 kB").
[[nodiscard]] bool meminfo_has_memory(const std::string& text) {
  const auto pos = text.find("MemTotal:");
  if (pos == std::string::npos) return false;
  std::istringstream in(text.substr(pos + 9));
  long long kb = 0;
  in >> kb;
  return kb > 0;
}

}  // namespace

std::optional<std::vector<int>> parse_id_list(std::string_view text) {
  std::vector<int> out;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  if (text.empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view part = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t dash = part.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_int(part, lo)) return std::nullopt;
      hi = lo;
    } else if (!parse_int(part.substr(0, dash), lo) || !parse_int(part.substr(dash + 1), hi) ||
               hi < lo) {
      return std::nullopt;
    }
    if (hi - lo > (1 << 20)) return std::nullopt;
    for (int i = lo; i <= hi; ++i) out.push_back(i);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<numa_node> read_numa_nodes(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<numa_node> nodes;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return nodes;

  std::vector<int> ids;
  if (auto online = read_file(fs::path(root) / "online")) {
    if (auto parsed = parse_id_list(*online)) ids = *parsed;
  }
  if (ids.empty()) {
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      int id = 0;
      if (name.starts_with("node") && parse_int(std::string_view(name).substr(4), id)) {
        ids.push_back(id);
      }
    }
    std::sort(ids.begin(), ids.end());
  }
  std::optional<std::vector<int>> with_memory;
  if (auto text = read_file(fs::path(root) / "has_memory")) with_memory = parse_id_list(*text);

  for (int id : ids) {
    numa_node n;
    n.id = id;
    const fs::path dir = fs::path(root) / ("node" + std::to_string(id));
    if (auto text = read_file(dir / "cpulist")) {
      if (auto cpus = parse_id_list(*text)) n.cpus = *cpus;
    }
    if (with_memory) {
      n.has_memory = std::find(with_memory->begin(), with_memory->end(), id) != with_memory->end();
    } else if (auto text = read_file(dir / "meminfo")) {
      n.has_memory = meminfo_has_memory(*text);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::vector<int> online_numa_node_ids(const std::string& root) {
  std::vector<int> ids;
  try {
    for (const auto& n : read_numa_nodes(root)) ids.push_back(n.id);
  } catch (...) {
    ids.clear();
  }
  if (ids.empty()) ids.push_back(0);
  return ids;
}

numa_row_plan plan_numa_row(const std::vector<numa_node>& nodes, long long cpu_node,
                            long long mem_filter) {
  numa_row_plan plan;
  std::string ids;
  for (const auto& n : nodes) ids += (ids.empty() ? "" : ",") + std::to_string(n.id);
  const auto describe_missing = [&](long long id) {
    return "NUMA node " + std::to_string(id) + " does not exist: this machine has " +
           std::to_string(nodes.size()) + (nodes.size() == 1 ? " node (" : " nodes (") + ids + ")";
  };
  const auto row = std::find_if(nodes.begin(), nodes.end(),
                                [&](const numa_node& n) { return n.id == cpu_node; });
  if (row == nodes.end()) {
    plan.skip = describe_missing(cpu_node);
    return plan;
  }
  if (row->cpus.empty()) {
    plan.skip = "NUMA node " + std::to_string(cpu_node) +
                " has no CPUs (a memory-only node): it is a column, not a row";
    return plan;
  }
  plan.cpus = row->cpus;
  for (const auto& n : nodes) {
    if (mem_filter != -1 && n.id != mem_filter) continue;
    numa_row_plan::column c;
    c.node = n.id;
    if (!n.has_memory) c.na_reason = "NUMA node " + std::to_string(n.id) + " has no memory";
    plan.columns.push_back(std::move(c));
  }
  if (plan.columns.empty()) plan.skip = describe_missing(mem_filter);
  return plan;
}

}  // namespace infrabench::kernels::topology
