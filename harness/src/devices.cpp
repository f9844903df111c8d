#include "infrabench/devices.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "infrabench/nvml_loader.h"
#include "infrabench/telemetry.h"

namespace infrabench::devices {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The first line of a sysfs file, trimmed; empty when it is missing (absence is normal: files
// vary by kernel and driver).
std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  const auto b = line.find_first_not_of(" \t\r");
  const auto e = line.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : line.substr(b, e - b + 1);
}

// Directory entries sorted by name (sysfs order is not stable across boots).
std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string real_path(const fs::path& p) {
  std::error_code ec;
  const fs::path r = fs::canonical(p, ec);
  return ec ? "" : r.string();
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

json or_null(double v) {
  return std::isnan(v) ? json(nullptr) : json(v);
}
json or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}
json tri_state(int v) {
  return v < 0 ? json(nullptr) : json(v == 1);
}

// /sys, under $INFRABENCH_SYSFS_ROOT when the tests give a fixture tree (as telemetry reads it).
std::string sysfs_root() {
  return telemetry::under_root(telemetry::sysfs_root(), "/sys");
}

json gpu_entry(const nvml::library& lib, unsigned i, const std::string& root) {
  const nvml::gpu_identity id = lib.identity(i);
  const nvml::counter_set c = lib.counters(i);
  const auto counter = [&](const char* k) { return c.count(k) ? json(c.at(k)) : json(nullptr); };
  const nvml::library::nvlink_state links = lib.nvlinks(i);
  const std::string path = id.pci_bus_id.empty() ? "" : pci_device_path(root, id.pci_bus_id);
  return {{"index", i},
          {"name", id.name},
          {"uuid", or_null(id.uuid)},
          {"serial", or_null(id.serial)},
          {"vbios", or_null(id.vbios)},
          {"pci_bus_id", or_null(id.pci_bus_id)},
          {"numa_node", path.empty() ? json(nullptr) : json(numa_node_of(path))},
          {"memory_total_mib", or_null(id.memory_total_mib)},
          {"power_limit_w", or_null(id.power_limit_w)},
          {"default_power_limit_w", or_null(id.default_power_limit_w)},
          {"applications_sm_clock_mhz", or_null(id.app_sm_clock_mhz)},
          {"applications_mem_clock_mhz", or_null(id.app_mem_clock_mhz)},
          {"max_sm_clock_mhz", or_null(id.max_sm_clock_mhz)},
          {"max_mem_clock_mhz", or_null(id.max_mem_clock_mhz)},
          {"persistence_mode", tri_state(id.persistence_mode)},
          {"ecc_enabled", tri_state(id.ecc_enabled)},
          {"mig_enabled", tri_state(id.mig_enabled)},
          {"pcie",
           {{"gen_max", counter("pcie_gen_max")},
            {"width_max", counter("pcie_width_max")},
            {"gen_current", counter("pcie_gen_current")},
            {"width_current", counter("pcie_width_current")}}},
          {"nvlinks", {{"present", links.present}, {"active", links.active}, {"down", links.down}}},
          {"pci_path", or_null(path)}};
}

json port_json(const ib_port& p) {
  return {{"device", p.device},         {"port", p.port},
          {"state", p.state},           {"rate_gbps", p.rate_gbps},
          {"link_layer", p.link_layer}, {"node_guid", or_null(p.node_guid)},
          {"numa_node", p.numa_node}};
}

// Each GPU's nearest adapter (by PCI bridges shared; "" when none shares one).
void add_affinity(json& gpus, const std::vector<ib_port>& ports) {
  std::vector<std::string> paths, names;
  for (const auto& p : ports) {
    if (p.pci_path.empty() || std::count(names.begin(), names.end(), p.device)) continue;
    paths.push_back(p.pci_path);
    names.push_back(p.device);
  }
  for (auto& g : gpus) {
    const std::string path = g["pci_path"].is_string() ? g["pci_path"].get<std::string>() : "";
    const int k = path.empty() ? -1 : nearest_by_pci_path(path, paths);
    g["nearest_ib_device"] = k < 0 ? json(nullptr) : json(names[static_cast<std::size_t>(k)]);
  }
}

json collect_gpus(const std::string& root, json& out) {
  const nvml::library& lib = nvml::library::instance();
  json gpus = json::array();
  if (!lib.available()) {
    out["gpu_source"] = "none: " + lib.reason();
    return gpus;
  }
  out["gpu_source"] = "nvml";
  out["driver_version"] = or_null(lib.driver_version());
  out["cuda_driver_version"] = or_null(lib.cuda_driver_version());
  for (unsigned i = 0; i < lib.device_count(); ++i) gpus.push_back(gpu_entry(lib, i, root));
  return gpus;
}

}  // namespace

double parse_ib_rate_gbps(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() ? 0.0 : v;
}

std::string parse_ib_state(const std::string& text) {
  const auto colon = text.find(':');
  std::string s = colon == std::string::npos ? text : text.substr(colon + 1);
  s.erase(0, s.find_first_not_of(' '));
  return s;
}

