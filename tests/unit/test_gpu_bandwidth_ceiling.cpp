// Which ceiling a GPU copy is judged against (topology/ceiling.h), decided on the CPU from fake
// NVML and sysfs facts: PCIe from NVML or sysfs, NVLink counting every link up or down (so a down
// link is low efficiency and a warning), NVML's version against the architecture's, the PCIe
// fallback for pairs without NVLink, and the free-memory message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/ceiling.h"
#include "topology/link.h"

namespace topo = infrabench::kernels::topology;

namespace {

topo::gpu_identity h100(int index, std::string bus_id) {
  topo::gpu_identity g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.cc_major = 9;
  g.cc_minor = 0;
  g.bus_id = std::move(bus_id);
  return g;
}

// An HGX GPU: 18 links to NVSwitches; `down` lists the links that are inactive (their far end
// unknown, as NVML reports a link that did not train).
topo::nvlink_inventory hgx_links(std::vector<int> down = {}, std::optional<unsigned> version = 6) {
  topo::nvlink_inventory inv;
  inv.known = true;
  inv.version_raw = version;
  for (int i = 0; i < 18; ++i) {
    topo::nvlink_endpoint ep;
    ep.index = i;
    ep.kind = topo::nvlink_peer_kind::nvswitch;
    ep.remote_bus_id = "0000:a0:00.0";
    for (int d : down) {
      if (d == i) {
        ep.active = false;
        ep.kind = topo::nvlink_peer_kind::other;
        ep.remote_bus_id.clear();
      }
    }
    inv.links.push_back(ep);
  }
  return inv;
}

topo::ceiling_choice pcie(const topo::gpu_identity& g, unsigned gen, unsigned width,
                          int directions = 1) {
  return topo::pcie_ceiling_of(g, topo::pcie_link::from_generations(gen, width, 5, 16), directions);
}

}  // namespace

TEST(GpuBandwidthCeiling, DecodesNvmlNvlinkVersions) {
  // nvmlNvlinkVersion_t: 6 = 4.0 (H100), 7 = 5.0 (B200), 4 = 3.0 (A100), 3 = 2.2 (V100).
  EXPECT_EQ(topo::decode_nvml_nvlink_version(6, 4), 4);
  EXPECT_EQ(topo::decode_nvml_nvlink_version(7, 5), 5);
  EXPECT_EQ(topo::decode_nvml_nvlink_version(4, 3), 3);
  EXPECT_EQ(topo::decode_nvml_nvlink_version(3, 2), 2);
  // Older drivers returned the generation itself: an H100 saying 4 is NVLink 4, not 3.0.
  EXPECT_EQ(topo::decode_nvml_nvlink_version(4, 4), 4);
  EXPECT_EQ(topo::decode_nvml_nvlink_version(5, 5), 5);
  // Without a known architecture the enum is all there is.
  EXPECT_EQ(topo::decode_nvml_nvlink_version(4, std::nullopt), 3);
  EXPECT_FALSE(topo::decode_nvml_nvlink_version(0, 4));
  EXPECT_FALSE(topo::decode_nvml_nvlink_version(99, 4));
}

TEST(GpuBandwidthCeiling, PcieFromNvmlNamesItsSource) {
  const auto c = pcie(h100(0, "0000:3b:00.0"), 5, 16);
  ASSERT_TRUE(c.chosen);
  EXPECT_NEAR(c.chosen->gbps, 63.0, 0.1);
  EXPECT_NE(c.chosen->description.find("PCIe Gen5 x16"), std::string::npos);
  EXPECT_NE(c.chosen->description.find("link from NVML"), std::string::npos);
  EXPECT_EQ(c.warning, "");

  const auto both = pcie(h100(0, "0000:3b:00.0"), 5, 16, 2);
  EXPECT_NEAR(both.chosen->gbps, 126.0, 0.2);
  EXPECT_NE(both.chosen->description.find("x 2 directions"), std::string::npos);

  const auto sysfs = topo::pcie_ceiling_of(
      h100(0, "0000:3b:00.0"),
      topo::pcie_link::from_sysfs("16.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16"), 1);
  ASSERT_TRUE(sysfs.chosen);
  EXPECT_NE(sysfs.chosen->description.find("link from sysfs"), std::string::npos);
  // The maximum (Gen5), not the Gen4 it ran at when read: no warning for a lower generation.
  EXPECT_NEAR(sysfs.chosen->gbps, 63.0, 0.1);
  EXPECT_EQ(sysfs.warning, "");
}

