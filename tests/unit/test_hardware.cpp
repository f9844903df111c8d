// The hardware-figures module (kernels/hardware): every GPU SKU the table names is matched by the
// name CUDA reports and its SM count, and only by that; each datasheet figure is consistent with
// the architecture table (SMs x a plausible clock x ops per clock per SM); unknown SKUs fall back
// to the clock-derived figure and say so.
#include <gtest/gtest.h>

#include <string>

#include "hardware/cpu.h"
#include "hardware/gpu.h"
#include "hardware/links.h"

namespace hw = infrabench::kernels::hardware;
using d = hw::gpu_dtype;

namespace {

[[nodiscard]] std::string matched(std::string_view name, int sms) {
  const hw::gpu_sku* s = hw::match_sku(name, sms);
  return s ? std::string(s->name) : "none";
}

}  // namespace

TEST(Hardware, MatchesSkusByCudaNameAndSmCount) {
  // Names as cudaGetDeviceProperties reports them.
  EXPECT_EQ(matched("NVIDIA H100 80GB HBM3", 132), "H100 SXM5");
  EXPECT_EQ(matched("NVIDIA H100 PCIe", 114), "H100 PCIe");
  EXPECT_EQ(matched("NVIDIA H100 NVL", 132), "H100 NVL");
  EXPECT_EQ(matched("NVIDIA H200", 132), "H200 SXM");
  EXPECT_EQ(matched("NVIDIA H200 NVL", 132), "H200 NVL");
  EXPECT_EQ(matched("NVIDIA GH200 480GB", 132), "GH200 96GB HBM3");
  EXPECT_EQ(matched("NVIDIA GH200 144G HBM3e", 132), "GH200 144GB HBM3e");
  EXPECT_EQ(matched("NVIDIA A100-SXM4-80GB", 108), "A100 SXM4 80GB");
  EXPECT_EQ(matched("NVIDIA A100-SXM4-40GB", 108), "A100 SXM4 40GB");
  EXPECT_EQ(matched("NVIDIA A100 80GB PCIe", 108), "A100 PCIe 80GB");
  EXPECT_EQ(matched("NVIDIA A100-PCIE-40GB", 108), "A100 PCIe 40GB");
  EXPECT_EQ(matched("NVIDIA B200", 148), "B200");
  EXPECT_EQ(matched("NVIDIA L40S", 142), "L40S");
  EXPECT_EQ(matched("NVIDIA L4", 58), "L4");
}

TEST(Hardware, RefusesWrongSmCountsAndUnknownNames) {
  // A MIG slice or a cut-down part reports fewer SMs: its peak is not the full chip's.
  EXPECT_EQ(matched("NVIDIA H100 80GB HBM3", 16), "none");
  EXPECT_EQ(matched("NVIDIA A100-SXM4-80GB", 14), "none");
  EXPECT_EQ(matched("NVIDIA L40", 142), "none");  // L40 is not L40S; "L4" must not claim it
  EXPECT_EQ(matched("NVIDIA GB200", 148), "none");
  EXPECT_EQ(matched("NVIDIA RTX 6000 Ada Generation", 142), "none");
  EXPECT_EQ(matched("", 132), "none");
}

TEST(Hardware, EverySkuRowIsConsistentWithTheArchitectureTable) {
  // Each datasheet figure is SMs x clock x ops per clock per SM at one clock between 1 and
  // 2.6 GHz: a typo in either table (a sparse figure not halved, a wrong SM count) breaks this.
  for (const auto& s : hw::gpu_sku_table()) {
    for (int t = 0; t < hw::gpu_dtype_count; ++t) {
      const double fig = s.dense_tflops[t];
      if (fig <= 0) continue;
      const auto rate = hw::ops_per_clock_per_sm(s.cc_major, s.cc_minor, static_cast<d>(t));
      ASSERT_TRUE(rate) << s.name << " " << hw::to_string(static_cast<d>(t));
      const double mhz = fig * 1e12 / (*rate * s.sm_count) / 1e6;
      EXPECT_GT(mhz, 1000) << s.name << " " << hw::to_string(static_cast<d>(t));
      EXPECT_LT(mhz, 2600) << s.name << " " << hw::to_string(static_cast<d>(t));
    }
    EXPECT_GT(s.memory_gbps, 0) << s.name;
    EXPECT_FALSE(s.source.empty()) << s.name;
  }
}

