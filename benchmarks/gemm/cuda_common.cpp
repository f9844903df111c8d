#include "cuda_common.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

namespace infrabench::gemm_cuda {

gpu_info current_gpu() {
  gpu_info g;
  g.device = kcu::current_device();
  const kcu::device_info d = kcu::query_device(g.device);
  g.name = d.name;
  g.major = d.cc_major;
  g.minor = d.cc_minor;
  g.sm_count = d.sm_count;
  g.clock_mhz = d.max_sm_clock_mhz;
  g.total_bytes = d.total_bytes;
  g.free_bytes = kcu::free_bytes(g.device);
  g.bus_id = d.bus_id;
  return g;
}

dtype_spec dtype_of(const std::string& name) {
  using nf = gm::number_format;
  using e = kcu::gemm_elem;
  // Tensor-core accumulators may truncate rather than round: twice the fp32 unit roundoff.
  if (name == "fp32")
    return {
        name,  e::fp32, e::fp32, {nf::fp32, nf::fp32, nf::fp32, nf::fp32, 1.0}, hw::gpu_dtype::fp32,
        -1.0f, 1.0f};
  if (name == "tf32")
    return {
        name,  e::fp32, e::fp32, {nf::fp32, nf::tf32, nf::fp32, nf::fp32, 2.0}, hw::gpu_dtype::tf32,
        -1.0f, 1.0f};
  if (name == "fp16")
    return {
        name,  e::fp16, e::fp16, {nf::fp16, nf::fp16, nf::fp32, nf::fp16, 2.0}, hw::gpu_dtype::fp16,
        -1.0f, 1.0f};
  if (name == "bf16")
    return {
        name,  e::bf16, e::bf16, {nf::bf16, nf::bf16, nf::fp32, nf::bf16, 2.0}, hw::gpu_dtype::bf16,
        -1.0f, 1.0f};
  // fp8: Hopper's fp8 tensor cores keep ~14 bits in their accumulators between promotions
  // (2^10 x the fp32 unit roundoff). Inputs in [0, 1): with all products positive the bound is
  // relative to C itself, so it still catches a wrong result despite the wide accumulator error.
  if (name == "fp8_e4m3") {
    return {name,
            e::fp8_e4m3,
            e::bf16,
            {nf::fp8_e4m3, nf::fp8_e4m3, nf::fp32, nf::bf16, 1024.0},
            hw::gpu_dtype::fp8,
            0.0f,
            1.0f};
  }
  throw std::invalid_argument("unknown dtype " + name);
}

void require_gpu(state& st, const gpu_info& gpu, const dtype_spec& dt, const gm::gemm_shape& s,
                 std::size_t extra_bytes) {
  // The rules themselves are host-only (gemm_model), unit-tested without a GPU.
  gm::gpu_gemm_need need;
  need.dtype_name = dt.name;
  need.dtype = dt.peak;
  need.shape = s;
  need.ab_elem_bytes = kcu::gemm_elem_bytes(dt.ab);
  need.c_elem_bytes = kcu::gemm_elem_bytes(dt.c);
  need.extra_bytes = static_cast<std::int64_t>(extra_bytes);
  const gm::gpu_device dev{gpu.name, gpu.major, gpu.minor,
                           static_cast<std::int64_t>(gpu.free_bytes)};
  if (auto reason = gm::gpu_gemm_skip_reason(dev, need); !reason.empty()) {
    st.skip(std::move(reason));
  }
}

operands::operands(const gm::gemm_shape& s, const dtype_spec& dt, gemm_bench::transposes trans,
                   const stream& st)
    : l(gemm_bench::make_layout(s, trans)),
      a(static_cast<std::size_t>(s.m * s.k) * kcu::gemm_elem_bytes(dt.ab)),
      b(static_cast<std::size_t>(s.k * s.n) * kcu::gemm_elem_bytes(dt.ab)),
      c(static_cast<std::size_t>(s.m * s.n) * kcu::gemm_elem_bytes(dt.c)) {
  IB_CUDA(kcu::gemm_fill_uniform(a.get(), static_cast<std::size_t>(s.m * s.k), dt.ab, 1, dt.lo,
                                 dt.hi, st.get()));
  IB_CUDA(kcu::gemm_fill_uniform(b.get(), static_cast<std::size_t>(s.k * s.n), dt.ab, 2, dt.lo,
                                 dt.hi, st.get()));
  IB_CUDA(kcu::gemm_fill_nan(c.get(), static_cast<std::size_t>(s.m * s.n), dt.c, st.get()));
  st.sync();
}

gm::verification verify_on_device(const operands& o, const dtype_spec& dt, const stream& st) {
  const auto& s = o.l.shape;
  const auto positions = gm::sample_positions(s.m, s.n, gemm_bench::verify_samples);
  std::vector<std::int64_t> flat;
  for (const auto& p : positions) {
    flat.push_back(p.i);
    flat.push_back(p.j);
  }
  const int count = static_cast<int>(positions.size());
  device_buffer dpos(flat.size() * sizeof(std::int64_t));
  device_buffer dout(static_cast<std::size_t>(count) * 3 * sizeof(double));
  device_buffer dnonfinite(2 * sizeof(unsigned long long));
  const cudaStream_t cs = st.get();
  IB_CUDA(cudaMemcpyAsync(dpos.get(), flat.data(), flat.size() * sizeof(std::int64_t),
                          cudaMemcpyHostToDevice, cs));
  IB_CUDA(cudaMemsetAsync(dnonfinite.get(), 0, 2 * sizeof(unsigned long long), cs));
  IB_CUDA(kcu::gemm_verify_samples(dt.ab, dt.c, o.l.trans.a, o.l.trans.b, static_cast<int>(s.k),
                                   o.a.get(), static_cast<int>(o.l.lda), o.b.get(),
                                   static_cast<int>(o.l.ldb), o.c.get(), static_cast<int>(o.l.ldc),
                                   dpos.as<std::int64_t>(), count, dout.as<double>(), cs));
  IB_CUDA(kcu::gemm_count_nonfinite(dt.c, static_cast<int>(s.m), static_cast<int>(s.n), o.c.get(),
                                    static_cast<int>(o.l.ldc), dnonfinite.as<unsigned long long>(),
                                    cs));
  std::vector<double> out(static_cast<std::size_t>(count) * 3);
  unsigned long long nonfinite[2] = {0, 0};
  IB_CUDA(cudaMemcpyAsync(out.data(), dout.get(), out.size() * sizeof(double),
                          cudaMemcpyDeviceToHost, cs));
  IB_CUDA(
      cudaMemcpyAsync(nonfinite, dnonfinite.get(), sizeof(nonfinite), cudaMemcpyDeviceToHost, cs));
  st.sync();
  std::vector<gm::sampled_entry> entries;
  for (int e = 0; e < count; ++e) {
    gm::sampled_entry x;
    x.i = positions[static_cast<std::size_t>(e)].i;
    x.j = positions[static_cast<std::size_t>(e)].j;
    x.value = out[3 * e];
    x.reference = out[3 * e + 1];
    x.abs_sum = out[3 * e + 2];
    entries.push_back(x);
  }
  auto v = gm::verify_entries(entries, gm::gemm_tolerance(dt.precision, s.k));
  if (nonfinite[0] > 0) {
    const auto idx = static_cast<std::int64_t>(nonfinite[1]);
    v.ok = false;
    v.failed += static_cast<std::int64_t>(nonfinite[0]);
    v.nonfinite += static_cast<std::int64_t>(nonfinite[0]);
    v.worst.i = idx / s.n;
    v.worst.j = idx % s.n;
    v.worst.value = std::numeric_limits<double>::quiet_NaN();
    v.max_bound_ratio = std::numeric_limits<double>::infinity();
  }
  return v;
}

std::vector<std::string> cache_values() {
  return {"hot"};  // results from before the axis existed were hot: they keep their meaning
}

axis_options cache_axis_options() {
  return choice_axis(
      "L2 between GEMMs: hot = operands left in L2 by the previous GEMM, cold = L2 flushed before "
      "every GEMM (one event pair each)",
      {"hot", "cold"});
}

gpu_exec_report time_gemm(state& st, const stream& s, const std::function<void()>& launch) {
  // The harness owns the timing: a blocking kernel holds the stream while a batch of GEMMs is
  // queued, one event pair brackets them, so launch gaps never enter the figure.
  gpu_exec_options opts;
  if (st.get_string("cache") == "cold") {
    opts.flush_l2 = true;
    opts.timer_name = "cuda_event_per_launch_l2_flushed";
    st.set_axis_display("cache", "cold (L2 flushed before every GEMM)");
  } else {
    st.set_axis_display("cache", "hot (operands in L2 from the previous GEMM)");
  }
  return st.exec_gpu({s.get(), s.device()}, launch, opts);
}

namespace {

[[nodiscard]] std::string mhz(double v) {
  return std::to_string(static_cast<long>(std::lround(v))) + " MHz";
}

}  // namespace

std::vector<metric_decl> gpu_gemm_metrics() {
  const auto info = [](std::string name, std::string unit, better dir = better::higher) {
    return metric_decl{std::move(name), std::move(unit), dir, metric_role::information};
  };
  // A percentage declared a fraction of `peak` in its own entry, so that no position ties the two.
  const auto pct_of = [&](std::string name, std::string peak) {
    metric_decl d = info(std::move(name), "%");
    d.relation = {relation_kind::fraction_of, std::move(peak)};
    return d;
  };
  std::vector<metric_decl> out = {
      derived_metric(work_kind::flops),
      {"verify_err_to_bound", "ratio", better::lower, metric_role::verification},
      info("clock_mhz", "MHz"),
      info("sm_count", "SMs"),
      info("peak_tflops", "TFLOP/s"),
      pct_of("pct_of_peak", "peak_tflops"),
      info("peak_at_clock_tflops", "TFLOP/s"),
      pct_of("pct_of_peak_at_clock", "peak_at_clock_tflops"),
      info("sm_clock_mhz_actual", "MHz"),
      info("mem_clock_mhz_actual", "MHz"),
      info("clock_event_reasons", "bitmask", better::lower),
  };
  out.front().headline = true;
  return out;
}

void report_gpu_peak(state& st, const gpu_info& gpu, const dtype_spec& dt, double gflops,
                     const gpu_exec_report& timing) {
  st.add_metric("clock_mhz", "MHz", gpu.clock_mhz, true,
                "maximum SM clock the driver reports (cudaDevAttrClockRate) for " + gpu.name,
                metric_role::information);
  st.add_metric("sm_count", "SMs", gpu.sm_count, true, "cudaDeviceProp::multiProcessorCount",
                metric_role::information);
  const std::string type(hw::to_string(dt.peak));
  if (const auto peak =
          hw::dense_peak(gpu.name, gpu.sm_count, gpu.major, gpu.minor, gpu.clock_mhz, dt.peak)) {
    st.add_metric("peak_tflops", "TFLOP/s", peak->value, true, peak->source,
                  metric_role::information);
    st.add_metric("pct_of_peak", "%", 100.0 * gflops / (peak->value * 1e3), true,
                  "median GFLOP/s / peak_tflops (" +
                      std::string(peak->datasheet ? "the datasheet figure"
                                                  : "clock-derived: no "
                                                    "datasheet figure") +
                      ")",
                  metric_role::information);
    st.set_metric_hint("pct_of_peak", metric_hint::fraction_of_peak);
    if (!peak->datasheet) st.add_warning("pct_of_peak: " + peak->source);
  } else {
    st.withhold_metric("pct_of_peak", "no peak figure for " + gpu.name + " (sm_" +
                                          std::to_string(gpu.major) + std::to_string(gpu.minor) +
                                          ") " + type);
    return;
  }
  if (!timing.clocks_known) {
    st.withhold_metric("pct_of_peak_at_clock",
                       "SM clock during the timing unknown (" + timing.clocks_reason + ")");
    return;
  }
  const auto at_clock = hw::peak_at_clock_tflops(gpu.major, gpu.minor, dt.peak, gpu.sm_count,
                                                 timing.sm_clock_mhz_median);
  if (!at_clock) return;
  st.add_metric("peak_at_clock_tflops", "TFLOP/s", *at_clock, true,
                std::to_string(gpu.sm_count) + " SMs x " + mhz(timing.sm_clock_mhz_median) +
                    " (median SM clock measured in the timed windows) x dense " + type +
                    " ops per clock per SM (hardware/gpu.h)",
                metric_role::information);
  st.add_metric("pct_of_peak_at_clock", "%", 100.0 * gflops / (*at_clock * 1e3), true,
                "median GFLOP/s / peak_at_clock_tflops: the kernel's efficiency at the clock the "
                "GPU actually ran (a power cap lowers the clock, not this figure)",
                metric_role::information);
}

void report_gpu_clocks(state& st, const gpu_info& gpu, const gpu_exec_report& timing) {
  if (timing.clocks_known) {
    st.add_metric("sm_clock_mhz_actual", "MHz", timing.sm_clock_mhz_median, true,
                  "median over " + std::to_string(timing.clock_windows) +
                      " samples of the SM clock in the timed window: clock64 cycles / "
                      "%globaltimer ns between probe kernels at its two ends (nvbench's method); "
                      "min " +
                      mhz(timing.sm_clock_mhz_min) + ", max " + mhz(timing.sm_clock_mhz_max),
                  metric_role::information);
  } else {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      st.add_warning("SM clock during the timing not measured (only the maximum, clock_mhz): " +
                     timing.clocks_reason);
    }
  }
  if (!timing.mem_clock_known) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      st.add_warning("memory clock and throttle reasons not recorded: " + timing.mem_clock_reason);
    }
    return;
  }
  const std::string readings = std::to_string(timing.clock_readings) +
                               " NVML readings taken while batches ran (nvmlDeviceGetClockInfo)";
  st.add_metric("mem_clock_mhz_actual", "MHz", timing.mem_clock_mhz_median, true,
                "median memory clock over " + readings, metric_role::information);
  if (!timing.reasons_known) {
    st.add_warning("GPU clock event (throttle) reasons not available from this NVML");
    return;
  }
  st.add_metric("clock_event_reasons", "bitmask", static_cast<double>(timing.clock_event_reasons),
                false,
                "NVML clock event (throttle) reasons seen during the timing (OR over readings): " +
                    timing.clock_event_names,
                metric_role::information);
  if (timing.slowed_down) {
    std::string at = "SM clock not measured";
    if (timing.clocks_known) {
      at = "SM at " + mhz(timing.sm_clock_mhz_median) + " median (" + mhz(timing.sm_clock_mhz_min) +
           " min) of " + mhz(gpu.clock_mhz) + " maximum";
    }
    st.add_warning("GPU clock held down during timing (" + timing.clock_event_names + "): " + at);
  }
}

}  // namespace infrabench::gemm_cuda