TEST(GpuBandwidthCeiling, PcieCeilingIsTheMaximumLinkNotTheIdleOne) {
  // An idle H200 reads Gen1 x16 right after the copies; the copies ran at Gen5 x16 (55 GB/s
  // measured). The ceiling is the maximum, so 55 GB/s is 87% of it, not "above the ceiling".
  const auto idle = pcie(h100(0, "0000:3b:00.0"), 1, 16);
  ASSERT_TRUE(idle.chosen);
  EXPECT_NEAR(idle.chosen->gbps, 63.0, 0.1);
  EXPECT_NE(idle.chosen->description.find("PCIe Gen5 x16 (32.0 GT/s, 128b/130b) maximum"),
            std::string::npos)
      << idle.chosen->description;
  EXPECT_EQ(idle.warning, "");
  EXPECT_FALSE(topo::exceeds_ceiling(55.0, idle.chosen->gbps));
  EXPECT_NEAR(*topo::efficiency_percent(55.0, idle.chosen->gbps), 87.3, 0.1);

  // A narrower link is named (width does not drop at idle); the ceiling stays the maximum.
  const auto narrow = pcie(h100(0, "0000:3b:00.0"), 5, 8);
  EXPECT_NEAR(narrow.chosen->gbps, 63.0, 0.1);
  EXPECT_NE(narrow.warning.find("PCIe link runs at x8, narrower than its maximum x16"),
            std::string::npos)
      << narrow.warning;

  // No maximum reported: the current state, with a warning that says so.
  const auto no_max = topo::pcie_ceiling_of(h100(0, "0000:3b:00.0"),
                                            topo::pcie_link::from_generations(4, 16, 0, 0), 1);
  ASSERT_TRUE(no_max.chosen);
  EXPECT_NEAR(no_max.chosen->gbps, 31.5, 0.1);
  EXPECT_NE(no_max.chosen->description.find("as read after the copies"), std::string::npos);
  EXPECT_NE(no_max.warning.find("maximum PCIe link of 0000:3b:00.0 is not reported by NVML"),
            std::string::npos)
      << no_max.warning;
}

TEST(GpuBandwidthCeiling, PcieFromGenerationsAndUnknownLinks) {
  const auto l = topo::pcie_link::from_generations(4, 8, 5, 16);
  EXPECT_EQ(l.source, "NVML");
  EXPECT_NEAR(*l.current_gbps(), 15.75, 0.01);  // Gen4 x8
  EXPECT_TRUE(l.degraded_warning());
  const auto unknown = topo::pcie_link::from_generations(0, 0, 0, 0);
  EXPECT_FALSE(unknown.current_gbps());

  const auto no_link = topo::pcie_ceiling_of(h100(1, "0000:3c:00.0"), unknown, 1);
  EXPECT_FALSE(no_link.chosen);
  EXPECT_NE(no_link.why_not.find("PCIe link of 0000:3c:00.0 unknown in NVML"), std::string::npos);
  const auto no_bus = topo::pcie_ceiling_of(h100(1, ""), l, 1);
  EXPECT_EQ(no_bus.why_not, "the GPU's PCI bus id is unknown");
}

TEST(GpuBandwidthCeiling, HealthyNvswitchPairHasFullCeilingAndNoWarning) {
  const auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  const auto c = topo::nvlink_ceiling_of(a, b, hgx_links(), hgx_links(), 1);
  ASSERT_TRUE(c.chosen) << c.why_not;
  EXPECT_DOUBLE_EQ(c.chosen->gbps, 450.0);
  EXPECT_EQ(c.warning, "");
  EXPECT_NE(c.chosen->description.find("18 NVLink 4 links (0 direct, 18 via NVSwitch; 18 active)"),
            std::string::npos)
      << c.chosen->description;
  EXPECT_NE(c.chosen->description.find("NVML reports NVLink 4"), std::string::npos);
}

