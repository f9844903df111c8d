#include "hardware/cpu.h"

namespace infrabench::kernels::hardware {

const std::vector<cpu_op_figure>& cpu_op_table() {
  // Intel 64 and IA-32 Architectures Software Developer's Manual, vol. 2 (instruction reference):
  // an FMA is a multiply and an add per lane; VDPBF16PS multiplies two bf16 pairs and adds both
  // products into each fp32 lane (2 multiplies + 2 adds).
  static const std::vector<cpu_op_figure> table = {
      {cpu_vector_op::avx2_fma_fp32, "vfmadd231ps ymm", 8, 2, "Intel SDM vol. 2: VFMADD231PS"},
      {cpu_vector_op::avx512_fma_fp32, "vfmadd231ps zmm", 16, 2, "Intel SDM vol. 2: VFMADD231PS"},
      {cpu_vector_op::avx512_dpbf16_fp32, "vdpbf16ps zmm", 16, 4, "Intel SDM vol. 2: VDPBF16PS"},
      {cpu_vector_op::avx512_fma_fp16, "vfmadd231ph zmm", 32, 2, "Intel SDM vol. 2: VFMADD231PH"},
      // A tile product: 16x16 results, each a sum of 32 bf16 (64 int8) products: K multiplies and
      // K adds per result.
      {cpu_vector_op::amx_tdpbf16ps, "tdpbf16ps tmm", 16 * 16, 32 * 2,
       "Intel SDM vol. 2: TDPBF16PS (Intel AMX)"},
      {cpu_vector_op::amx_tdpbssd, "tdpbssd tmm", 16 * 16, 64 * 2,
       "Intel SDM vol. 2: TDPBSSD (Intel AMX)"},
  };
  return table;
}

double cpu_flops_per_instruction(cpu_vector_op op) {
  for (const auto& f : cpu_op_table()) {
    if (f.op == op) return f.flops();
  }
  return 0;
}

}  // namespace infrabench::kernels::hardware
