// gemm/cpu_peak: the CPU's practical multiply-add peak per instruction set, on one core and on
// all: independent FMA (or vdpbf16ps) chains on every pinned thread. Every other CPU GEMM result
// reports its fraction of this. Beside GFLOP/s: the clock the cores ran at (a dependent
// integer-add chain, one add per cycle) and the vector instructions retired per cycle per core it
// implies (2.0 on a core with two FMA pipes of that width).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu/gemm_peak.h"
#include "gemm_common.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;

// ~0.3-1 ms per call at 3-4 GHz; the harness batches calls into samples of at least 1 ms.
constexpr std::int64_t chain_iterations = 100000;

// GHz from the add chain on every thread at once (so turbo states match the FMA run): the median
// over threads and repetitions.
double measure_clock_ghz(infrabench::thread_pool& pool) {
  constexpr std::int64_t iterations = 1 << 19;  // 4M adds, ~1 ms
  std::vector<double> ghz;
  std::vector<double> per_thread(pool.size());
  for (int rep = 0; rep < 5; ++rep) {
    pool.run([&](std::size_t t) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto sink = kc::run_add_chain(iterations);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      per_thread[t] = sink == 0 ? 0.0 : static_cast<double>(sink) / s / 1e9;
    });
    ghz.insert(ghz.end(), per_thread.begin(), per_thread.end());
  }
  std::sort(ghz.begin(), ghz.end());
  return ghz[ghz.size() / 2];
}

void cpu_peak(infrabench::state& st) {
  const auto isa = kc::parse_peak_isa(st.get_string("isa"));
  if (!isa) st.fail("unknown isa " + st.get_string("isa"));  // the axis choices prevent it
  if (const auto why = kc::peak_isa_unsupported_reason(*isa); !why.empty()) st.skip(why);

  infrabench::thread_pool pool(static_cast<std::size_t>(st.get_int64("threads")));
  const double threads = static_cast<double>(pool.size());
  st.add_flops(kc::peak_flops_per_iteration(*isa) * static_cast<double>(chain_iterations) *
               threads);
  std::vector<float> sink(pool.size());
  const std::function<void(std::size_t)> body = [&](std::size_t t) {
    sink[t] += kc::run_peak_chains(*isa, chain_iterations);
  };
  st.exec([&] { pool.run(body); });

  const double gflops = gb::median_gflops(
      st, kc::peak_flops_per_iteration(*isa) * static_cast<double>(chain_iterations) * threads);
  const double ghz = measure_clock_ghz(pool);
  st.add_metric("clock_ghz", "GHz", ghz, true,
                "dependent integer adds (1 per cycle) / second, median over threads and 5 runs "
                "right after the timed samples",
                infrabench::metric_role::information);
  if (ghz > 0) {
    st.add_metric("instr_per_cycle", "instr/cycle",
                  gflops / (ghz * threads * kc::peak_flops_per_instruction(*isa)), true,
                  "median GFLOP/s / (clock x threads x " +
                      std::to_string(static_cast<int>(kc::peak_flops_per_instruction(*isa))) +
                      " flop per instruction): vector multiply-add issue rate per core",
                  infrabench::metric_role::information);
  }
  st.check(std::all_of(sink.begin(), sink.end(), [](float v) { return v == v; }),
           "an accumulator became NaN");
}

INFRABENCH_REGISTER(cpu_peak, "gemm/cpu_peak")
    .describe(
        "CPU multiply-add peak per ISA: independent FMA / vdpbf16ps chains on pinned threads; "
        "GFLOP/s, clock and instructions per cycle")
    .add_string_axis(
        "isa", {"avx2_fp32", "avx512_fp32", "avx512_bf16", "avx512_fp16"},
        infrabench::choice_axis("avx2_fp32 (ymm FMA), avx512_fp32 (zmm FMA), avx512_bf16 "
                                "(vdpbf16ps), avx512_fp16 (vfmadd231ph)",
                                {"avx2_fp32", "avx512_fp32", "avx512_bf16", "avx512_fp16"}))
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options());

}  // namespace
