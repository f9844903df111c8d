#include "cuda_common.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include "../bandwidth/gpu_nvml.h"
#include "topology/link.h"

namespace infrabench::gemm_cuda {

void check_cuda(int err, std::string_view what) {
  if (err == cudaSuccess) return;
  throw std::runtime_error(std::string(what) + ": " +
                           cudaGetErrorString(static_cast<cudaError_t>(err)));
}

device_buffer::device_buffer(std::size_t bytes) {
  check_cuda(cudaMalloc(&m_ptr, bytes > 0 ? bytes : 1),
             "cudaMalloc(" + std::to_string(bytes) + " bytes)");
}
device_buffer::~device_buffer() {
  (void)cudaFree(m_ptr);
}

stream::stream() {
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  m_stream = s;
}
stream::~stream() {
  (void)cudaStreamDestroy(static_cast<cudaStream_t>(m_stream));
}
void stream::sync() const {
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(m_stream)), "cudaStreamSynchronize");
}

gpu_info current_gpu() {
  gpu_info g;
  check_cuda(cudaGetDevice(&g.device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, g.device), "cudaGetDeviceProperties");
  g.name = prop.name;
  g.major = prop.major;
  g.minor = prop.minor;
  g.sm_count = prop.multiProcessorCount;
  int khz = 0;
  check_cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, g.device),
             "cudaDeviceGetAttribute(ClockRate)");
  g.clock_mhz = khz / 1000.0;
  check_cuda(cudaMemGetInfo(&g.free_bytes, &g.total_bytes), "cudaMemGetInfo");
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, g.device) == cudaSuccess) {
    g.bus_id = kernels::topology::normalize_pci_bus_id(bus);
  } else {
    (void)cudaGetLastError();  // no bus id: NVML clocks are then reported unknown
  }
  return g;
}

