// gemm/cpu_peak: the CPU's practical multiply-add peak per ISA, on one core and on all:
// independent FMA (vdpbf16ps, AMX tile) chains on every pinned thread. Every other CPU GEMM result
// reports its fraction of this. Beside GFLOP/s: the clock the cores ran at (a dependent
// integer-add chain, one add per cycle), the vector instructions retired per cycle per core it
// implies (2.0 on a core with two FMA pipes of that width), and the fraction of clock x width
// (kernels/cpu/gemm_peak.h's table) the measurement reached.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu/gemm_peak.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/gemm_support.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Chain iterations per call: ~0.2-1 ms of vector work (AMX: ~1 ms at one tile op per 16 cycles).
std::int64_t chain_iterations(kc::peak_isa isa) {
  return kc::is_amx(isa) ? 20000 : 100000;
}

// GHz from the add chain on every thread at once (so turbo states match the FMA run): the fastest
// over threads and repetitions. A dependent chain cannot beat one add per cycle, while a vCPU the
// hypervisor holds for part of a run only slows it: a median let such holds read the clock 10% low
// (CI, 2-vCPU EPYC VM: all-thread AVX2 at 110% of clock x width).
double measure_clock_ghz(infrabench::thread_pool& pool) {
  constexpr std::int64_t iterations = 1 << 19;  // 4M adds, ~1 ms
  std::vector<double> ghz;
  std::vector<double> per_thread(pool.size());
  for (int rep = 0; rep < 5; ++rep) {
    pool.run([&](std::size_t t) {
      const auto t0 = clock_type::now();
      const auto sink = kc::run_add_chain(iterations);
      per_thread[t] = sink == 0 ? 0.0 : static_cast<double>(sink) / seconds_since(t0) / 1e9;
    });
    ghz.insert(ghz.end(), per_thread.begin(), per_thread.end());
  }
  return *std::max_element(ghz.begin(), ghz.end());
}

// Samples of `calls` chain runs, each thread timing its own: the sample's time is the slowest
// thread's. Waking the pool's threads (tens of microseconds on a VM whose idle vCPUs halt) stays
// out of the time, so the peak is the units' rate, not the units' rate less a dispatch latency.
void time_chains(infrabench::state& st, infrabench::thread_pool& pool, kc::peak_isa isa,
                 std::vector<float>& sink) {
  std::vector<double> busy_s(pool.size());
  const std::int64_t iterations = chain_iterations(isa);
  st.exec_batched(
      [&](std::int64_t calls) {
        pool.run([&](std::size_t t) {
          const auto t0 = clock_type::now();
          for (std::int64_t c = 0; c < calls; ++c) sink[t] += kc::run_peak_chains(isa, iterations);
          busy_s[t] = seconds_since(t0);
        });
        return *std::max_element(busy_s.begin(), busy_s.end()) / static_cast<double>(calls);
      },
      "cpu_steady_clock per thread (the slowest thread's time)");
}

// pct_of_clock_x_width: the measured peak against clock x threads x issue rate x flops per
// instruction, where the table knows this core (information: it judges the kernel and the
// machine, not the CPU's speed).
void report_clock_x_width(infrabench::state& st, kc::peak_isa isa, double gflops, double ghz,
                          double threads) {
  const auto rate = kc::peak_issue_rate(isa, kc::this_cpu_model());
  if (!rate || ghz <= 0) return;
  const double ideal = kc::clock_x_width_gflops(isa, ghz, threads, rate->per_cycle);
  const std::string figures =
      rate->core + ": " + gb::short_number(rate->per_cycle) + " x " +
      std::to_string(static_cast<int>(kc::peak_flops_per_instruction(isa))) +
      " flop per cycle per core (" + rate->basis + ")";
  st.add_metric("clock_x_width_gflops", "GFLOP/s", ideal, true,
                "measured clock x threads x " + figures, infrabench::metric_role::information);
  st.add_metric("pct_of_clock_x_width", "%", 100.0 * gflops / ideal, true,
                "median GFLOP/s / clock_x_width_gflops", infrabench::metric_role::information);
  if (gflops < 0.97 * ideal) {
    st.add_warning("the peak kernel reached " + gb::short_number(100.0 * gflops / ideal) +
                   "% of clock x width (" + figures +
                   "): a busy or throttled core, or a kernel short of independent chains");
  }
}

