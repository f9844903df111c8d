// Google Benchmark micro-benchmarks of our CPU GEMM on one thread, per variant, and the FMA-peak
// kernel they are compared with, for a developer tuning the micro-kernels or the blocking (the
// suite's numbers, with references and verification, come from `infrabench run --filter gemm`).
//   build/microbench/infrabench_kernel_bench --benchmark_filter=gemm
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemm_peak.h"

namespace {

namespace kc = infrabench::kernels::cpu;

template <typename T>
void gemm(benchmark::State& st, kc::gemm_isa isa) {
  if (!kc::gemm_isa_supported(isa)) {
    st.SkipWithError((std::string("this CPU lacks ") + std::string(kc::to_string(isa))).c_str());
    return;
  }
  const std::int64_t n = st.range(0);
  std::vector<T> a(static_cast<std::size_t>(n * n)), b(a.size());
  std::vector<float> c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float v = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.0f;
    if constexpr (std::is_same_v<T, float>) {
      a[i] = v;
      b[i] = -v;
    } else {
      a[i] = kc::float_to_bf16(v);
      b[i] = kc::float_to_bf16(-v);
    }
  }
  kc::gemm_args<T> g;
  g.m = g.n = g.k = n;
  g.a = a.data();
  g.b = b.data();
  g.c = c.data();
  g.lda = g.ldb = g.ldc = n;
  kc::gemm_plan plan(g, isa, 1);
  for (auto _ : st) {
    plan.run(0);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

void gemm_fp32(benchmark::State& st, kc::gemm_isa isa) {
  gemm<float>(st, isa);
}
void gemm_bf16(benchmark::State& st, kc::gemm_isa isa) {
  gemm<std::uint16_t>(st, isa);
}

void gemm_peak(benchmark::State& st, kc::peak_isa isa) {
  if (const auto why = kc::peak_isa_unsupported_reason(isa); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  constexpr std::int64_t iterations = 100000;
  for (auto _ : st) benchmark::DoNotOptimize(kc::run_peak_chains(isa, iterations));
  st.counters["GFLOP/s"] = benchmark::Counter(kc::peak_flops_per_iteration(isa) * iterations,
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

BENCHMARK_CAPTURE(gemm_fp32, scalar, kc::gemm_isa::scalar)->Arg(128);
BENCHMARK_CAPTURE(gemm_fp32, avx2, kc::gemm_isa::avx2)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(gemm_fp32, avx512, kc::gemm_isa::avx512)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(gemm_bf16, avx512_bf16, kc::gemm_isa::avx512_bf16)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(gemm_peak, avx2_fp32, kc::peak_isa::avx2_fp32);
BENCHMARK_CAPTURE(gemm_peak, avx512_fp32, kc::peak_isa::avx512_fp32);
BENCHMARK_CAPTURE(gemm_peak, avx512_bf16, kc::peak_isa::avx512_bf16);

}  // namespace