TEST(GpuBandwidthCeiling, DownNvlinkKeepsTheCeilingAndWarns) {
  // One link of GPU 0 did not train: the copy has 17 links, the hardware should give 18, so the
  // ceiling stays 450 GB/s (efficiency drops to ~94%) and the result says which link is down.
  const auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  const auto c = topo::nvlink_ceiling_of(a, b, hgx_links({5}), hgx_links(), 1);
  ASSERT_TRUE(c.chosen);
  EXPECT_DOUBLE_EQ(c.chosen->gbps, 450.0);
  EXPECT_NE(c.warning.find("NVLink: 17 of 18 links active between GPU 0 and GPU 1"),
            std::string::npos)
      << c.warning;
  EXPECT_NE(c.warning.find("GPU 0: link 5 down"), std::string::npos) << c.warning;
  EXPECT_NE(c.chosen->description.find("17 active"), std::string::npos);
  const double measured = 17 * 25.0 * 0.9;
  EXPECT_LT(*topo::efficiency_percent(measured, c.chosen->gbps), 90.0);

  // The same from the other side, and with two links down.
  const auto r = topo::nvlink_ceiling_of(b, a, hgx_links(), hgx_links({2, 7}), 1);
  EXPECT_NE(r.warning.find("NVLink: 16 of 18 links active between GPU 1 and GPU 0 (GPU 0: "
                           "links 2, 7 down)"),
            std::string::npos)
      << r.warning;
}

TEST(GpuBandwidthCeiling, DirectLinkDownWithUnknownFarEndIsNamed) {
  // Two GPUs joined by 4 direct links (an NVLink bridge), one of which is down and whose far end
  // NVML cannot name: it is not counted for the pair, but the GPU is warned about.
  const auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  topo::nvlink_inventory la, lb;
  la.known = lb.known = true;
  for (int i = 0; i < 4; ++i) {
    topo::nvlink_endpoint to_b{topo::nvlink_peer_kind::gpu, b.bus_id, i != 3, i};
    if (i == 3) to_b = {topo::nvlink_peer_kind::other, "", false, 3};
    la.links.push_back(to_b);
    lb.links.push_back({topo::nvlink_peer_kind::gpu, a.bus_id, true, i});
  }
  const auto c = topo::nvlink_ceiling_of(a, b, la, lb, 1);
  ASSERT_TRUE(c.chosen);
  EXPECT_DOUBLE_EQ(c.chosen->gbps, 3 * 25.0);
  EXPECT_NE(c.warning.find("NVLink: GPU 0 has 3 of 4 links active (link 3 down"), std::string::npos)
      << c.warning;
  EXPECT_NE(c.chosen->description.find("generation inferred from sm_90 (NVML gave no version"),
            std::string::npos)
      << c.chosen->description;

  // A down link that still names its far end counts for the pair: ceiling 4 links, 3 active.
  la.links[3] = {topo::nvlink_peer_kind::gpu, b.bus_id, false, 3};
  const auto named = topo::nvlink_ceiling_of(a, b, la, lb, 1);
  EXPECT_DOUBLE_EQ(named.chosen->gbps, 4 * 25.0);
  EXPECT_NE(named.warning.find("3 of 4 links active between GPU 0 and GPU 1"), std::string::npos);
}

TEST(GpuBandwidthCeiling, NvlinkVersionBelowTheArchitectureWarns) {
  const auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  // NVML says 3.1 (enum 5), on an H100 whose links should run NVLink 4.
  const auto c = topo::nvlink_ceiling_of(a, b, hgx_links({}, 5), hgx_links(), 1);
  ASSERT_TRUE(c.chosen);
  EXPECT_DOUBLE_EQ(c.chosen->gbps, 450.0);  // NVLink 3 and 4 are both 25 GB/s per link
  EXPECT_NE(c.warning.find("NVLink: GPU 0 links run NVLink 3, below NVLink 4 of its architecture "
                           "(sm_90)"),
            std::string::npos)
      << c.warning;
}