void cpu_peak(infrabench::state& st) {
  const auto isa = kc::parse_peak_isa(st.get_string("isa"));
  if (!isa) st.fail("unknown isa " + st.get_string("isa"));  // the axis choices prevent it
  if (const auto why = kc::peak_isa_unsupported_reason(*isa); !why.empty()) st.skip(why);

  infrabench::thread_pool pool(static_cast<std::size_t>(st.get_int64("threads")));
  const double threads = static_cast<double>(pool.size());
  const double flops_per_call =
      kc::peak_flops_per_iteration(*isa) * static_cast<double>(chain_iterations(*isa)) * threads;
  st.add_flops(flops_per_call);
  std::vector<float> sink(pool.size());
  time_chains(st, pool, *isa, sink);

  const double gflops = gb::median_gflops(st, flops_per_call);
  const double ghz = measure_clock_ghz(pool);
  st.add_metric("clock_ghz", "GHz", ghz, true,
                "dependent integer adds (1 per cycle) / second, fastest of all threads x 5 runs "
                "right after the timed samples",
                infrabench::metric_role::information);
  if (ghz > 0) {
    st.add_metric("instr_per_cycle", "instr/cycle",
                  gflops / (ghz * threads * kc::peak_flops_per_instruction(*isa)), true,
                  "median GFLOP/s / (clock x threads x " +
                      std::to_string(static_cast<int>(kc::peak_flops_per_instruction(*isa))) +
                      " flop per instruction): vector (tile) instruction issue rate per core",
                  infrabench::metric_role::information);
  }
  report_clock_x_width(st, *isa, gflops, ghz, threads);
  st.check(std::all_of(sink.begin(), sink.end(), [](float v) { return v == v; }),
           "an accumulator became NaN");
}

std::vector<std::string> isa_names() {
  std::vector<std::string> out;
  for (const auto isa : kc::all_peak_isas()) out.emplace_back(kc::to_string(isa));
  return out;
}

INFRABENCH_REGISTER(cpu_peak, "gemm/cpu_peak")
    .describe(
        "CPU multiply-add peak per ISA: independent FMA / vdpbf16ps / AMX tile chains on pinned "
        "threads; GFLOP/s (int8: GOP/s), clock, instructions per cycle and % of clock x width")
    .produces_work(infrabench::work_kind::flops)
    .headline("gflops")
    .produces("clock_ghz", "GHz", infrabench::better::higher, infrabench::metric_role::information)
    .produces("instr_per_cycle", "instr/cycle", infrabench::better::higher,
              infrabench::metric_role::information)
    .produces("clock_x_width_gflops", "GFLOP/s", infrabench::better::higher,
              infrabench::metric_role::information)
    .produces("pct_of_clock_x_width", "%", infrabench::better::higher,
              infrabench::metric_role::information)
    .relate("pct_of_clock_x_width", infrabench::relation_kind::fraction_of, "clock_x_width_gflops")
    .add_string_axis("isa", {"avx2_fp32", "avx512_fp32", "avx512_bf16", "avx512_fp16", "amx_bf16"},
                     infrabench::choice_axis(
                         "avx2_fp32 (ymm FMA), avx512_fp32 (zmm FMA), avx512_bf16 (vdpbf16ps), "
                         "avx512_fp16 (vfmadd231ph), amx_bf16 (tdpbf16ps), amx_int8 (tdpbssd)",
                         isa_names()))
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options());

}  // namespace
