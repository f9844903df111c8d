// The link table and the sysfs/NVML topology parsing behind every efficiency figure of the GPU
// data-movement benchmarks: PCIe generation/width strings, per-generation bandwidth, degraded-link
// warnings, NVLink per-pair link counts, HBM peak and the efficiency arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "topology/link.h"

namespace topo = infrabench::kernels::topology;

TEST(GpuBandwidthLink, ParsesSysfsLinkSpeeds) {
  EXPECT_DOUBLE_EQ(*topo::parse_link_speed("16.0 GT/s PCIe"), 16.0);
  EXPECT_DOUBLE_EQ(*topo::parse_link_speed("32.0 GT/s PCIe\n"), 32.0);
  EXPECT_DOUBLE_EQ(*topo::parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_DOUBLE_EQ(*topo::parse_link_speed("8 GT/s"), 8.0);  // kernels before 4.20
  EXPECT_DOUBLE_EQ(*topo::parse_link_speed("64.0 GT/s PCIe"), 64.0);
  EXPECT_FALSE(topo::parse_link_speed("Unknown"));
  EXPECT_FALSE(topo::parse_link_speed("Unknown speed"));
  EXPECT_FALSE(topo::parse_link_speed(""));
  EXPECT_FALSE(topo::parse_link_speed("16.0"));
  EXPECT_FALSE(topo::parse_link_speed("16.0 MB/s"));
  EXPECT_FALSE(topo::parse_link_speed("1.2.3 GT/s"));
}

TEST(GpuBandwidthLink, ParsesSysfsLinkWidths) {
  EXPECT_EQ(*topo::parse_link_width("16"), 16);
  EXPECT_EQ(*topo::parse_link_width("16\n"), 16);
  EXPECT_EQ(*topo::parse_link_width("x8"), 8);
  EXPECT_EQ(*topo::parse_link_width("1"), 1);
  EXPECT_FALSE(topo::parse_link_width("0"));  // virtual devices report 0
  EXPECT_FALSE(topo::parse_link_width("3"));
  EXPECT_FALSE(topo::parse_link_width("255"));
  EXPECT_FALSE(topo::parse_link_width(""));
  EXPECT_FALSE(topo::parse_link_width("sixteen"));
}

TEST(GpuBandwidthLink, GenerationTableHasTheSpecFigures) {
  // GB/s per lane and direction after line encoding.
  const double expected[] = {0.25,
                             0.5,
                             8.0 * 128 / 130 / 8,
                             16.0 * 128 / 130 / 8,
                             32.0 * 128 / 130 / 8,
                             64.0 * 242 / 256 / 8,
                             128.0 * 242 / 256 / 8};
  ASSERT_EQ(topo::pcie_generations().size(), 7u);
  for (int gen = 1; gen <= 7; ++gen) {
    const auto* g = topo::pcie_generation_by_number(gen);
    ASSERT_NE(g, nullptr) << gen;
    EXPECT_EQ(g->gen, gen);
    EXPECT_NEAR(g->lane_gbps(), expected[gen - 1], 1e-12) << gen;
    EXPECT_EQ(topo::pcie_generation_by_rate(g->gigatransfers), g);
  }
  EXPECT_EQ(topo::pcie_generation_by_number(0), nullptr);
  EXPECT_EQ(topo::pcie_generation_by_number(8), nullptr);
  EXPECT_EQ(topo::pcie_generation_by_rate(10.0), nullptr);
  // The familiar x16 figures: Gen3 15.75, Gen4 31.5, Gen5 63.0 GB/s per direction.
  EXPECT_NEAR(topo::pcie_generation_by_number(3)->lane_gbps() * 16, 15.75, 0.01);
  EXPECT_NEAR(topo::pcie_generation_by_number(4)->lane_gbps() * 16, 31.51, 0.01);
  EXPECT_NEAR(topo::pcie_generation_by_number(5)->lane_gbps() * 16, 63.02, 0.01);
  EXPECT_NEAR(topo::pcie_generation_by_number(6)->lane_gbps() * 16, 121.0, 0.01);
}

TEST(GpuBandwidthLink, LinkFromSysfsStrings) {
  const auto l = topo::pcie_link::from_sysfs("16.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16");
  ASSERT_TRUE(l.current_gbps());
  EXPECT_NEAR(*l.current_gbps(), 31.51, 0.01);
  EXPECT_NEAR(*l.max_gbps(), 63.02, 0.01);
  EXPECT_EQ(l.describe_current(), "PCIe Gen4 x16 (16.0 GT/s, 128b/130b)");

  const auto unknown = topo::pcie_link::from_sysfs("Unknown", "0", "", "");
  EXPECT_FALSE(unknown.current_gbps());
  EXPECT_EQ(unknown.describe_current(), "PCIe link unknown");
  EXPECT_FALSE(unknown.degraded_warning());
}

TEST(GpuBandwidthLink, WarnsWhenBelowMaximumGenerationOrWidth) {
  const auto full = topo::pcie_link::from_sysfs("32.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16");
  EXPECT_FALSE(full.degraded_warning());

  const auto slow = topo::pcie_link::from_sysfs("16.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16");
  const auto w = slow.degraded_warning();
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("Gen4 x16"), std::string::npos) << *w;
  EXPECT_NE(w->find("below its maximum Gen5 x16"), std::string::npos) << *w;
  EXPECT_NE(w->find("31.5 instead of 63.0 GB/s"), std::string::npos) << *w;

  const auto narrow = topo::pcie_link::from_sysfs("32.0 GT/s PCIe", "8", "32.0 GT/s PCIe", "16");
  const auto n = narrow.degraded_warning();
  ASSERT_TRUE(n);
  EXPECT_NE(n->find("Gen5 x8"), std::string::npos) << *n;
  EXPECT_NE(n->find("slot"), std::string::npos) << *n;
}

