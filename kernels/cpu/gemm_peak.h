// The CPU's practical arithmetic peak: many independent multiply-add chains per instruction set,
// enough of them to cover every FMA pipe's latency, so the loop runs at the issue limit of the
// vector units (or, for AMX, independent tile dot products that keep the tile unit busy). Also a
// dependent register-register add chain (one add per cycle on every x86 core) that measures the
// clock the core actually runs at, and the table of how many of each instruction a core issues per
// cycle (clock x width: what the measured peak is judged against).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::kernels::cpu {

enum class peak_isa {
  avx2_fp32,    // vfmadd231ps ymm: 8 lanes x 2 flop
  avx512_fp32,  // vfmadd231ps zmm: 16 lanes x 2 flop
  avx512_bf16,  // vdpbf16ps zmm: 16 lanes x (2 products + 2 adds) = 64 flop
  avx512_fp16,  // vfmadd231ph zmm: 32 lanes x 2 flop
  amx_bf16,     // tdpbf16ps on 16x32 bf16 tiles into 16x16 fp32: 16 x 16 x 32 x 2 flop
  amx_int8,     // tdpbssd on 16x64 int8 tiles into 16x16 int32: 16 x 16 x 64 x 2 ops
};

// Every variant, in the order of the gemm/cpu_peak axis.
[[nodiscard]] const std::vector<peak_isa>& all_peak_isas();
[[nodiscard]] std::string_view to_string(peak_isa isa);
[[nodiscard]] std::optional<peak_isa> parse_peak_isa(std::string_view name);
// Empty when this CPU (and, for AMX, the kernel) runs the variant, else the reason (the missing
// CPUID feature, or the kernel's refusal of the AMX tile state).
[[nodiscard]] std::string peak_isa_unsupported_reason(peak_isa isa);
// Whether the variant uses AMX tiles (its percentages are of an "amx" peak, not an "fma" one).
[[nodiscard]] bool is_amx(peak_isa isa);

// Floating-point operations (int8: integer operations) one iteration of run_peak_chains performs.
[[nodiscard]] double peak_flops_per_iteration(peak_isa isa);
// Flops one instruction performs (per core per cycle, divided by this, gives instructions per
// cycle).
[[nodiscard]] double peak_flops_per_instruction(peak_isa isa);

// Runs `iterations` of the independent-chain loop and returns a value that depends on every chain
// (so the compiler cannot drop the work). Throws std::invalid_argument when the CPU lacks `isa`.
float run_peak_chains(peak_isa isa, std::int64_t iterations);

// Adds executed by one iteration of run_add_chain.
inline constexpr int add_chain_per_iteration = 8;
// `iterations` x 8 dependent integer adds: one per cycle, so adds / seconds is the clock.
[[nodiscard]] std::uint64_t run_add_chain(std::int64_t iterations);

// ---- clock x width: the CPU figures ------------------------------------------------------------
// How many instructions of a variant one core issues per cycle, by microarchitecture. All CPU
// figures live here, in one table, with where they come from.

struct cpu_model {
  std::string vendor;  // CPUID vendor string: "GenuineIntel", "AuthenticAMD"
  int family = 0;      // display family (base + extended)
  int model = 0;       // display model (base + extended << 4)
};
// This CPU, from CPUID.
[[nodiscard]] cpu_model this_cpu_model();

struct issue_rate {
  double per_cycle = 0;  // instructions of the variant per cycle per core
  std::string core;      // "Zen 4", "Sapphire Rapids / Emerald Rapids"
  std::string basis;     // one line: the units and where the figure comes from
};
// The issue rate of `isa` on `cpu`; nullopt when the microarchitecture (or the variant on it) is
// not in the table: then no fraction of clock x width is reported, rather than a guess.
[[nodiscard]] std::optional<issue_rate> peak_issue_rate(peak_isa isa, const cpu_model& cpu);

// Clock x width in GFLOP/s: clock (GHz) x cores x instructions per cycle x flops per instruction.
[[nodiscard]] double clock_x_width_gflops(peak_isa isa, double clock_ghz, double cores,
                                          double per_cycle);

}  // namespace infrabench::kernels::cpu