int numa_node_of(const std::string& device_path) {
  const std::string text = first_line(fs::path(device_path) / "numa_node");
  if (text.empty()) return -1;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  return end == text.c_str() ? -1 : static_cast<int>(v);
}

std::string pci_device_path(const std::string& root, const std::string& bus_id) {
  return real_path(fs::path(root) / "bus" / "pci" / "devices" / bus_id);
}

int nearest_by_pci_path(const std::string& device, const std::vector<std::string>& candidates) {
  const auto mine = components(device);
  // Components up to and including "devices" are the same for every PCI device; a shared root
  // complex (pci0000:00) or bridge beyond it is what makes two devices near.
  const auto devices_at = std::find(mine.begin(), mine.end(), "devices");
  const std::size_t floor =
      devices_at == mine.end() ? 0 : static_cast<std::size_t>(devices_at - mine.begin()) + 1;
  int best = -1;
  std::size_t best_shared = floor;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const auto theirs = components(candidates[k]);
    std::size_t shared = 0;
    while (shared < mine.size() && shared < theirs.size() && mine[shared] == theirs[shared])
      ++shared;
    if (shared > best_shared) {
      best_shared = shared;
      best = static_cast<int>(k);
    }
  }
  return best;
}

std::vector<ib_port> read_ib_ports(const std::string& root) {
  std::vector<ib_port> out;
  for (const auto& dev : entries(fs::path(root) / "class" / "infiniband")) {
    const std::string pci = real_path(dev / "device");
    for (const auto& port_dir : entries(dev / "ports")) {
      ib_port p;
      p.device = dev.filename().string();
      p.port = std::atoi(port_dir.filename().c_str());
      p.state = parse_ib_state(first_line(port_dir / "state"));
      p.rate_gbps = parse_ib_rate_gbps(first_line(port_dir / "rate"));
      p.link_layer = first_line(port_dir / "link_layer");
      p.node_guid = first_line(dev / "node_guid");
      p.pci_path = pci;
      p.numa_node = pci.empty() ? -1 : numa_node_of(pci);
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<net_interface> read_net_interfaces(const std::string& root) {
  std::vector<net_interface> out;
  for (const auto& dir : entries(fs::path(root) / "class" / "net")) {
    // Only adapters: loopback, bridges, veths and tunnels have no device behind them.
    const std::string pci = real_path(dir / "device");
    if (pci.empty()) continue;
    net_interface n;
    n.name = dir.filename().string();
    n.operstate = first_line(dir / "operstate");
    n.mac = first_line(dir / "address");
    const std::string speed = first_line(dir / "speed");  // EINVAL (empty) when the link is down
    n.speed_mbps = speed.empty() ? -1 : std::atof(speed.c_str());
    if (n.speed_mbps < 0) n.speed_mbps = -1;
    n.mtu = std::atoi(first_line(dir / "mtu").c_str());
    n.pci_path = pci;
    n.numa_node = numa_node_of(pci);
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<nvme_drive> read_nvme_drives(const std::string& root) {
  std::vector<nvme_drive> out;
  for (const auto& dir : entries(fs::path(root) / "class" / "nvme")) {
    nvme_drive d;
    d.name = dir.filename().string();
    d.model = first_line(dir / "model");
    d.serial = first_line(dir / "serial");
    d.firmware = first_line(dir / "firmware_rev");
    d.pci_path = real_path(dir / "device");
    d.numa_node = d.pci_path.empty() ? -1 : numa_node_of(d.pci_path);
    out.push_back(std::move(d));
  }
  return out;
}

json collect() {
  json out = json::object();
  try {
    const std::string root = sysfs_root();
    const std::vector<ib_port> ports = read_ib_ports(root);
    json gpus = collect_gpus(root, out);
    add_affinity(gpus, ports);
    json ports_json = json::array();
    for (const auto& p : ports) ports_json.push_back(port_json(p));
    json nets = json::array();
    for (const auto& n : read_net_interfaces(root)) {
      nets.push_back({{"name", n.name},
                      {"operstate", n.operstate},
                      {"mac", or_null(n.mac)},
                      {"speed_mbps", n.speed_mbps < 0 ? json(nullptr) : json(n.speed_mbps)},
                      {"mtu", n.mtu},
                      {"numa_node", n.numa_node}});
    }
    json drives = json::array();
    for (const auto& d : read_nvme_drives(root)) {
      drives.push_back({{"name", d.name},
                        {"model", or_null(d.model)},
                        {"serial", or_null(d.serial)},
                        {"firmware", or_null(d.firmware)},
                        {"numa_node", d.numa_node}});
    }
    for (auto& g : gpus) g.erase("pci_path");  // a machine-local path: affinity says what matters
    out["gpus"] = std::move(gpus);
    out["ib_ports"] = std::move(ports_json);
    out["net_interfaces"] = std::move(nets);
    out["nvme"] = std::move(drives);
    out["counts"] = counts_of(out);
  } catch (const std::exception& e) {
    out["error"] = e.what();
  }
  return out;
}

}  // namespace infrabench::devices
