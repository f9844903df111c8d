// The CPU's practical arithmetic peak: many independent multiply-add chains per instruction set,
// enough of them to cover every FMA pipe's latency, so the loop runs at the issue limit of the
// vector units. Also a dependent integer-add chain (one add per cycle on every x86 core) that
// measures the clock the core actually runs at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infrabench::kernels::cpu {

enum class peak_isa {
  avx2_fp32,    // vfmadd231ps ymm: 8 lanes x 2 flop
  avx512_fp32,  // vfmadd231ps zmm: 16 lanes x 2 flop
  avx512_bf16,  // vdpbf16ps zmm: 16 lanes x (2 products + 2 adds) = 64 flop
  avx512_fp16,  // vfmadd231ph zmm: 32 lanes x 2 flop
};

[[nodiscard]] std::string_view to_string(peak_isa isa);
[[nodiscard]] std::optional<peak_isa> parse_peak_isa(std::string_view name);
// Empty when this CPU runs the variant, else the reason (the missing CPUID feature).
[[nodiscard]] std::string peak_isa_unsupported_reason(peak_isa isa);

// Floating-point operations one iteration of run_peak_chains performs.
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

}  // namespace infrabench::kernels::cpu