TEST(GpuBandwidthCeiling, PeerWithoutNvlinkUsesTheNarrowerPcieLinkAndMergesWarnings) {
  const auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  topo::nvlink_inventory none;
  none.known = true;  // NVML answered: no links at all (PCIe cards)
  const auto pa = pcie(a, 5, 16), pb = pcie(b, 4, 8);
  const auto c = topo::peer_ceiling_of(a, b, none, none, pa, pb, 1);
  ASSERT_TRUE(c.chosen);
  EXPECT_DOUBLE_EQ(c.chosen->gbps, pb.chosen->gbps);
  EXPECT_NE(c.chosen->description.find("(no NVLink between the pair: PCIe path)"),
            std::string::npos);
  EXPECT_NE(c.warning.find("GPU 1: PCIe link runs at x8"), std::string::npos) << c.warning;
  EXPECT_EQ(c.warning.find("GPU 0:"), std::string::npos) << c.warning;

  // Both links narrow: both named; a lower generation alone (idle) is not a warning.
  const auto c2 = topo::peer_ceiling_of(a, b, none, none, pcie(a, 3, 4), pb, 1);
  EXPECT_NE(c2.warning.find("GPU 0: PCIe link runs at x4"), std::string::npos) << c2.warning;
  EXPECT_NE(c2.warning.find("; GPU 1: PCIe link runs at x8"), std::string::npos) << c2.warning;
  EXPECT_EQ(topo::peer_ceiling_of(a, b, none, none, pcie(a, 1, 16), pa, 1).warning, "");

  // NVML absent: PCIe, with a warning that says why.
  topo::nvlink_inventory absent;
  absent.reason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file";
  const auto c3 = topo::peer_ceiling_of(a, b, absent, absent, pa, pcie(b, 5, 16), 1);
  ASSERT_TRUE(c3.chosen);
  EXPECT_EQ(c3.warning,
            "NVLink topology unknown (NVML not available: libnvidia-ml.so.1: cannot open shared "
            "object file): ceiling from PCIe");

  // A PCIe link that is unknown: no ceiling, and why.
  const auto unknown = topo::pcie_ceiling_of(b, topo::pcie_link::from_generations(0, 0, 0, 0), 1);
  const auto c4 = topo::peer_ceiling_of(a, b, none, none, pa, unknown, 1);
  EXPECT_FALSE(c4.chosen);
  EXPECT_NE(c4.why_not.find("PCIe link of 0000:2a:00.0 unknown"), std::string::npos);

  // NVLink wins over PCIe when the pair has it.
  const auto c5 = topo::peer_ceiling_of(a, b, hgx_links(), hgx_links(), pa, pb, 1);
  EXPECT_DOUBLE_EQ(c5.chosen->gbps, 450.0);
  EXPECT_EQ(c5.warning, "");
}

TEST(GpuBandwidthCeiling, NvlinkOnAnArchitectureWithoutARate) {
  auto a = h100(0, "0000:18:00.0"), b = h100(1, "0000:2a:00.0");
  a.cc_minor = b.cc_minor = 6;  // sm_96: not in the table, and NVML gave no version
  const auto c =
      topo::nvlink_ceiling_of(a, b, hgx_links({}, std::nullopt), hgx_links({}, std::nullopt), 1);
  EXPECT_FALSE(c.chosen);
  EXPECT_NE(c.why_not.find("18 NVLinks, but the per-link rate of NVIDIA H100 80GB HBM3 (sm_96)"),
            std::string::npos);
  // With NVML's version the rate is known.
  const auto v = topo::nvlink_ceiling_of(a, b, hgx_links({}, 7), hgx_links({}, 7), 1);
  ASSERT_TRUE(v.chosen);
  EXPECT_DOUBLE_EQ(v.chosen->gbps, 18 * 50.0);
}

TEST(GpuBandwidthCeiling, FreeMemoryMessage) {
  constexpr std::size_t gib = std::size_t{1} << 30;
  EXPECT_EQ(topo::fits_message(1, gib, 2 * gib, 80 * gib), "");
  EXPECT_EQ(topo::fits_message(1, 2 * gib, gib + gib / 5, 79 * gib + gib / 10),
            "needs 2.0 GiB of device memory on GPU 1; 1.2 GiB free of 79.1 GiB");
}
