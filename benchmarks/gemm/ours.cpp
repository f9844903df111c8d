// gemm/ours_fp32 and gemm/ours_bf16: our own GEMM (kernels/cpu/gemm.h: packing, cache blocking,
// register-blocked AVX-512 / AVX2 / vdpbf16ps micro-kernels) on pinned threads, each result
// verified on sampled entries against fp64, reported as a fraction of the measured FMA peak and,
// when they ran earlier in the same run, of OpenBLAS and oneDNN on the same shape.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemm_peak.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/gemm_support.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;
namespace gm = infrabench::kernels::gemm_model;

// Per-thread packing buffers (an mc x kc A block and a kc x nc B block) with room to spare.
constexpr std::int64_t packing_bytes_per_thread = std::int64_t{4} << 20;

kc::gemm_isa choose_isa(infrabench::state& st, kc::gemm_dtype dtype) {
  const std::string& name = st.get_string("isa");
  if (name == "auto") {
    const kc::gemm_isa best = kc::best_gemm_isa(dtype);
    if (dtype == kc::gemm_dtype::bf16 && best == kc::gemm_isa::scalar) {
      st.skip(
          "this CPU lacks AVX512_BF16 (vdpbf16ps); -a isa=scalar runs the plain-loop reference");
    }
    return best;
  }
  const auto isa = kc::parse_gemm_isa(name);
  if (!isa || !kc::gemm_isa_handles(*isa, dtype)) st.fail("isa " + name + " does not fit");
  if (!kc::gemm_isa_supported(*isa)) st.skip("this CPU does not support " + name);
  return *isa;
}

kc::peak_isa peak_for(kc::gemm_isa isa) {
  switch (isa) {
    case kc::gemm_isa::avx2:
      return kc::peak_isa::avx2_fp32;
    case kc::gemm_isa::avx512_bf16:
      return kc::peak_isa::avx512_bf16;
    case kc::gemm_isa::scalar:
    case kc::gemm_isa::avx512:
      break;
  }
  return kc::peak_isa::avx512_fp32;
}

// The kernel's arguments for C = op(A) op(B) on the row-major operands of `l`.
template <typename T>
kc::gemm_args<T> gemm_args_of(const gb::layout& l, const gm::gemm_shape& shape,
                              const gb::host_array<T>& a, const gb::host_array<T>& b,
                              const gb::host_array<float>& c) {
  kc::gemm_args<T> args;
  args.trans_a = l.trans.a;
  args.trans_b = l.trans.b;
  args.m = shape.m;
  args.n = shape.n;
  args.k = shape.k;
  args.a = a.data();
  args.lda = l.lda;
  args.b = b.data();
  args.ldb = l.ldb;
  args.c = c.data();
  args.ldc = l.ldc;
  return args;
}

// Verifies the result against fp64 and reports it as a fraction of the references that ran
// earlier and of the peak of the kernel's ISA (none for the scalar reference).
template <typename T>
void verify_and_report(infrabench::state& st, kc::gemm_dtype dtype, kc::gemm_isa isa,
                       const gm::gemm_shape& shape, const gb::layout& l, const gb::host_array<T>& a,
                       const gb::host_array<T>& b, const gb::host_array<float>& c, double gflops,
                       infrabench::thread_pool& pool) {
  if constexpr (std::is_same_v<T, float>) {
    gb::report_verification(
        st, gb::verify_fp32(l, a.data(), b.data(), c.data(), gb::fp32_tolerance(shape.k)), "sgemm");
    gb::report_reference_ratios(
        st, gflops, {{"gemm/openblas_fp32", "openblas"}, {"gemm/onednn_fp32", "onednn"}});
  } else {
    gb::report_verification(
        st, gb::verify_bf16(l, a.data(), b.data(), c.data(), gb::bf16_tolerance(shape.k)),
        "bf16 gemm");
    gb::report_reference_ratios(st, gflops, {{"gemm/onednn_bf16", "onednn"}});
  }
  if (isa == kc::gemm_isa::scalar) return;
  gb::report_peak_fraction(st, gflops, peak_for(isa), st.get_int64("threads"), pool);
  // Where the CPU has AMX tiles, the machine's bf16 peak counts them: how far vdpbf16ps alone is
  // from it.
  if (dtype != kc::gemm_dtype::bf16) return;
  if (const auto amx = gb::amx_bf16_peak_isa()) {
    gb::report_peak_fraction(st, gflops, *amx, st.get_int64("threads"), pool);
  } else {
    gb::withhold_amx_fraction_without_amx(st);
  }
}

