// gemm/cuda_simt_fp32 and gemm/cuda_wmma: our own GPU kernels (kernels/cuda/gemm_simt.cu,
// gemm_wmma.cu), for insight and as a second opinion on cuBLAS: correctness first, speed reported
// as a fraction of gemm/cublas on the same shape and dtype when it ran earlier in the run.
#include <cuda_runtime.h>

#include <cstdint>
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

void report_vs_cublas(infrabench::state& st, const std::string& dtype, double gflops) {
  const infrabench::result* r = st.find_earlier("gemm/cublas", {{"shape", st.get_string("shape")},
                                                                {"dtype", dtype},
                                                                {"trans", "nn"},
                                                                {"cache", st.get_string("cache")}});
  if (r == nullptr || r->st != infrabench::status::passed) return;
  for (const auto& m : r->metrics) {
    if (m.name == "gflops" && m.value > 0) {
      st.add_metric("pct_of_cublas", "%", 100.0 * gflops / m.value, true,
                    "this median GFLOP/s / gemm/cublas (dtype=" + dtype +
                        ", same shape and cache) median " + std::to_string(m.value) +
                        " GFLOP/s, earlier in this run",
                    infrabench::metric_role::information);
    }
  }
}

template <typename Launch>
void run_ours(infrabench::state& st, const std::string& dtype_name, Launch launch) {
  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const gc::dtype_spec dt = gc::dtype_of(dtype_name);
  const gc::gpu_info gpu = gc::current_gpu();
  gc::require_gpu(st, gpu, dt, shape, 0);
  gc::stream s;
  const gc::operands o(shape, dt, {}, s);
  const int m = static_cast<int>(shape.m), n = static_cast<int>(shape.n),
            k = static_cast<int>(shape.k);
  IB_CUDA(launch(o, m, n, k, s.get()));
  st.add_flops(gm::gemm_flops(shape));
  const auto timing = gc::time_gemm(st, s, [&] { IB_CUDA(launch(o, m, n, k, s.get())); });
  const double gflops = gb::median_gflops(st, gm::gemm_flops(shape));
  gc::report_gpu_clocks(st, gpu, timing);
  gb::report_verification(st, gc::verify_on_device(o, dt, s), "our " + dtype_name + " kernel");
  gc::report_gpu_peak(st, gpu, dt, gflops, timing);
  report_vs_cublas(st, dtype_name, gflops);
}

void cuda_simt_fp32(infrabench::state& st) {
  run_ours(st, "fp32", [](const gc::operands& o, int m, int n, int k, void* stream) {
    return kcu::launch_simt_sgemm(m, n, k, o.a.as<float>(), static_cast<int>(o.l.lda),
                                  o.b.as<float>(), static_cast<int>(o.l.ldb), o.c.as<float>(),
                                  static_cast<int>(o.l.ldc), stream);
  });
}

void cuda_wmma(infrabench::state& st) {
  const std::string dtype = st.get_string("dtype");
  const auto elem = gc::dtype_of(dtype).ab;
  const gc::gpu_info gpu = gc::current_gpu();
  if (gpu.major < 8) {
    st.skip(infrabench::reason_code::no_device, "our WMMA kernel is built for sm_80+; " + gpu.name +
                                                    " is sm_" + std::to_string(gpu.major) +
                                                    std::to_string(gpu.minor));
  }
  run_ours(st, dtype, [elem](const gc::operands& o, int m, int n, int k, void* stream) {
    return kcu::launch_wmma_gemm(elem, m, n, k, o.a.get(), static_cast<int>(o.l.lda), o.b.get(),
                                 static_cast<int>(o.l.ldb), o.c.get(), static_cast<int>(o.l.ldc),
                                 stream);
  });
}

