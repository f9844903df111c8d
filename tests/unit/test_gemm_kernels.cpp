// Our CPU GEMM: every variant this machine runs against the fp64 reference (with the same
// tolerance rule the benchmarks use) and against the scalar reference, over shapes that hit every
// edge case of the blocking: partial micro-tiles, several k/m/n blocks, odd k for bf16 pairs,
// transposes, alpha/beta, and several parts (threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemm_model.h"

namespace kc = infrabench::kernels::cpu;
namespace gm = infrabench::kernels::gemm_model;

namespace {

struct problem {
  std::int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

std::string name_of(const problem& p) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         (p.ta ? "T" : "N") + (p.tb ? "T" : "N") + " alpha=" + std::to_string(p.alpha) +
         " beta=" + std::to_string(p.beta);
}

template <typename T>
struct operands {
  std::vector<T> a, b;
  std::vector<float> c0;  // C before the call (beta != 0 reads it)
  std::int64_t lda, ldb, ldc;
};

template <typename T>
operands<T> make_operands(const problem& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  operands<T> o;
  // Leading dimensions wider than the rows, so lda/ldb/ldc are really used.
  o.lda = (p.ta ? p.m : p.k) + 3;
  o.ldb = (p.tb ? p.k : p.n) + 5;
  o.ldc = p.n + 7;
  const auto rows_a = p.ta ? p.k : p.m;
  const auto rows_b = p.tb ? p.n : p.k;
  o.a.resize(static_cast<std::size_t>(rows_a * o.lda));
  o.b.resize(static_cast<std::size_t>(rows_b * o.ldb));
  for (auto& x : o.a) {
    if constexpr (std::is_same_v<T, float>) {
      x = d(rng);
    } else {
      x = kc::float_to_bf16(d(rng));
    }
  }
  for (auto& x : o.b) {
    if constexpr (std::is_same_v<T, float>) {
      x = d(rng);
    } else {
      x = kc::float_to_bf16(d(rng));
    }
  }
  o.c0.resize(static_cast<std::size_t>(p.m * o.ldc));
  for (auto& x : o.c0) x = p.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : d(rng);
  return o;
}

template <typename T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return kc::bf16_to_float(x);
  }
}

// Every entry against fp64 with the benchmarks' tolerance rule (scaled by |alpha|, plus beta*C).
template <typename T>
void expect_matches_fp64(const problem& p, const operands<T>& o, const std::vector<float>& c,
                         const std::string& what) {
  const auto tol = gm::gemm_tolerance(
      {std::is_same_v<T, float> ? gm::number_format::fp32 : gm::number_format::bf16,
       std::is_same_v<T, float> ? gm::number_format::fp32 : gm::number_format::bf16,
       gm::number_format::fp32, gm::number_format::fp32, 1.0},
      p.k + 2);
  std::vector<gm::sampled_entry> entries;
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      double ref = 0, abs_sum = 0;
      for (std::int64_t q = 0; q < p.k; ++q) {
        const double x = to_double(p.ta ? o.a[q * o.lda + i] : o.a[i * o.lda + q]);
        const double y = to_double(p.tb ? o.b[j * o.ldb + q] : o.b[q * o.ldb + j]);
        ref += x * y;
        abs_sum += std::fabs(x * y);
      }
      const double c0 = p.beta == 0.0f ? 0.0 : o.c0[i * o.ldc + j];
      gm::sampled_entry e;
      e.i = i;
      e.j = j;
      e.reference = p.alpha * ref + p.beta * c0;
      e.abs_sum = std::fabs(p.alpha) * abs_sum + std::fabs(p.beta * c0);
      e.value = c[i * o.ldc + j];
      entries.push_back(e);
    }
  }
  const auto v = gm::verify_entries(entries, tol);
  EXPECT_TRUE(v.ok) << what << " " << name_of(p) << ": " << v.summary();
  // Padding columns of C (between n and ldc) are never written.
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = p.n; j < o.ldc; ++j) {
      const float before = o.c0[i * o.ldc + j], after = c[i * o.ldc + j];
      ASSERT_TRUE((std::isnan(before) && std::isnan(after)) || before == after)
          << what << " wrote C[" << i << "][" << j << "] beyond n";
    }
  }
}

