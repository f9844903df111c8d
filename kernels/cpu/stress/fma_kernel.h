// A multiply-add load whose result is known bit for bit: many independent recurrences
// acc = acc * a + b (a just below 1, different in every lane, so every step rounds and nothing
// settles within a block) from a fixed start. Every core, every time, must produce the same
// accumulators: a difference is a computing error (gpu-burn's idea, on the CPU). Used by
// stress/cpu, health/cpu_core_speed and health/telemetry_overhead. No harness dependency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace infrabench::stress {

// The widest variant this CPU runs: "avx512", "avx2" or "scalar".
[[nodiscard]] std::string fma_isa();
// Floating-point operations one iteration performs (the variant's chains x lanes x 2).
[[nodiscard]] double fma_flops_per_iteration();
// Runs `iterations` steps of every recurrence and writes the accumulators to `out` (resized).
void fma_block(std::int64_t iterations, std::vector<float>& out);
// Accumulators that differ bit for bit between a result and the reference.
[[nodiscard]] std::size_t fma_mismatches(const std::vector<float>& result,
                                         const std::vector<float>& reference);

}  // namespace infrabench::stress