template <typename T>
void run_ours(infrabench::state& st, kc::gemm_dtype dtype) {
  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const gb::layout l = gb::make_layout(shape, gb::parse_trans(st.get_string("trans")));
  const kc::gemm_isa isa = choose_isa(st, dtype);
  if (isa == kc::gemm_isa::scalar && gm::gemm_flops(shape) > 2e10) {
    st.skip("the scalar reference would take minutes at this size (use shape <= 2048)");
  }

  infrabench::thread_pool pool(gb::resolve_threads(st.get_int64("threads")));
  const auto a_count = static_cast<std::size_t>(shape.m * shape.k);
  const auto b_count = static_cast<std::size_t>(shape.k * shape.n);
  const auto c_count = static_cast<std::size_t>(shape.m * shape.n);
  gb::host_array<T> a(a_count), b(b_count);
  gb::host_array<float> c(c_count);
  if constexpr (std::is_same_v<T, float>) {
    gb::fill_uniform(a.data(), a_count, 1, pool);
    gb::fill_uniform(b.data(), b_count, 2, pool);
  } else {
    gb::fill_uniform_bf16(a.data(), a_count, 1, pool);
    gb::fill_uniform_bf16(b.data(), b_count, 2, pool);
  }
  gb::fill_nan(c.data(), c_count, pool);

  const kc::gemm_args<T> args = gemm_args_of(l, shape, a, b, c);
  kc::gemm_plan plan(args, isa, pool.size());

  const double flops = gm::gemm_flops(shape);
  st.add_flops(flops);
  const std::function<void(std::size_t)> part = [&](std::size_t t) { plan.run(t); };
  st.exec([&] { pool.run(part); });

  const double gflops = gb::median_gflops(st, flops);
  verify_and_report(st, dtype, isa, shape, l, a, b, c, gflops, pool);
}

void ours_fp32(infrabench::state& st) {
  run_ours<float>(st, kc::gemm_dtype::fp32);
}
void ours_bf16(infrabench::state& st) {
  run_ours<std::uint16_t>(st, kc::gemm_dtype::bf16);
}

std::int64_t packing_bytes(const infrabench::config& cfg) {
  const auto threads = gb::resolve_threads(infrabench::config_int64(cfg, "threads", 0));
  return packing_bytes_per_thread * static_cast<std::int64_t>(threads);
}
std::int64_t ours_memory_fp32(const infrabench::config& cfg) {
  return gb::host_bytes_needed(cfg, 4, 4, 4, packing_bytes(cfg));
}
std::int64_t ours_memory_bf16(const infrabench::config& cfg) {
  return gb::host_bytes_needed(cfg, 2, 2, 4, packing_bytes(cfg));
}

INFRABENCH_REGISTER(ours_fp32, "gemm/ours_fp32")
    .uses("gemm/cpu_peak")
    .uses("gemm/openblas_fp32")
    .uses("gemm/onednn_fp32")
    .describe(
        "our fp32 GEMM (BLIS-style packing + cache blocking, AVX-512 12x32 / AVX2 6x16 "
        "micro-kernel) on pinned threads; verified against fp64; % of FMA peak and of "
        "OpenBLAS/oneDNN")
    .produces(gb::cpu_gemm_metrics())
    .measures(infrabench::data_hop::compute)  // the roofline's FLOP model of the CPU step
    .produces(gb::reference_ratio_metric("openblas"))
    .produces(gb::reference_ratio_metric("onednn"))
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .add_string_axis("isa", {"auto"},
                     infrabench::choice_axis(
                         "micro-kernel: auto = widest this CPU runs; scalar = the plain-loop "
                         "reference",
                         {"auto", "scalar", "avx2", "avx512"}))
    .memory_estimate(ours_memory_fp32);

INFRABENCH_REGISTER(ours_bf16, "gemm/ours_bf16")
    .uses("gemm/cpu_peak")
    .uses("gemm/onednn_bf16")
    .describe(
        "our bf16 GEMM (bf16 inputs, fp32 accumulation and output) with AVX512_BF16 vdpbf16ps; "
        "verified against fp64; % of the vdpbf16ps peak and of oneDNN bf16")
    .produces(gb::cpu_gemm_metrics())
    .produces(gb::reference_ratio_metric("onednn"))
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .add_string_axis(
        "isa", {"auto"},
        infrabench::choice_axis("micro-kernel: auto = avx512_bf16 where the CPU has it, else the "
                                "scalar reference",
                                {"auto", "scalar", "avx512_bf16"}))
    .memory_estimate(ours_memory_bf16);

}  // namespace
