// The device inventory an operator checks first on a node, as DCGM's discovery and the clouds'
// node health checks read it: every GPU NVML lists (identity, settings, PCIe and NVLink), the
// network adapters (InfiniBand/RoCE ports from /sys/class/infiniband, interfaces from
// /sys/class/net), the NVMe drives, and which NUMA node and which NIC each GPU is nearest.
// Written into every report's host inventory ("devices"); baselines judge it with `expect`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace infrabench::devices {

struct ib_port {
  std::string device;  // mlx5_0
  int port = 0;
  std::string state;       // ACTIVE, DOWN, INIT, ...
  double rate_gbps = 0;    // "400 Gb/sec (4X NDR)" -> 400
  std::string link_layer;  // InfiniBand or Ethernet (RoCE)
  std::string node_guid;
  std::string pci_path;  // the adapter's real sysfs path, for affinity
  int numa_node = -1;
};

struct net_interface {
  std::string name, operstate, mac;
  double speed_mbps = -1;  // -1: the driver does not say (link down, virtual)
  int mtu = 0;
  std::string pci_path;
  int numa_node = -1;
};

struct nvme_drive {
  std::string name, model, serial, firmware;
  std::string pci_path;
  int numa_node = -1;
};

// Readers of a sysfs tree rooted at `root` ("/sys" on a node; a directory of files in tests).
[[nodiscard]] std::vector<ib_port> read_ib_ports(const std::string& root);
[[nodiscard]] std::vector<net_interface> read_net_interfaces(const std::string& root);
[[nodiscard]] std::vector<nvme_drive> read_nvme_drives(const std::string& root);
// The real sysfs path of a PCI device ("0000:17:00.0"), empty when sysfs does not list it.
[[nodiscard]] std::string pci_device_path(const std::string& root, const std::string& bus_id);
[[nodiscard]] int numa_node_of(const std::string& device_path);

// "400 Gb/sec (4X NDR)" -> 400; "4: ACTIVE" -> "ACTIVE".
[[nodiscard]] double parse_ib_rate_gbps(const std::string& text);
[[nodiscard]] std::string parse_ib_state(const std::string& text);
// Of `candidates` (real sysfs paths), the index of the one sharing the longest chain of PCI
// bridges with `device` (the same switch before the same root port); -1 when none shares one.
[[nodiscard]] int nearest_by_pci_path(const std::string& device,
                                      const std::vector<std::string>& candidates);

// The inventory of this host: {"gpus": [...], "gpu_source": "...", "ib_ports": [...],
// "net_interfaces": [...], "nvme": [...], "counts": {...}}. Read from /sys, under
// $INFRABENCH_SYSFS_ROOT when set (a fixture tree in tests, as telemetry reads it). Never throws.
[[nodiscard]] nlohmann::json collect();

// The figures a baseline's `expect` judges, from one host's "devices" section: gpus,
// nvlinks_per_gpu (the fewest active on any GPU), ib_ports_active, ib_rate_gbps (the slowest
// active port), nvme_drives, and for each GPU property whether every GPU has the same value.
[[nodiscard]] nlohmann::json counts_of(const nlohmann::json& devices);

}  // namespace infrabench::devices
