// gemm/onednn_fp32 and gemm/onednn_bf16 when oneDNN was not found at build time: listed, and
// skipped with the reason, so a report says why the reference is missing rather than omitting it.
#include <cstdint>
#include <string>

#include "gemm_common.h"
#include "infrabench/benchmark.h"
#include "infrabench/capabilities.h"
#include "infrabench/state.h"

namespace {

namespace gb = infrabench::gemm_bench;

const infrabench::requirement onednn_built{
    "onednn",
    [](const infrabench::capabilities&) -> std::string {
      return "oneDNN was not found when infrabench was built (apt-get install libdnnl-dev, "
             "then rebuild)";
    },
    [](const infrabench::capabilities&) { return infrabench::reason_code::not_built; }};

void not_built(infrabench::state& st) {
  st.skip(infrabench::reason_code::not_built, onednn_built.check(st.caps()));
}

INFRABENCH_REGISTER(not_built, "gemm/onednn_fp32")
    .describe("reference: oneDNN fp32 matmul primitive (not built: libdnnl-dev missing)")
    .require(onednn_built)
    .produces(gb::cpu_gemm_metrics())
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options());

INFRABENCH_REGISTER(not_built, "gemm/onednn_bf16")
    .describe("reference: oneDNN bf16 matmul primitive (not built: libdnnl-dev missing)")
    .require(onednn_built)
    .produces(gb::cpu_gemm_metrics())
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options());

}  // namespace