void cuda_mma(infrabench::state& st) {
  const std::string dtype = st.get_string("dtype");
  const auto elem = gc::dtype_of(dtype).ab;
  const gc::gpu_info gpu = gc::current_gpu();
  if (gpu.major < 8) {
    st.skip(infrabench::reason_code::no_device,
            "our mma.sync kernel is built for sm_80+; " + gpu.name + " is sm_" +
                std::to_string(gpu.major) + std::to_string(gpu.minor));
  }
  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const auto l = gb::make_layout(shape, {});
  // The same rule the launcher applies, on the real strides (pointers from cudaMalloc are
  // aligned): a shape it cannot take is skipped with the reason, before anything is allocated.
  if (const char* why = kcu::mma_gemm_unsupported(
          elem, static_cast<int>(shape.m), static_cast<int>(shape.n), static_cast<int>(shape.k),
          nullptr, static_cast<int>(l.lda), nullptr, static_cast<int>(l.ldb), nullptr,
          static_cast<int>(l.ldc))) {
    st.skip(std::string("our mma.sync kernel: ") + why);
  }
  run_ours(st, dtype, [elem](const gc::operands& o, int m, int n, int k, void* stream) {
    return kcu::launch_mma_gemm(elem, m, n, k, o.a.get(), static_cast<int>(o.l.lda), o.b.get(),
                                static_cast<int>(o.l.ldb), o.c.get(), static_cast<int>(o.l.ldc),
                                stream);
  });
}

std::vector<std::string> shapes() {
  return {"1024", "4096", "llama3-8b.mlp_up"};
}

std::int64_t host_memory(const infrabench::config& cfg) {
  (void)gb::shape_of(std::get<std::string>(gb::config_value(cfg, "shape")));  // bad input: exit 2
  return std::int64_t{16} << 20;
}

INFRABENCH_REGISTER(cuda_simt_fp32, "gemm/cuda_simt_fp32")
    .uses("gemm/cublas")
    .describe(
        "our fp32 SIMT kernel (128x128 block tiles, 8x8 register blocks per thread, warp tiling, "
        "float4 loads, double-buffered shared memory); verified on the device; % of cuBLAS fp32 "
        "and of the GPU peak")
    .produces(gc::gpu_gemm_metrics())
    .produces("pct_of_cublas", "%", infrabench::better::higher,
              infrabench::metric_role::information)
    .relate("pct_of_cublas", infrabench::relation_kind::fraction_of, "gemm/cublas gflops")
    .require(infrabench::req::cuda)
    .scope(infrabench::rank_scope::every_rank)  // one rank per GPU: each measures its own
    .add_string_axis("shape", shapes(), gb::shape_axis_options())
    .add_string_axis("cache", gc::cache_values(), gc::cache_axis_options())
    .memory_estimate(host_memory);

INFRABENCH_REGISTER(cuda_wmma, "gemm/cuda_wmma")
    .uses("gemm/cublas")
    .describe(
        "our tensor-core WMMA kernel (fp16/bf16 in and out, fp32 accumulation, sm_80+); verified "
        "on the device; % of cuBLAS and of the GPU peak")
    .produces(gc::gpu_gemm_metrics())
    .produces("pct_of_cublas", "%", infrabench::better::higher,
              infrabench::metric_role::information)
    .relate("pct_of_cublas", infrabench::relation_kind::fraction_of, "gemm/cublas gflops")
    .require(infrabench::req::cuda)
    .scope(infrabench::rank_scope::every_rank)  // one rank per GPU: each measures its own
    .add_string_axis("shape", shapes(), gb::shape_axis_options())
    .add_string_axis("dtype", {"fp16", "bf16"},
                     infrabench::choice_axis("A, B and C type", {"fp16", "bf16"}))
    .add_string_axis("cache", gc::cache_values(), gc::cache_axis_options())
    .memory_estimate(host_memory);

INFRABENCH_REGISTER(cuda_mma, "gemm/cuda_mma")
    .uses("gemm/cublas")
    .describe(
        "our tensor-core kernel on mma.sync m16n8k16 (fp16/bf16 in and out, fp32 accumulation, "
        "sm_80+): 128x128 block tiles of 8 warps, ldmatrix fragments, 3-stage cp.async pipeline; "
        "verified on the device; % of cuBLAS and of the GPU peak")
    .produces(gc::gpu_gemm_metrics())
    .produces("pct_of_cublas", "%", infrabench::better::higher,
              infrabench::metric_role::information)
    .relate("pct_of_cublas", infrabench::relation_kind::fraction_of, "gemm/cublas gflops")
    .require(infrabench::req::cuda)
    .scope(infrabench::rank_scope::every_rank)  // one rank per GPU: each measures its own
    .add_string_axis("shape", shapes(), gb::shape_axis_options())
    .add_string_axis("dtype", {"bf16", "fp16"},
                     infrabench::choice_axis("A, B and C type", {"fp16", "bf16"}))
    .add_string_axis("cache", gc::cache_values(), gc::cache_axis_options())
    .memory_estimate(host_memory);

}  // namespace