template <typename T>
std::vector<float> run_gemm(const problem& p, const operands<T>& o, kc::gemm_isa isa,
                            std::size_t threads, std::optional<kc::gemm_blocking> blk,
                            bool concurrent) {
  std::vector<float> c = o.c0;
  kc::gemm_args<T> g;
  g.trans_a = p.ta;
  g.trans_b = p.tb;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.alpha = p.alpha;
  g.beta = p.beta;
  g.a = o.a.data();
  g.lda = o.lda;
  g.b = o.b.data();
  g.ldb = o.ldb;
  g.c = c.data();
  g.ldc = o.ldc;
  kc::gemm_plan plan(g, isa, threads, blk);
  if (concurrent) {
    std::vector<std::thread> ts;
    for (std::size_t t = 0; t < plan.threads(); ++t) ts.emplace_back([&plan, t] { plan.run(t); });
    for (auto& t : ts) t.join();
  } else {
    plan.run_all();
  }
  return c;
}

std::vector<problem> problems() {
  std::vector<problem> ps;
  // Exact tiles, partial tiles in every direction, tiny, k = 1, odd k (bf16 pairs).
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{24, 64, 32},
                                                                      {1, 1, 1},
                                                                      {13, 33, 17},
                                                                      {37, 70, 1},
                                                                      {50, 45, 61},
                                                                      {7, 100, 9},
                                                                      {100, 3, 40}}) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) ps.push_back({m, n, k, ta, tb, 1.0f, 0.0f});
    }
  }
  ps.push_back({29, 47, 33, false, false, 0.5f, 0.0f});
  ps.push_back({29, 47, 33, false, true, -1.5f, 0.75f});
  ps.push_back({29, 47, 33, true, false, 1.0f, 1.0f});
  return ps;
}

// Blockings small enough that the test shapes span several blocks in m, n and k (and uneven
// ones: kc odd is rounded up to even for bf16).
std::vector<std::optional<kc::gemm_blocking>> blockings() {
  return {std::nullopt, kc::gemm_blocking{24, 8, 32}, kc::gemm_blocking{12, 7, 64}};
}

std::vector<kc::gemm_isa> supported(kc::gemm_dtype dtype) {
  std::vector<kc::gemm_isa> out;
  for (const auto isa : {kc::gemm_isa::scalar, kc::gemm_isa::avx2, kc::gemm_isa::avx512,
                         kc::gemm_isa::avx512_bf16}) {
    if (kc::gemm_isa_supported(isa) && kc::gemm_isa_handles(isa, dtype)) out.push_back(isa);
  }
  return out;
}

}  // namespace

TEST(GemmKernels, Fp32EveryVariantMatchesFp64) {
  for (const auto isa : supported(kc::gemm_dtype::fp32)) {
    for (const auto& blk : blockings()) {
      if (isa == kc::gemm_isa::scalar && blk) continue;  // the reference does not block
      std::uint32_t seed = 1;
      for (const auto& p : problems()) {
        const auto o = make_operands<float>(p, seed++);
        for (const std::size_t threads : {std::size_t{1}, std::size_t{3}}) {
          const auto c = run_gemm(p, o, isa, threads, blk, threads > 1);
          expect_matches_fp64(p, o, c,
                              std::string(kc::to_string(isa)) + " threads=" +
                                  std::to_string(threads) + (blk ? " small blocks" : ""));
        }
      }
    }
  }
}

