// The device inventory: sysfs readers over a fake tree (adapters, ports, drives, PCI paths and
// NUMA nodes, as a node's /sys lays them out), PCI affinity, and the counts baselines judge.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "infrabench/devices.h"

namespace fs = std::filesystem;
using infrabench::devices::counts_of;
using infrabench::devices::nearest_by_pci_path;
using nlohmann::json;

namespace {

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

// A sysfs tree: two root complexes; GPU 0000:17 and mlx5_0 behind one switch, GPU 0000:9a and
// mlx5_1 behind another on NUMA node 1; one NVMe drive; eth0 (an adapter) and lo (virtual).
class fake_sysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("ib_sysfs_" + std::to_string(::getpid()));
    fs::remove_all(root);
    const fs::path dev = root / "devices";
    const auto pci = [&](const std::string& rel, int numa) {
      put(dev / rel / "numa_node", std::to_string(numa));
      const fs::path link = root / "bus/pci/devices" / fs::path(rel).filename();
      fs::create_directories(link.parent_path());
      fs::create_directory_symlink(dev / rel, link);
      return dev / rel;
    };
    pci("pci0000:00/0000:00:01.0/0000:16:00.0/0000:17:00.0", 0);
    const fs::path nic0 = pci("pci0000:00/0000:00:01.0/0000:16:00.0/0000:18:00.0", 0);
    pci("pci0000:80/0000:80:01.0/0000:99:00.0/0000:9a:00.0", 1);
    const fs::path nic1 = pci("pci0000:80/0000:80:01.0/0000:99:00.0/0000:9b:00.0", 1);
    const fs::path nvme = pci("pci0000:00/0000:00:02.0/0000:20:00.0", 0);
    const fs::path eth = pci("pci0000:00/0000:00:03.0/0000:30:00.0", 0);
    const auto ib = [&](const std::string& name, const fs::path& device, const std::string& state,
                        const std::string& rate) {
      const fs::path d = root / "class/infiniband" / name;
      fs::create_directories(d);
      fs::create_directory_symlink(device, d / "device");
      put(d / "node_guid", "b8ce:f603:00aa:0001");
      put(d / "ports/1/state", state);
      put(d / "ports/1/rate", rate);
      put(d / "ports/1/link_layer", "InfiniBand");
    };
    ib("mlx5_0", nic0, "4: ACTIVE", "400 Gb/sec (4X NDR)");
    ib("mlx5_1", nic1, "1: DOWN", "10 Gb/sec (4X SDR)");
    fs::create_directories(root / "class/nvme/nvme0");
    fs::create_directory_symlink(nvme, root / "class/nvme/nvme0/device");
    put(root / "class/nvme/nvme0/model", "SAMSUNG MZQL23T8HCLS");
    put(root / "class/nvme/nvme0/serial", "S64HNE0T");
    put(root / "class/nvme/nvme0/firmware_rev", "GDC5602Q");
    fs::create_directories(root / "class/net/eth0");
    fs::create_directory_symlink(eth, root / "class/net/eth0/device");
    put(root / "class/net/eth0/operstate", "up");
    put(root / "class/net/eth0/speed", "25000");
    put(root / "class/net/eth0/mtu", "9000");
    put(root / "class/net/lo/operstate", "unknown");
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
};

}  // namespace

TEST_F(fake_sysfs, reads_ib_ports_with_state_rate_and_numa) {
  const auto ports = infrabench::devices::read_ib_ports(root.string());
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].state, "ACTIVE");
  EXPECT_DOUBLE_EQ(ports[0].rate_gbps, 400.0);
  EXPECT_EQ(ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(ports[0].numa_node, 0);
  EXPECT_EQ(ports[1].state, "DOWN");
  EXPECT_EQ(ports[1].numa_node, 1);
}

