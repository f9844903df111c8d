// The FMA-peak kernels: each variant this CPU has runs and returns a finite value; the flop counts
// per iteration follow from lanes x chains; missing ISAs say which feature is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "cpu/gemm_peak.h"

namespace kc = infrabench::kernels::cpu;

TEST(GemmPeak, NamesRoundTrip) {
  for (const auto isa : {kc::peak_isa::avx2_fp32, kc::peak_isa::avx512_fp32,
                         kc::peak_isa::avx512_bf16, kc::peak_isa::avx512_fp16}) {
    EXPECT_EQ(kc::parse_peak_isa(kc::to_string(isa)), isa);
  }
  EXPECT_FALSE(kc::parse_peak_isa("amx_bf16"));
}

TEST(GemmPeak, FlopCounts) {
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx2_fp32), 16);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_fp32), 32);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_bf16), 64);
  EXPECT_EQ(kc::peak_flops_per_instruction(kc::peak_isa::avx512_fp16), 64);
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
  for (const auto isa : {kc::peak_isa::avx2_fp32, kc::peak_isa::avx512_fp32,
                         kc::peak_isa::avx512_bf16, kc::peak_isa::avx512_fp16}) {
    const std::string why = kc::peak_isa_unsupported_reason(isa);
    if (why.empty()) {
      const float v = kc::run_peak_chains(isa, 1000);
      EXPECT_TRUE(std::isfinite(v)) << kc::to_string(isa);
      ++ran;
    } else {
      EXPECT_NE(why.find("lacks"), std::string::npos) << why;
      EXPECT_THROW((void)kc::run_peak_chains(isa, 10), std::invalid_argument);
    }
  }
  if (ran == 0) GTEST_SKIP() << "no vector ISA on this CPU";
}

TEST(GemmPeak, AddChainCountsEveryAdd) {
  EXPECT_EQ(kc::run_add_chain(1000), 1000u * kc::add_chain_per_iteration);
  EXPECT_EQ(kc::run_add_chain(0), 0u);
}
