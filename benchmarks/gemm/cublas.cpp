// gemm/cublas and gemm/cublaslt: NVIDIA's GEMMs as the GPU headline. cublasGemmEx for fp32, tf32,
// fp16 and bf16; cublasLtMatmul (heuristic algorithm, 32 MiB workspace) for the same and fp8 e4m3
// on sm_89+ (unit per-tensor scales, fast accumulation off unless asked: torch._scaled_mm's
// default). Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, so no
// data is transposed. Operands are random (uniform, never zeros: zeros draw less power and run at a
// higher clock). Timed by the harness (state::exec_gpu: a time-based warm-up, then a batch of GEMMs
// queued behind a blocking kernel, one event pair per batch; cache=cold flushes L2 before every
// GEMM), every configuration verified on the device against fp64 on sampled entries, reported as
// a fraction of the datasheet peak and of the peak at the SM clock measured in the timed windows.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_common.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "shared/gemm_support.h"

namespace {

namespace gb = infrabench::gemm_bench;
namespace gc = infrabench::gemm_cuda;
namespace gm = infrabench::kernels::gemm_model;
namespace kcu = infrabench::kernels::cuda;

constexpr std::size_t workspace_bytes = std::size_t{32} << 20;

void check_cublas(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(what + ": " + cublasGetStatusString(s));
}

cudaDataType_t cuda_type(kcu::gemm_elem e) {
  switch (e) {
    case kcu::gemm_elem::fp32:
      return CUDA_R_32F;
    case kcu::gemm_elem::fp16:
      return CUDA_R_16F;
    case kcu::gemm_elem::bf16:
      return CUDA_R_16BF;
    case kcu::gemm_elem::fp8_e4m3:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(const gc::dtype_spec& dt) {
  return dt.name == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

struct prepared {
  gm::gemm_shape shape;
  gc::dtype_spec dt;
  gc::gpu_info gpu;
};

prepared prepare(infrabench::state& st) {
  prepared p{gb::shape_of(st.get_string("shape")), gc::dtype_of(st.get_string("dtype")),
             gc::current_gpu()};
  gc::require_gpu(st, p.gpu, p.dt, p.shape, workspace_bytes);
  return p;
}

void finish(infrabench::state& st, const prepared& p, const gc::operands& o, const gc::stream& s,
            const std::string& what, const infrabench::gpu_exec_report& timing) {
  const double gflops = gb::median_gflops(st, gm::gemm_flops(p.shape));
  gc::report_gpu_clocks(st, p.gpu, timing);
  gb::report_verification(st, gc::verify_on_device(o, p.dt, s), what);
  gc::report_gpu_peak(st, p.gpu, p.dt, gflops, timing);
}

void cublas_gemm(infrabench::state& st) {
  const prepared p = prepare(st);
  gc::stream s;
  const gc::operands o(p.shape, p.dt, gb::parse_trans(st.get_string("trans")), s);
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  const gc::device_buffer ws(workspace_bytes);
  struct guard {
    cublasHandle_t h;
    ~guard() { (void)cublasDestroy(h); }
  } g{h};
  check_cublas(cublasSetStream(h, s.get()), "cublasSetStream");
  check_cublas(cublasSetWorkspace(h, ws.get(), workspace_bytes), "cublasSetWorkspace");
  const float alpha = 1.0f, beta = 0.0f;
  const auto& l = o.l;
  const auto call = [&] {
    return cublasGemmEx(h, l.trans.b ? CUBLAS_OP_T : CUBLAS_OP_N,
                        l.trans.a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(p.shape.n),
                        static_cast<int>(p.shape.m), static_cast<int>(p.shape.k), &alpha, o.b.get(),
                        cuda_type(p.dt.ab), static_cast<int>(l.ldb), o.a.get(), cuda_type(p.dt.ab),
                        static_cast<int>(l.lda), &beta, o.c.get(), cuda_type(p.dt.c),
                        static_cast<int>(l.ldc), compute_type(p.dt), CUBLAS_GEMM_DEFAULT);
  };
  check_cublas(call(), "cublasGemmEx (" + p.dt.name + ")");
  st.add_flops(gm::gemm_flops(p.shape));
  const auto timing = gc::time_gemm(st, s, [&] { check_cublas(call(), "cublasGemmEx"); });
  finish(st, p, o, s, "cublasGemmEx " + p.dt.name, timing);
}

// The cuBLASLt objects of one configuration, null until made.
struct lt_objects {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
};

// Destroys the objects made (on every path, a skip or an error included), the handle last.
struct lt_guard {
  lt_objects& x;
  ~lt_guard() {
    if (x.pref) (void)cublasLtMatmulPreferenceDestroy(x.pref);
    for (auto* y : {x.la, x.lb, x.lc, x.ld}) {
      if (y) (void)cublasLtMatrixLayoutDestroy(y);
    }
    if (x.desc) (void)cublasLtMatmulDescDestroy(x.desc);
    if (x.h) (void)cublasLtDestroy(x.h);
  }
};

// The operation descriptor: compute type, the operands' ops and, for fp8, fast accumulation.
void describe_matmul(infrabench::state& st, lt_objects& x, const prepared& p, const gb::layout& l,
                     bool fp8, bool fast_accum) {
  // Column-major view: first operand is our B (n x k after its op), second our A.
  const cublasOperation_t op_first = l.trans.b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = l.trans.a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescCreate(&x.desc, compute_type(p.dt), CUDA_R_32F),
               "MatmulDescCreate");
  check_cublas(cublasLtMatmulDescSetAttribute(x.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                              sizeof(op_first)),
               "set TRANSA");
  check_cublas(cublasLtMatmulDescSetAttribute(x.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                              sizeof(op_second)),
               "set TRANSB");
  // fp8 as torch._scaled_mm calls it with unit scales: no scale pointers (cuBLASLt's default
  // per-tensor scale is 1.0, the data is already in e4m3's range; an H200 refused this GEMM,
  // "not supported", with the scales passed as device pointers 4 bytes apart), a bf16 output
  // without amax (that is for an fp8 output). Fast accumulation (no periodic promotion of the
  // tensor cores' partial sums to fp32) is set either way, never left to the default, so the
  // figure says which it compares with: torch._scaled_mm(use_fast_accum=False) by default.
  if (fp8) {
    const std::int8_t fast = fast_accum ? 1 : 0;
    check_cublas(cublasLtMatmulDescSetAttribute(x.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                sizeof(fast)),
                 "set FAST_ACCUM");
    st.set_axis_display("fast_accum", fast_accum ? "1 (on: torch._scaled_mm use_fast_accum=True)"
                                                 : "0 (off: torch._scaled_mm default)");
  }
}

// The four matrix layouts in the column-major view: B first, then A, C and D (D is C, in place).
void create_layouts(lt_objects& x, const prepared& p, const gb::layout& l) {
  const auto n = static_cast<std::uint64_t>(p.shape.n), m = static_cast<std::uint64_t>(p.shape.m),
             k = static_cast<std::uint64_t>(p.shape.k);
  check_cublas(cublasLtMatrixLayoutCreate(&x.la, cuda_type(p.dt.ab), l.trans.b ? k : n,
                                          l.trans.b ? n : k, l.ldb),
               "layout B");
  check_cublas(cublasLtMatrixLayoutCreate(&x.lb, cuda_type(p.dt.ab), l.trans.a ? m : k,
                                          l.trans.a ? k : m, l.lda),
               "layout A");
  check_cublas(cublasLtMatrixLayoutCreate(&x.lc, cuda_type(p.dt.c), n, m, l.ldc), "layout C");
  check_cublas(cublasLtMatrixLayoutCreate(&x.ld, cuda_type(p.dt.c), n, m, l.ldc), "layout D");
}

// cuBLASLt's first heuristic choice within the workspace; skips when it has none.
cublasLtMatmulHeuristicResult_t pick_algorithm(infrabench::state& st, lt_objects& x,
                                               const prepared& p) {
  check_cublas(cublasLtMatmulPreferenceCreate(&x.pref), "PreferenceCreate");
  const std::uint64_t ws_bytes = workspace_bytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(
                   x.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)),
               "set workspace");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check_cublas(cublasLtMatmulAlgoGetHeuristic(x.h, x.desc, x.la, x.lb, x.lc, x.ld, x.pref, 1,
                                              &heuristic, &found),
               "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) st.skip("cuBLASLt has no algorithm for " + p.dt.name + " at this shape/layout");
  return heuristic;
}

// Runs the matmul once (its error named with the dtype), then under the harness's timing.
infrabench::gpu_exec_report time_matmul(infrabench::state& st, const prepared& p,
                                        const gc::operands& o, const gc::stream& s,
                                        const lt_objects& x, const cublasLtMatmulAlgo_t& algo,
                                        const gc::device_buffer& ws) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaStream_t stream = s.get();
  const auto call = [&] {
    return cublasLtMatmul(x.h, x.desc, &alpha, o.b.get(), x.la, o.a.get(), x.lb, &beta, o.c.get(),
                          x.lc, o.c.get(), x.ld, &algo, ws.get(), workspace_bytes, stream);
  };
  check_cublas(call(), "cublasLtMatmul (" + p.dt.name + ")");
  st.add_flops(gm::gemm_flops(p.shape));
  return gc::time_gemm(st, s, [&] { check_cublas(call(), "cublasLtMatmul"); });
}

// What the verification names: the call and, for fp8, the scales and accumulation it ran with.
std::string lt_description(const prepared& p, bool fp8, bool fast_accum) {
  return "cublasLtMatmul " + p.dt.name +
         (fp8 ? std::string(" (unit scales: cuBLASLt's default, fast accumulation ") +
                    (fast_accum ? "on)" : "off)")
              : std::string());
}

void cublaslt_gemm(infrabench::state& st) {
  const prepared p = prepare(st);
  const auto trans = gb::parse_trans(st.get_string("trans"));
  if (p.dt.ab == kcu::gemm_elem::fp8_e4m3 && !(trans.b && !trans.a)) {
    st.skip("cuBLASLt fp8 needs the TN layout: B stored n x k (trans=nt)");
  }
  gc::stream s;
  const gc::operands o(p.shape, p.dt, trans, s);
  const auto& l = o.l;
  lt_objects x;
  check_cublas(cublasLtCreate(&x.h), "cublasLtCreate");
  const bool fp8 = p.dt.ab == kcu::gemm_elem::fp8_e4m3;
  const bool fast_accum = st.get_int64("fast_accum") != 0;
  if (fast_accum && !fp8) st.skip("fast_accum applies to fp8 only (" + p.dt.name + " given)");
  const lt_guard g{x};
  const gc::device_buffer ws(workspace_bytes);
  describe_matmul(st, x, p, l, fp8, fast_accum);
  create_layouts(x, p, l);
  const cublasLtMatmulHeuristicResult_t heuristic = pick_algorithm(st, x, p);
  const auto timing = time_matmul(st, p, o, s, x, heuristic.algo, ws);
  finish(st, p, o, s, lt_description(p, fp8, fast_accum), timing);
}

std::vector<std::string> gpu_shapes() {
  return {"1024",
          "2048",
          "4096",
          "8192",
          "llama3-8b.qkv",
          "llama3-8b.attn_out",
          "llama3-8b.mlp_up",
          "llama3-8b.mlp_down"};
}

std::int64_t host_memory(const infrabench::config& cfg) {
  (void)gb::shape_of(std::get<std::string>(gb::config_value(cfg, "shape")));  // bad input: exit 2
  return std::int64_t{16} << 20;  // operands live on the GPU; this is the host side
}

INFRABENCH_REGISTER(cublas_gemm, "gemm/cublas")
    .describe(
        "cublasGemmEx fp32/tf32/fp16/bf16 (fp32 accumulation) on random data, harness GPU timing "
        "(L2 hot by default, cache=cold flushes it), verified on the device against fp64; % of "
        "the datasheet peak and of the peak at the SM clock measured in the timed windows")
    .produces(gc::gpu_gemm_metrics())
    .measures(infrabench::data_hop::compute)  // the roofline's FLOP model of the GPU step
    .require(infrabench::req::cuda)
    .require(infrabench::req::cublas)
    .scope(infrabench::rank_scope::every_rank)  // one rank per GPU: each measures its own
    .add_string_axis("shape", gpu_shapes(), gb::shape_axis_options())
    .add_string_axis("dtype", {"fp32", "tf32", "fp16", "bf16"},
                     infrabench::choice_axis("A/B (and C) type; tf32 = fp32 data on tensor cores",
                                             {"fp32", "tf32", "fp16", "bf16"}))
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .add_string_axis("cache", gc::cache_values(), gc::cache_axis_options())
    .memory_estimate(host_memory);

INFRABENCH_REGISTER(cublaslt_gemm, "gemm/cublaslt")
    .describe(
        "cublasLtMatmul (heuristic algorithm, 32 MiB workspace) fp32/tf32/fp16/bf16 and fp8 e4m3 "
        "(sm_89+, bf16 out, unit per-tensor scales, fast accumulation per the fast_accum axis) on "
        "random data, harness GPU timing (L2 hot by default, cache=cold flushes it), verified on "
        "the device; % of the datasheet peak")
    .produces(gc::gpu_gemm_metrics())
    .require(infrabench::req::cuda)
    .require(infrabench::req::cublas)
    .scope(infrabench::rank_scope::every_rank)  // one rank per GPU: each measures its own
    .add_string_axis("shape", gpu_shapes(), gb::shape_axis_options())
    .add_string_axis("dtype", {"tf32", "bf16", "fp8_e4m3"},
                     infrabench::choice_axis("A/B type (C: fp32 for fp32/tf32, else bf16/fp16)",
                                             {"fp32", "tf32", "fp16", "bf16", "fp8_e4m3"}))
    .add_string_axis("trans", {"nt"}, gb::trans_axis_options())
    .add_string_axis("cache", gc::cache_values(), gc::cache_axis_options())
    .add_int64_axis(
        "fast_accum", {0},
        infrabench::switch_axis("fp8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM (1 = torch._scaled_mm "
                                "use_fast_accum=True; 0, the default, compares with its default)"))
    .memory_estimate(host_memory);

}  // namespace