TEST(GemmKernels, Bf16EveryVariantMatchesFp64) {
  for (const auto isa : supported(kc::gemm_dtype::bf16)) {
    for (const auto& blk : blockings()) {
      if (isa == kc::gemm_isa::scalar && blk) continue;
      std::uint32_t seed = 100;
      for (const auto& p : problems()) {
        const auto o = make_operands<std::uint16_t>(p, seed++);
        for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
          const auto c = run_gemm(p, o, isa, threads, blk, threads > 1);
          expect_matches_fp64(p, o, c,
                              std::string(kc::to_string(isa)) + " threads=" +
                                  std::to_string(threads) + (blk ? " small blocks" : ""));
        }
      }
    }
  }
  if (!kc::gemm_isa_supported(kc::gemm_isa::avx512_bf16)) {
    GTEST_SKIP() << "this CPU lacks AVX512_BF16: only the scalar bf16 reference was tested";
  }
}

TEST(GemmKernels, VectorVariantsAgreeWithScalarReference) {
  const problem p{61, 95, 300, false, false, 1.0f, 0.0f};
  const auto o = make_operands<float>(p, 7);
  const auto ref = run_gemm(p, o, kc::gemm_isa::scalar, 1, std::nullopt, false);
  for (const auto isa : supported(kc::gemm_dtype::fp32)) {
    const auto c = run_gemm(p, o, isa, 2, std::nullopt, true);
    double max_rel = 0;
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        const double r = ref[i * o.ldc + j];
        max_rel = std::max(max_rel, std::fabs(c[i * o.ldc + j] - r) / (std::fabs(r) + 1.0));
      }
    }
    // Different summation orders in fp32 over k = 300: far below 1e-4, far above a wrong answer.
    EXPECT_LT(max_rel, 1e-4) << kc::to_string(isa);
  }
}

TEST(GemmKernels, ZeroKScalesC) {
  const problem p{5, 6, 0, false, false, 1.0f, 0.5f};
  auto o = make_operands<float>(p, 3);
  o.a.resize(1);
  o.b.resize(1);
  for (const auto isa : supported(kc::gemm_dtype::fp32)) {
    const auto c = run_gemm(p, o, isa, 2, std::nullopt, false);
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        EXPECT_FLOAT_EQ(c[i * o.ldc + j], 0.5f * o.c0[i * o.ldc + j]);
      }
    }
  }
}

TEST(GemmKernels, RejectsBadArguments) {
  std::vector<float> a(16), b(16), c(16);
  kc::sgemm_args g;
  g.m = g.n = g.k = 4;
  g.a = a.data();
  g.b = b.data();
  g.c = c.data();
  g.lda = g.ldb = g.ldc = 4;
  EXPECT_NO_THROW(kc::gemm_plan(g, kc::gemm_isa::scalar, 1));
  auto bad = g;
  bad.m = -1;
  EXPECT_THROW(kc::gemm_plan(bad, kc::gemm_isa::scalar, 1), std::invalid_argument);
  bad = g;
  bad.lda = 3;
  EXPECT_THROW(kc::gemm_plan(bad, kc::gemm_isa::scalar, 1), std::invalid_argument);
  bad = g;
  bad.trans_b = true;
  bad.ldb = 3;
  EXPECT_THROW(kc::gemm_plan(bad, kc::gemm_isa::scalar, 1), std::invalid_argument);
  bad = g;
  bad.ldc = 2;
  EXPECT_THROW(kc::gemm_plan(bad, kc::gemm_isa::scalar, 1), std::invalid_argument);
  EXPECT_THROW(kc::gemm_plan(g, kc::gemm_isa::scalar, 0), std::invalid_argument);
  // fp32 inputs on the bf16-only variant.
  EXPECT_THROW(kc::gemm_plan(g, kc::gemm_isa::avx512_bf16, 1), std::invalid_argument);
}

TEST(GemmKernels, IsaNamesRoundTrip) {
  for (const auto isa : {kc::gemm_isa::scalar, kc::gemm_isa::avx2, kc::gemm_isa::avx512,
                         kc::gemm_isa::avx512_bf16}) {
    EXPECT_EQ(kc::parse_gemm_isa(kc::to_string(isa)), isa);
  }
  EXPECT_FALSE(kc::parse_gemm_isa("sse9"));
  EXPECT_TRUE(kc::gemm_isa_supported(kc::gemm_isa::scalar));
  EXPECT_TRUE(kc::gemm_isa_handles(kc::best_gemm_isa(kc::gemm_dtype::bf16), kc::gemm_dtype::bf16));
  EXPECT_TRUE(kc::gemm_isa_handles(kc::best_gemm_isa(kc::gemm_dtype::fp32), kc::gemm_dtype::fp32));
}