TEST(Hardware, DatasheetPeaksAreTheFiguresUsersKnow) {
  // H100 SXM: dense BF16 989.4 TFLOP/s (the datasheet, quoted at 1830 MHz), not 1070 (1980 MHz).
  auto p = hw::dense_peak("NVIDIA H100 80GB HBM3", 132, 9, 0, 1980, d::bf16);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->datasheet);
  EXPECT_DOUBLE_EQ(p->value, 989.4);
  EXPECT_NE(p->source.find("H100 SXM5"), std::string::npos) << p->source;
  EXPECT_NEAR(*hw::peak_at_clock_tflops(9, 0, d::bf16, 132, 1980), 1070.5, 0.5);
  EXPECT_NEAR(*hw::peak_at_clock_tflops(9, 0, d::bf16, 132, 1830), 989.4, 0.5);
  EXPECT_DOUBLE_EQ(hw::dense_peak("NVIDIA H100 80GB HBM3", 132, 9, 0, 1980, d::fp8)->value, 1978.9);
  EXPECT_DOUBLE_EQ(hw::dense_peak("NVIDIA H100 80GB HBM3", 132, 9, 0, 1980, d::fp32)->value, 67);
  EXPECT_DOUBLE_EQ(hw::dense_peak("NVIDIA A100-SXM4-80GB", 108, 8, 0, 1410, d::tf32)->value, 156);
  EXPECT_DOUBLE_EQ(hw::dense_peak("NVIDIA L4", 58, 8, 9, 2040, d::fp8)->value, 242.5);
  EXPECT_DOUBLE_EQ(hw::dense_peak("NVIDIA B200", 148, 10, 0, 1965, d::bf16)->value, 2250);
  // Memory bandwidth from the datasheet.
  auto m = hw::memory_peak("NVIDIA H200", 132, 3201000, 6144);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->datasheet);
  EXPECT_DOUBLE_EQ(m->value, 4800);
}

TEST(Hardware, UnknownSkusFallBackToTheClockAndSaySo) {
  auto p = hw::dense_peak("NVIDIA H100 80GB HBM3", 114, 9, 0, 1980, d::bf16);  // odd SM count
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->datasheet);
  EXPECT_NEAR(p->value, 114 * 4096 * 1980e6 / 1e12, 1e-6);
  EXPECT_NE(p->source.find("no datasheet entry"), std::string::npos) << p->source;
  EXPECT_NE(p->source.find("maximum SM clock 1980 MHz"), std::string::npos) << p->source;
  // A SKU whose datasheet omits the dtype (B200 fp32) also falls back, naming the SKU.
  p = hw::dense_peak("NVIDIA B200", 148, 10, 0, 1965, d::fp32);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->datasheet);
  EXPECT_NE(p->source.find("B200 datasheet gives no dense fp32"), std::string::npos) << p->source;
  // An architecture not in the table: no figure at all.
  EXPECT_FALSE(hw::dense_peak("Tesla T4", 40, 7, 5, 1590, d::fp16));
  EXPECT_FALSE(hw::dense_peak("NVIDIA A100-SXM4-80GB", 108, 8, 0, 1410, d::fp8));
  // Memory: clock x bus width, said so.
  auto m = hw::memory_peak("NVIDIA RTX A6000", 84, 8001000, 384);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->datasheet);
  EXPECT_NEAR(m->value, 768.1, 0.1);
  EXPECT_FALSE(hw::memory_peak("NVIDIA RTX A6000", 84, 0, 384));
}

TEST(Hardware, LinkFigures) {
  ASSERT_EQ(hw::pcie_generations().size(), 7u);
  EXPECT_NEAR(hw::pcie_generations()[4].lane_gbps() * 16, 63.0, 0.1);  // Gen5 x16
  EXPECT_NEAR(hw::pcie_generations()[3].lane_gbps() * 16, 31.5, 0.1);  // Gen4 x16
  EXPECT_EQ(hw::nvlink_link_gbps(4), 25.0);
  EXPECT_EQ(hw::nvlink_link_gbps(5), 50.0);
  EXPECT_FALSE(hw::nvlink_link_gbps(6));
  EXPECT_EQ(hw::nvlink_generation_for(9, 0), 4);
  EXPECT_FALSE(hw::nvlink_generation_for(8, 9));
}

TEST(Hardware, CpuInstructionFigures) {
  EXPECT_EQ(hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx2_fma_fp32), 16);
  EXPECT_EQ(hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp32), 32);
  EXPECT_EQ(hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_dpbf16_fp32), 64);
  EXPECT_EQ(hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp16), 64);
  for (const auto& f : hw::cpu_op_table()) EXPECT_FALSE(f.source.empty()) << f.instruction;
}