dtype_spec dtype_of(const std::string& name) {
  using nf = gm::number_format;
  using e = kcu::gemm_elem;
  // Tensor-core accumulators may truncate rather than round: twice the fp32 unit roundoff.
  if (name == "fp32")
    return {
        name,  e::fp32, e::fp32, {nf::fp32, nf::fp32, nf::fp32, nf::fp32, 1.0}, gm::gpu_dtype::fp32,
        -1.0f, 1.0f};
  if (name == "tf32")
    return {
        name,  e::fp32, e::fp32, {nf::fp32, nf::tf32, nf::fp32, nf::fp32, 2.0}, gm::gpu_dtype::tf32,
        -1.0f, 1.0f};
  if (name == "fp16")
    return {
        name,  e::fp16, e::fp16, {nf::fp16, nf::fp16, nf::fp32, nf::fp16, 2.0}, gm::gpu_dtype::fp16,
        -1.0f, 1.0f};
  if (name == "bf16")
    return {
        name,  e::bf16, e::bf16, {nf::bf16, nf::bf16, nf::fp32, nf::bf16, 2.0}, gm::gpu_dtype::bf16,
        -1.0f, 1.0f};
  // fp8: Hopper's fp8 tensor cores keep ~14 bits in their accumulators between promotions
  // (2^10 x the fp32 unit roundoff). Inputs in [0, 1): with all products positive the bound is
  // relative to C itself, so it still catches a wrong result despite the wide accumulator error.
  if (name == "fp8_e4m3") {
    return {name,
            e::fp8_e4m3,
            e::bf16,
            {nf::fp8_e4m3, nf::fp8_e4m3, nf::fp32, nf::bf16, 1024.0},
            gm::gpu_dtype::fp8,
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
  check_cuda(kcu::gemm_fill_uniform(a.get(), static_cast<std::size_t>(s.m * s.k), dt.ab, 1, dt.lo,
                                    dt.hi, st.get()),
             "fill A");
  check_cuda(kcu::gemm_fill_uniform(b.get(), static_cast<std::size_t>(s.k * s.n), dt.ab, 2, dt.lo,
                                    dt.hi, st.get()),
             "fill B");
  check_cuda(kcu::gemm_fill_nan(c.get(), static_cast<std::size_t>(s.m * s.n), dt.c, st.get()),
             "fill C");
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
  auto cs = static_cast<cudaStream_t>(st.get());
  check_cuda(cudaMemcpyAsync(dpos.get(), flat.data(), flat.size() * sizeof(std::int64_t),
                             cudaMemcpyHostToDevice, cs),
             "upload sample positions");
  check_cuda(cudaMemsetAsync(dnonfinite.get(), 0, 2 * sizeof(unsigned long long), cs), "memset");
  check_cuda(
      kcu::gemm_verify_samples(dt.ab, dt.c, o.l.trans.a, o.l.trans.b, static_cast<int>(s.k),
                               o.a.get(), static_cast<int>(o.l.lda), o.b.get(),
                               static_cast<int>(o.l.ldb), o.c.get(), static_cast<int>(o.l.ldc),
                               dpos.as<std::int64_t>(), count, dout.as<double>(), st.get()),
      "verification kernel");
  check_cuda(kcu::gemm_count_nonfinite(dt.c, static_cast<int>(s.m), static_cast<int>(s.n),
                                       o.c.get(), static_cast<int>(o.l.ldc),
                                       dnonfinite.as<unsigned long long>(), st.get()),
             "non-finite scan");
  std::vector<double> out(static_cast<std::size_t>(count) * 3);
  unsigned long long nonfinite[2] = {0, 0};
  check_cuda(cudaMemcpyAsync(out.data(), dout.get(), out.size() * sizeof(double),
                             cudaMemcpyDeviceToHost, cs),
             "download verification");
  check_cuda(
      cudaMemcpyAsync(nonfinite, dnonfinite.get(), sizeof(nonfinite), cudaMemcpyDeviceToHost, cs),
      "download non-finite count");
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

void report_gpu_peak(state& st, const gpu_info& gpu, const dtype_spec& dt, double gflops) {
  st.add_metric("clock_mhz", "MHz", gpu.clock_mhz, true,
                "maximum SM clock the driver reports (cudaDevAttrClockRate) for " + gpu.name,
                infrabench::metric_role::information);
  st.add_metric("sm_count", "SMs", gpu.sm_count, true, "cudaDeviceProp::multiProcessorCount",
                infrabench::metric_role::information);
  const auto peak = gm::gpu_peak_tflops(gpu.major, gpu.minor, dt.peak, gpu.sm_count, gpu.clock_mhz);
  if (!peak) {
    st.add_warning("no peak-table entry for sm_" + std::to_string(gpu.major) +
                   std::to_string(gpu.minor) + " " + std::string(gm::to_string(dt.peak)) +
                   ": fraction of peak not reported");
    return;
  }
  st.add_metric("peak_tflops", "TFLOP/s", *peak, true,
                "SM count x max SM clock x dense " + std::string(gm::to_string(dt.peak)) +
                    " ops per clock per SM (peak table); datasheets may quote a lower clock",
                infrabench::metric_role::information);
  st.add_metric("pct_of_gpu_peak", "%", 100.0 * gflops / (*peak * 1e3), true,
                "median GFLOP/s / peak_tflops");
}

void report_gpu_clocks(state& st, const gpu_info& gpu) {
  // cudaDevAttrClockRate is the maximum; under a power or thermal limit the GPU runs slower, and
  // a fraction of peak computed at the maximum clock would blame the kernel for it.
  const bw::gpu::clock_report clk =
      gpu.bus_id.empty() ? bw::gpu::clock_report{} : bw::gpu::clocks_of(gpu.bus_id);
  if (!clk.known) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      st.add_warning(
          "actual GPU clocks not recorded (only the maximum, clock_mhz): " +
          (gpu.bus_id.empty() ? std::string("PCI bus id of the GPU unknown") : clk.reason));
    }
    return;
  }
  st.add_metric("sm_clock_mhz_actual", "MHz", clk.sm_mhz, true,
                "NVML nvmlDeviceGetClockInfo(SM) right after the timed region",
                infrabench::metric_role::information);
  st.add_metric("mem_clock_mhz_actual", "MHz", clk.mem_mhz, true,
                "NVML nvmlDeviceGetClockInfo(MEM) right after the timed region",
                infrabench::metric_role::information);
  if (!clk.reasons_known) {
    st.add_warning("GPU clock event (throttle) reasons not available from this NVML");
    return;
  }
  st.add_metric("clock_event_reasons", "bitmask", static_cast<double>(clk.reasons), false,
                "NVML current clock event (throttle) reasons right after the timed region: " +
                    clk.reason_names(),
                infrabench::metric_role::information);
  if (clk.slowed_down()) {
    st.add_warning("GPU clock held down during timing (" + clk.reason_names() + "): SM at " +
                   std::to_string(clk.sm_mhz) + " MHz of " +
                   std::to_string(static_cast<int>(gpu.clock_mhz)) + " MHz maximum");
  }
}

}  // namespace infrabench::gemm_cuda