TEST(GemmKernels, Bf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(kc::float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(kc::bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(kc::float_to_bf16(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(kc::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): up.
  EXPECT_EQ(kc::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(kc::float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_TRUE(std::isnan(kc::bf16_to_float(kc::float_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(kc::bf16_to_float(kc::float_to_bf16(INFINITY))));
  // Every bf16 value survives the round trip.
  for (std::uint32_t x = 0; x < 0x10000; x += 7) {
    const auto h = static_cast<std::uint16_t>(x);
    if (std::isnan(kc::bf16_to_float(h))) continue;
    EXPECT_EQ(kc::float_to_bf16(kc::bf16_to_float(h)), h);
  }
}

TEST(GemmKernels, PartitionCoversCOnceOnTileBoundaries) {
  const kc::gemm_tile tile{12, 32};
  for (const auto& [m, n] :
       std::vector<std::pair<int, int>>{{1024, 1024}, {100, 7}, {5, 5000}, {4096, 512}, {1, 1}}) {
    for (const std::size_t threads : {1, 2, 3, 4, 6, 8}) {
      const auto parts = kc::partition_gemm(m, n, threads, tile);
      ASSERT_EQ(parts.size(), threads);
      std::vector<int> covered(static_cast<std::size_t>(m) * n, 0);
      for (const auto& p : parts) {
        EXPECT_TRUE(p.m0 % tile.mr == 0 && p.n0 % tile.nr == 0);
        EXPECT_TRUE(p.m1 == m || p.m1 % tile.mr == 0);
        EXPECT_TRUE(p.n1 == n || p.n1 % tile.nr == 0);
        for (auto i = p.m0; i < p.m1; ++i) {
          for (auto j = p.n0; j < p.n1; ++j) ++covered[static_cast<std::size_t>(i * n + j)];
        }
      }
      for (const int c : covered) ASSERT_EQ(c, 1) << m << "x" << n << " threads=" << threads;
    }
  }
  // Two threads: a tall C splits its rows, a wide one its columns; four threads on a square C
  // make a 2x2 grid (the squarest blocks).
  const auto tall = kc::partition_gemm(4096, 64, 2, tile);
  EXPECT_EQ(tall[0].n1 - tall[0].n0, 64);
  const auto wide = kc::partition_gemm(64, 4096, 2, tile);
  EXPECT_EQ(wide[0].m1 - wide[0].m0, 64);
  const auto square = kc::partition_gemm(1024, 1024, 4, tile);
  EXPECT_LT(square[0].m1 - square[0].m0, 1024);
  EXPECT_LT(square[0].n1 - square[0].n0, 1024);
  EXPECT_THROW((void)kc::partition_gemm(8, 8, 0, tile), std::invalid_argument);
}

TEST(GemmKernels, PlanAllocatesPerPartWorkspace) {
  std::vector<float> a(256 * 256), b(256 * 256), c(256 * 256);
  kc::sgemm_args g;
  g.m = g.n = g.k = 256;
  g.a = a.data();
  g.b = b.data();
  g.c = c.data();
  g.lda = g.ldb = g.ldc = 256;
  const auto isa = kc::best_gemm_isa(kc::gemm_dtype::fp32);
  kc::gemm_plan plan(g, isa, 2);
  EXPECT_EQ(plan.threads(), 2u);
  EXPECT_EQ(plan.parts().size(), 2u);
  if (isa != kc::gemm_isa::scalar) {
    EXPECT_GT(plan.workspace_bytes(), 0u);
    EXPECT_EQ(plan.blocking().mc % kc::gemm_micro_tile(isa).mr, 0);
    EXPECT_EQ(plan.blocking().nc % kc::gemm_micro_tile(isa).nr, 0);
  }
}
