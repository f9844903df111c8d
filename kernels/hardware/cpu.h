// CPU figures, each with its source: the floating-point work one vector instruction does (the
// instruction-set reference), from which gemm/cpu_peak turns instructions per second into
// FLOP/s. Clocks and port counts are not figures here: the CPU changes from machine to machine,
// so gemm/cpu_peak measures them.
#pragma once

#include <string_view>
#include <vector>

namespace infrabench::kernels::hardware {

// The multiply-add instructions the CPU peak is measured with.
enum class cpu_vector_op {
  avx2_fma_fp32,
  avx512_fma_fp32,
  avx512_dpbf16_fp32,
  avx512_fma_fp16,
  amx_tdpbf16ps,  // one tile instruction: C 16x16 fp32 += A 16x32 bf16 . B 32x16 bf16
  amx_tdpbssd,    // one tile instruction: C 16x16 int32 += A 16x64 int8 . B 64x16 int8
};

struct cpu_op_figure {
  cpu_vector_op op;
  std::string_view instruction;  // "vfmadd231ps zmm"
  int lanes = 0;                 // results per instruction
  int flops_per_lane = 0;        // operations per result (AMX INT8: integer operations)
  std::string_view source;
  [[nodiscard]] double flops() const { return static_cast<double>(lanes) * flops_per_lane; }
};
[[nodiscard]] const std::vector<cpu_op_figure>& cpu_op_table();
// Floating-point operations one instruction of `op` performs.
[[nodiscard]] double cpu_flops_per_instruction(cpu_vector_op op);

}  // namespace infrabench::kernels::hardware