TEST(GpuBandwidthLink, NvlinkTable) {
  EXPECT_EQ(*topo::nvlink_link_gbps(1), 20.0);
  EXPECT_EQ(*topo::nvlink_link_gbps(2), 25.0);
  EXPECT_EQ(*topo::nvlink_link_gbps(3), 25.0);
  EXPECT_EQ(*topo::nvlink_link_gbps(4), 25.0);
  EXPECT_EQ(*topo::nvlink_link_gbps(5), 50.0);
  EXPECT_FALSE(topo::nvlink_link_gbps(0));
  EXPECT_FALSE(topo::nvlink_link_gbps(6));
  EXPECT_EQ(*topo::nvlink_generation_for(8, 0), 3);   // A100: 12 x 25 = 300 GB/s per direction
  EXPECT_EQ(*topo::nvlink_generation_for(9, 0), 4);   // H100: 18 x 25 = 450 GB/s per direction
  EXPECT_EQ(*topo::nvlink_generation_for(10, 0), 5);  // B200: 18 x 50 = 900 GB/s per direction
  EXPECT_EQ(*topo::nvlink_generation_for(7, 0), 2);
  EXPECT_FALSE(topo::nvlink_generation_for(8, 6));  // bridged boards: narrower links
  EXPECT_FALSE(topo::nvlink_generation_for(7, 5));
}

TEST(GpuBandwidthLink, NormalizesPciBusIds) {
  EXPECT_EQ(topo::normalize_pci_bus_id("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(topo::normalize_pci_bus_id("00000000:3B:00.0"), "0000:3b:00.0");  // NVML
  EXPECT_EQ(topo::normalize_pci_bus_id("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(topo::normalize_pci_bus_id("0001:c1:1f.7\n"), "0001:c1:1f.7");
  EXPECT_EQ(topo::normalize_pci_bus_id(""), "");
  EXPECT_EQ(topo::normalize_pci_bus_id("3b:00"), "");
  EXPECT_EQ(topo::normalize_pci_bus_id("0000:3b:20.0"), "");  // device > 31
  EXPECT_EQ(topo::normalize_pci_bus_id("zz:00.0"), "");
}

TEST(GpuBandwidthLink, CountsNvlinksPerPair) {
  using ep = topo::nvlink_endpoint;
  const auto gpu = topo::nvlink_peer_kind::gpu;
  const auto sw = topo::nvlink_peer_kind::nvswitch;
  // Direct links (DGX-1 style hybrid cube mesh): a has 2 links to b, 1 to c.
  const std::vector<ep> a = {{gpu, "0000:02:00.0"}, {gpu, "0000:02:00.0"}, {gpu, "0000:03:00.0"}};
  const std::vector<ep> b = {{gpu, "0000:01:00.0"}, {gpu, "0000:01:00.0"}};
  EXPECT_EQ(topo::nvlink_between(a, b, "0000:02:00.0").direct_links, 2);
  EXPECT_EQ(topo::nvlink_between(a, b, "0000:02:00.0").total(), 2);
  EXPECT_EQ(topo::nvlink_between(a, {}, "0000:04:00.0").total(), 0);
  // NVSwitch fabric (HGX H100): 18 links to switches each; one GPU with a link down has 17.
  const std::vector<ep> h(18, ep{sw, "0000:a0:00.0"});
  const std::vector<ep> h_down(17, ep{sw, "0000:a0:00.0"});
  EXPECT_EQ(topo::nvlink_between(h, h, "0000:02:00.0").switch_links, 18);
  EXPECT_EQ(topo::nvlink_between(h, h_down, "0000:02:00.0").total(), 17);
  EXPECT_EQ(topo::nvlink_between(h_down, h, "0000:02:00.0").total(), 17);
}

TEST(GpuBandwidthLink, MemoryPeakAndEfficiency) {
  // H100 SXM: 2619 MHz x 5120 bits, double data rate = 3352 GB/s; A100 40GB: 1215 MHz -> 1555.
  EXPECT_NEAR(*topo::memory_peak_gbps(2619000, 5120), 3352.3, 0.1);
  EXPECT_NEAR(*topo::memory_peak_gbps(1215000, 5120), 1555.2, 0.1);
  EXPECT_FALSE(topo::memory_peak_gbps(0, 5120));
  EXPECT_FALSE(topo::memory_peak_gbps(1000, 0));

  EXPECT_NEAR(*topo::efficiency_percent(55.0, 63.02), 87.27, 0.01);
  EXPECT_DOUBLE_EQ(*topo::efficiency_percent(0, 10), 0.0);
  EXPECT_FALSE(topo::efficiency_percent(10, 0));
  EXPECT_FALSE(topo::efficiency_percent(-1, 10));
  EXPECT_FALSE(topo::efficiency_percent(std::numeric_limits<double>::quiet_NaN(), 10));
  EXPECT_FALSE(topo::exceeds_ceiling(63.0, 63.02));
  EXPECT_FALSE(topo::exceeds_ceiling(65.0, 63.02));  // within 5%
  EXPECT_TRUE(topo::exceeds_ceiling(400.0, 63.02));  // NVLink-C2C or a VM's fake port
  EXPECT_EQ(topo::format_gbps(31.5077), "31.5");
  EXPECT_EQ(topo::format_gbps(450), "450");
  EXPECT_EQ(topo::format_gbps(3.938), "3.94");
}
