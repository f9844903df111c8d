// The FMA-peak kernels: each variant this CPU has runs and returns a finite value; the flop counts
// per iteration follow from lanes x chains; missing ISAs say which feature is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "cpu/gemm_peak.h"

namespace kc = infrabench::kernels::cpu;

TEST(GemmPeak, NamesRoundTrip) {
  for (const auto isa : kc::all_peak_isas()) EXPECT_EQ(kc::parse_peak_isa(kc::to_string(isa)), isa);
  EXPECT_EQ(kc::all_peak_isas().size(), 6u);
  EXPECT_FALSE(kc::parse_peak_isa("amx_fp16"));
}

TEST(GemmPeak, FlopCounts) {
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx2_fp32), 16);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_fp32), 32);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_bf16), 64);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_fp16), 64);
  // One tile instruction: C (16 x 16) += A (16 x K) . B (K x 16), two ops per multiply-add;
  // K = 32 bf16 or 64 int8 (a 64-byte tile row).
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::amx_bf16), 16 * 16 * 32 * 2);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::amx_int8), 16 * 16 * 64 * 2);
  // Four independent accumulator tiles per iteration (tile latency / issue interval).
  EXPECT_EQ(kc::peak_flops_per_iteration(kc::peak_isa::amx_bf16), 4 * 16384);
  EXPECT_EQ(kc::peak_flops_per_iteration(kc::peak_isa::amx_int8), 4 * 32768);
  EXPECT_TRUE(kc::is_amx(kc::peak_isa::amx_int8));
  EXPECT_FALSE(kc::is_amx(kc::peak_isa::avx512_bf16));
  // Whole numbers of instructions per iteration, at least 8 chains (latency x pipes).
  for (const auto isa : {kc::peak_isa::avx2_fp32, kc::peak_isa::avx512_fp32,
                         kc::peak_isa::avx512_bf16, kc::peak_isa::avx512_fp16}) {
    const double chains = kc::peak_flops_per_iteration(isa) / kc::peak_flops_per_instruction(isa);
    EXPECT_EQ(chains, std::floor(chains));
    EXPECT_GE(chains, 8);
  }
}

TEST(GemmPeak, SupportedVariantsRunAndMissingOnesSayWhy) {
  int ran = 0;
  for (const auto isa : kc::all_peak_isas()) {
    const std::string why = kc::peak_isa_unsupported_reason(isa);
    if (why.empty()) {
      const float v = kc::run_peak_chains(isa, 1000);
      EXPECT_TRUE(std::isfinite(v)) << kc::to_string(isa);
      ++ran;
    } else {
      EXPECT_TRUE(why.find("lacks") != std::string::npos ||
                  why.find("refused") != std::string::npos)
          << why;
      EXPECT_THROW((void)kc::run_peak_chains(isa, 10), std::invalid_argument);
    }
  }
  if (ran == 0) GTEST_SKIP() << "no vector ISA on this CPU";
}

TEST(GemmPeak, AddChainCountsEveryAdd) {
  EXPECT_EQ(kc::run_add_chain(1000), 1000u * kc::add_chain_per_iteration);
  EXPECT_EQ(kc::run_add_chain(0), 0u);
}

// Clock x width: the table's issue rates, and the arithmetic they feed.
TEST(GemmPeak, ClockTimesWidth) {
  const kc::cpu_model zen4{"AuthenticAMD", 0x19, 0x11};  // EPYC Genoa
  const auto ymm = kc::peak_issue_rate(kc::peak_isa::avx2_fp32, zen4);
  const auto zmm = kc::peak_issue_rate(kc::peak_isa::avx512_fp32, zen4);
  ASSERT_TRUE(ymm && zmm);
  EXPECT_EQ(ymm->per_cycle, 2);  // two 256-bit FMA pipes ...
  EXPECT_EQ(zmm->per_cycle, 1);  // ... which a 512-bit FMA takes both of
  EXPECT_EQ(ymm->core, "Zen 4");
  // The same flops per cycle either way: 2 x 16 = 1 x 32.
  EXPECT_DOUBLE_EQ(kc::clock_x_width_gflops(kc::peak_isa::avx2_fp32, 3.7, 1, ymm->per_cycle),
                   kc::clock_x_width_gflops(kc::peak_isa::avx512_fp32, 3.7, 1, zmm->per_cycle));
  EXPECT_DOUBLE_EQ(kc::clock_x_width_gflops(kc::peak_isa::avx512_fp32, 3.7, 2, 1), 3.7 * 2 * 32);

  const kc::cpu_model turin{"AuthenticAMD", 0x1a, 0x02};  // Zen 5, 512-bit pipes
  EXPECT_EQ(kc::peak_issue_rate(kc::peak_isa::avx512_fp32, turin)->per_cycle, 2);
  // Zen 5 at 4.46 GHz: 2 x 16 lanes x 2 flop x 4.46 = 285 GFLOP/s per core (issue 17).
  EXPECT_NEAR(kc::clock_x_width_gflops(kc::peak_isa::avx512_fp32, 4.46, 1, 2), 285.4, 0.1);

  const kc::cpu_model emr{"GenuineIntel", 6, 207};  // Emerald Rapids: AMX
  const auto amx = kc::peak_issue_rate(kc::peak_isa::amx_bf16, emr);
  ASSERT_TRUE(amx);
  EXPECT_DOUBLE_EQ(amx->per_cycle, 1.0 / 16);
  // 1024 bf16 flops per cycle per core, 2048 int8 ops.
  EXPECT_DOUBLE_EQ(kc::clock_x_width_gflops(kc::peak_isa::amx_bf16, 1, 1, amx->per_cycle), 1024);
  EXPECT_DOUBLE_EQ(kc::clock_x_width_gflops(kc::peak_isa::amx_int8, 1, 1, amx->per_cycle), 2048);
  // Not in the table: no figure rather than a guess.
  EXPECT_FALSE(kc::peak_issue_rate(kc::peak_isa::avx512_fp16, emr));
  EXPECT_FALSE(kc::peak_issue_rate(kc::peak_isa::amx_bf16, zen4));
  EXPECT_FALSE(kc::peak_issue_rate(kc::peak_isa::avx2_fp32, {"GenuineIntel", 6, 0x97}));  // hybrid
  EXPECT_FALSE(kc::peak_issue_rate(kc::peak_isa::avx2_fp32, {"Unknown", 1, 1}));
  EXPECT_FALSE(kc::this_cpu_model().vendor.empty());
}