TEST_F(fake_sysfs, lists_adapters_not_virtual_interfaces_and_nvme_drives) {
  const auto nets = infrabench::devices::read_net_interfaces(root.string());
  ASSERT_EQ(nets.size(), 1u);  // lo has no device behind it
  EXPECT_EQ(nets[0].name, "eth0");
  EXPECT_DOUBLE_EQ(nets[0].speed_mbps, 25000.0);
  EXPECT_EQ(nets[0].mtu, 9000);
  const auto drives = infrabench::devices::read_nvme_drives(root.string());
  ASSERT_EQ(drives.size(), 1u);
  EXPECT_EQ(drives[0].model, "SAMSUNG MZQL23T8HCLS");
  EXPECT_EQ(drives[0].firmware, "GDC5602Q");
}

TEST_F(fake_sysfs, gpu_is_nearest_the_adapter_behind_its_switch) {
  const auto ports = infrabench::devices::read_ib_ports(root.string());
  const std::vector<std::string> nics = {ports[0].pci_path, ports[1].pci_path};
  const std::string gpu0 = infrabench::devices::pci_device_path(root.string(), "0000:17:00.0");
  const std::string gpu1 = infrabench::devices::pci_device_path(root.string(), "0000:9a:00.0");
  ASSERT_FALSE(gpu0.empty());
  EXPECT_EQ(nearest_by_pci_path(gpu0, nics), 0);
  EXPECT_EQ(nearest_by_pci_path(gpu1, nics), 1);
  EXPECT_EQ(infrabench::devices::numa_node_of(gpu1), 1);
  EXPECT_TRUE(infrabench::devices::pci_device_path(root.string(), "0000:ff:00.0").empty());
}

TEST(devices, no_shared_bridge_means_no_nearest_adapter) {
  EXPECT_EQ(nearest_by_pci_path("/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0",
                                {"/sys/devices/pci0000:80/0000:80:01.0/0000:9b:00.0"}),
            -1);
}

TEST(devices, parses_sysfs_rate_and_state_text) {
  EXPECT_DOUBLE_EQ(infrabench::devices::parse_ib_rate_gbps("200 Gb/sec (4X HDR)"), 200.0);
  EXPECT_DOUBLE_EQ(infrabench::devices::parse_ib_rate_gbps("garbage"), 0.0);
  EXPECT_EQ(infrabench::devices::parse_ib_state("4: ACTIVE"), "ACTIVE");
  EXPECT_EQ(infrabench::devices::parse_ib_state("1: DOWN"), "DOWN");
}

TEST(devices, counts_take_the_weakest_gpu_and_port_and_flag_differences) {
  const json devices = {
      {"gpus",
       {{{"vbios", "96.00.89.00.01"}, {"power_limit_w", 700}, {"nvlinks", {{"active", 18}}}},
        {{"vbios", "96.00.61.00.01"}, {"power_limit_w", 700}, {"nvlinks", {{"active", 17}}}}}},
      {"ib_ports",
       {{{"state", "ACTIVE"}, {"rate_gbps", 400}},
        {{"state", "ACTIVE"}, {"rate_gbps", 200}},
        {{"state", "DOWN"}, {"rate_gbps", 10}}}},
      {"nvme", json::array({json::object()})}};
  const json c = counts_of(devices);
  EXPECT_EQ(c["gpus"], 2);
  EXPECT_EQ(c["nvlinks_per_gpu"], 17);
  EXPECT_EQ(c["ib_ports_active"], 2);
  EXPECT_EQ(c["ib_rate_gbps"], 200.0);
  EXPECT_EQ(c["nvme_drives"], 1);
  EXPECT_EQ(c["same_across_gpus"]["vbios"], false);
  EXPECT_EQ(c["same_across_gpus"]["power_limit_w"], true);
  EXPECT_TRUE(c["same_across_gpus"]["ecc_enabled"].is_null());
}

TEST(devices, a_gpu_that_does_not_answer_is_not_the_same) {
  const json devices = {{"gpus", {{{"ecc_enabled", true}}, json::object()}}};
  EXPECT_EQ(counts_of(devices)["same_across_gpus"]["ecc_enabled"], false);
}

TEST(devices, counts_of_a_node_without_devices) {
  const json c = counts_of(json::object());
  EXPECT_EQ(c["gpus"], 0);
  EXPECT_TRUE(c["nvlinks_per_gpu"].is_null());
  EXPECT_EQ(c["ib_ports_active"], 0);
  EXPECT_TRUE(c["ib_rate_gbps"].is_null());
}
