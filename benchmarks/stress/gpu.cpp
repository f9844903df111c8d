// stress/gpu: every GPU at once, for a set duration, rounds of bf16 cuBLASLt GEMMs back to back
// (power and thermal load on the tensor cores, like DCGM's targeted power test and gpu-burn), each
// round ending in a large device-to-device copy (HBM traffic) and the checks: the round's last
// GEMM result is compared with the first one (itself checked against a CPU reference on sampled
// elements) and the copy with its source; a wrong result is a failure. A round is sized so the
// GEMMs are ~99% of the GPU's time (a check and a synchronisation after every GEMM left it ~45%),
// and the next round is queued before the host waits for the last, so the GPU never idles. Per GPU
// and per second: GEMM TFLOP/s and copy GB/s, their stability, the clock event (throttle) reasons,
// power and temperature from NVML; the ECC counters' and XIDs' growth during the stress.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cuda/support.h"
#include "gpu_check.h"
#include "gpu_rounds.h"
#include "infrabench/benchmark.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/state.h"
#include "infrabench/telemetry.h"
#include "lt_gemm.h"
#include "stability.h"

namespace {

namespace s = infrabench::stress;
namespace nv = infrabench::nvml;
namespace kcu = infrabench::kernels::cuda;
using clock_type = std::chrono::steady_clock;

struct gpu_run {
  int device = 0;
  int nvml = -1;  // NVML's index of this GPU (matched by PCI bus id); -1 unknown
  std::string name;
  s::per_second flops, gemm_s, bytes, copy_s;
  std::size_t wrong_gemm = 0, wrong_copy = 0, iterations = 0;  // iterations: checked rounds
  int gemms_per_round = 0;
  double busy_s = 0, wall_s = 0;  // GEMM + copy time (CUDA events), wall time of the counted rounds
  std::string reference_problem;
  std::vector<double> power, temp;
  std::size_t seconds_sampled = 0, seconds_serious = 0;
  unsigned long long serious_bits = 0;
  nv::counter_set ecc_before, ecc_after;
  std::string error;
};

float bf16_to_float(std::uint16_t v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The first GEMM result, checked on sampled elements against a double-precision CPU dot product:
// C[i + j n] = sum_k A[k + i n] B[k + j n] (A transposed). Empty when it agrees.
std::string check_reference(const kcu::device_buffer& a, const kcu::device_buffer& b,
                            const kcu::device_buffer& c, int n) {
  const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<std::uint16_t> ha(nn), hb(nn);
  std::vector<float> hc(nn);
  IB_CUDA(cudaMemcpy(ha.data(), a.get(), nn * 2, cudaMemcpyDeviceToHost));
  IB_CUDA(cudaMemcpy(hb.data(), b.get(), nn * 2, cudaMemcpyDeviceToHost));
  IB_CUDA(cudaMemcpy(hc.data(), c.get(), nn * 4, cudaMemcpyDeviceToHost));
  for (int sample = 0; sample < 64; ++sample) {
    const std::size_t i = (static_cast<std::size_t>(sample) * 7919) % static_cast<std::size_t>(n);
    const std::size_t j = (static_cast<std::size_t>(sample) * 104729) % static_cast<std::size_t>(n);
    double sum = 0, mag = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
      const double p = static_cast<double>(bf16_to_float(ha[k + i * n])) *
                       static_cast<double>(bf16_to_float(hb[k + j * n]));
      sum += p;
      mag += std::fabs(p);
    }
    // fp32 accumulation over n products, in any order: error below n * 2^-24 * sum |products|.
    const double got = hc[i + j * n];
    if (!(std::fabs(got - sum) <= 1e-3 * mag + 1e-6))
      return "C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) +
             ", CPU reference " + std::to_string(sum);
  }
  return "";
}

void sample_nvml(gpu_run& g) {
  if (g.nvml < 0) return;
  const nv::gpu_sample smp = nv::library::instance().sample(static_cast<unsigned>(g.nvml));
  g.power.push_back(smp.power_w);
  g.temp.push_back(smp.temp_c);
  if (std::isnan(smp.throttle_reasons)) return;
  ++g.seconds_sampled;
  unsigned long long serious = 0;
  for (const auto& b : nv::reason_bits()) {
    if (b.serious && (static_cast<unsigned long long>(smp.throttle_reasons) & b.bit))
      serious |= b.bit;
  }
  g.seconds_serious += serious != 0;
  g.serious_bits |= serious;
}

// The length of a round (its GEMMs, copy and checks): long enough that the checks and the one
// host wait per round are a small share, short enough for several rounds per second of the
// per-second series and a stop within a fraction of a second of the duration.
constexpr s::round_sizing sizing{0.2, 0.02};

// Events and check counts of one round in flight; two of them alternate so the next round is
// queued while the host waits for this one.
struct round_slot {
  // Timed or ordering-only as gpu_rounds.h says: a span read between ordering-only events fails.
  std::array<kcu::event, s::round_mark_count> marks;
  kcu::device_buffer bad;                  // [0] GEMM mismatches, [1] copy mismatches
  unsigned long long* host_bad = nullptr;  // pinned; the counts copied back
  explicit round_slot(int device)
      : marks{mark(device, s::round_mark::start), mark(device, s::round_mark::gemms_done),
              mark(device, s::round_mark::copy_done), mark(device, s::round_mark::done)},
        bad(2 * sizeof(unsigned long long)) {
    IB_CUDA(cudaMallocHost(&host_bad, 2 * sizeof(unsigned long long)));
  }
  round_slot(const round_slot&) = delete;
  round_slot& operator=(const round_slot&) = delete;
  ~round_slot() { (void)cudaFreeHost(host_bad); }
  [[nodiscard]] cudaEvent_t operator[](s::round_mark m) const {
    return marks[static_cast<std::size_t>(m)].get();
  }

 private:
  static kcu::event mark(int device, s::round_mark m) {
    return kcu::event(device, s::round_mark_timed(m));
  }
};

// The GPU side of s::run_rounds on one device: GEMMs, the copy and the checks on one stream.
class round_gpu {
 public:
  round_gpu(int device, cudaStream_t st, s::lt_gemm& gemm, const kcu::device_buffer& a,
            const kcu::device_buffer& b, const kcu::device_buffer& c, const kcu::device_buffer& ref,
            std::size_t nn, const kcu::device_buffer& src, const kcu::device_buffer& dst,
            std::size_t copy_bytes)
      : m_slots{round_slot(device), round_slot(device)},
        m_st(st),
        m_gemm(gemm),
        m_a(a),
        m_b(b),
        m_c(c),
        m_ref(ref),
        m_nn(nn),
        m_src(src),
        m_dst(dst),
        m_copy_bytes(copy_bytes) {}

  // `gemms` GEMMs back to back, the copy, then the checks of the last GEMM and the copy, their
  // counts copied to pinned memory; the marks bracket the GEMMs, the copy and the checks.
  void enqueue(int slot, int gemms) {
    const round_slot& r = m_slots[slot];
    const auto record = [&](s::round_mark m) { IB_CUDA(cudaEventRecord(r[m], m_st)); };
    IB_CUDA(cudaMemsetAsync(r.bad.get(), 0, 2 * sizeof(unsigned long long), m_st));
    record(s::round_mark::start);
    for (int k = 0; k < gemms; ++k) m_gemm.run(m_a.get(), m_b.get(), m_c.as<float>(), m_st);
    record(s::round_mark::gemms_done);
    IB_CUDA(
        cudaMemcpyAsync(m_dst.get(), m_src.get(), m_copy_bytes, cudaMemcpyDeviceToDevice, m_st));
    record(s::round_mark::copy_done);
    s::count_float_mismatches(m_c.as<float>(), m_ref.as<float>(), m_nn, 1e-5f, 1e-5f,
                              r.bad.as<unsigned long long>(), m_st);
    s::count_word_mismatches(m_dst.as<std::uint64_t>(), m_src.as<std::uint64_t>(), m_copy_bytes / 8,
                             r.bad.as<unsigned long long>() + 1, m_st);
    IB_CUDA(cudaMemcpyAsync(r.host_bad, r.bad.get(), 2 * sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, m_st));
    record(s::round_mark::done);
  }
  void wait(int slot) { IB_CUDA(cudaEventSynchronize(m_slots[slot][s::round_mark::done])); }
  [[nodiscard]] double elapsed_s(int slot, s::round_span span) const {
    float ms = 0;
    IB_CUDA(cudaEventElapsedTime(&ms, m_slots[slot][span.from], m_slots[slot][span.to]));
    return static_cast<double>(ms) / 1e3;
  }
  [[nodiscard]] s::round_counts counts(int slot) const {
    return {m_slots[slot].host_bad[0], m_slots[slot].host_bad[1]};
  }

 private:
  round_slot m_slots[2];
  cudaStream_t m_st;
  s::lt_gemm& m_gemm;
  const kcu::device_buffer &m_a, &m_b, &m_c, &m_ref;
  std::size_t m_nn;
  const kcu::device_buffer &m_src, &m_dst;
  std::size_t m_copy_bytes;
};

void drive(gpu_run& g, int n, clock_type::time_point t0, clock_type::time_point end,
           const std::atomic<bool>* stop) {
  // This thread's current device: the stream, buffers and events below are created on it.
  IB_CUDA(cudaSetDevice(g.device));
  const kcu::stream stream(g.device);
  const cudaStream_t st = stream.get();
  std::size_t free_b = 0, total_b = 0;
  IB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  const std::size_t copy_bytes = std::min<std::size_t>(1ull << 30, free_b / 8) / 4096 * 4096;
  const kcu::device_buffer a(nn * 2), b(nn * 2), c(nn * 4), ref(nn * 4), src(copy_bytes),
      dst(copy_bytes);
  s::fill_bf16(a.as<std::uint16_t>(), nn, 1000 + static_cast<unsigned>(g.device), st);
  s::fill_bf16(b.as<std::uint16_t>(), nn, 2000 + static_cast<unsigned>(g.device), st);
  s::fill_words(src.as<std::uint64_t>(), copy_bytes / 8, 3000, st);
  s::lt_gemm gemm(n);
  gemm.run(a.get(), b.get(), ref.as<float>(), st);
  IB_CUDA(cudaStreamSynchronize(st));  // the first GEMM
  g.reference_problem = check_reference(a, b, ref, n);
  if (!g.reference_problem.empty()) return;

  round_gpu gpu(g.device, st, gemm, a, b, c, ref, nn, src, dst, copy_bytes);
  auto next_sample = t0 + std::chrono::seconds(1);
  const auto now_s = [] {
    return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
  };
  const auto running = [&] { return clock_type::now() < end && !(stop && *stop); };
  const auto on_round = [&](const s::round_result& r) {
    const auto now = clock_type::now();
    const double t = std::chrono::duration<double>(now - t0).count();
    g.flops.add(t, gemm.flops() * r.gemms);
    g.gemm_s.add(t, r.gemm_s);
    g.bytes.add(t, 2.0 * static_cast<double>(copy_bytes));  // read + written
    g.copy_s.add(t, r.copy_s);
    if (now >= next_sample) {
      sample_nvml(g);
      next_sample += std::chrono::seconds(1);
    }
  };
  const s::round_totals tot = s::run_rounds(gpu, sizing, now_s, running, on_round);
  g.gemms_per_round = tot.gemms_per_round;
  g.iterations = tot.rounds;
  g.wrong_gemm = tot.wrong_gemm;
  g.wrong_copy = tot.wrong_copy;
  g.busy_s = tot.busy_s;
  g.wall_s = tot.wall_s;
}

// Rate per complete second: work / time spent on it in that second.
std::vector<double> rates(const s::per_second& work, const s::per_second& time, double elapsed,
                          double scale) {
  const auto w = work.complete(elapsed), t = time.complete(elapsed);
  std::vector<double> out;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (t[i] > 0) out.push_back(w[i] / t[i] / scale);
  }
  return out;
}

infrabench::metric series(std::string name, std::string unit, const s::stability& stab,
                          std::vector<double> per_second, std::string method) {
  infrabench::metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.value = stab.median;
  m.best = stab.best;
  m.samples = std::move(per_second);
  m.method = std::move(method);
  return m;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  std::size_t n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      sum += x;
      ++n;
    }
  }
  return n ? sum / static_cast<double>(n) : std::nan("");
}

// The throughput series and their stability, the share of the time the GPU was busy, and the
// count of wrong results.
void report_gpu_throughput(infrabench::state& st, const gpu_run& g, const std::string& sfx,
                           const std::vector<double>& tflops, const std::vector<double>& gbps,
                           const s::stability& gs, const s::stability& cs) {
  using infrabench::metric_role;
  st.partial_result().metrics.push_back(series(
      "gemm_tflops" + sfx, "TFLOP/s", gs, tflops,
      "bf16 cuBLASLt GEMM flops / GEMM time (CUDA events), per second; value = median second"));
  st.partial_result().metrics.push_back(
      series("copy_gbps" + sfx, "GB/s", cs, gbps,
             "device-to-device copy, bytes read + written / copy time, per second; median second"));
  st.add_metric("gemm_worst_second_ratio" + sfx, "ratio", gs.worst_ratio, true,
                "worst second / median second of the GEMM rate", metric_role::verification);
  // The drift is judged by the stress itself (max_sag): context for a reader, not a performance
  // figure a "% of peak" table may pick up.
  st.add_metric("gemm_drift_pct" + sfx, "%", gs.drift_pct, true,
                "GEMM rate: mean of the last window / the first - 1, x 100 (judged against "
                "max_sag by the stress itself)",
                metric_role::information);
  if (g.wall_s > 0) {
    st.add_metric("load_fraction" + sfx, "ratio", std::min(1.0, g.busy_s / g.wall_s), true,
                  "GEMM + copy time (CUDA events) / wall time of the counted rounds (set-up "
                  "and calibration left out): the share of the load the GPU was busy (" +
                      std::to_string(g.gemms_per_round) +
                      " GEMMs back to back per round, then one copy and the checks)",
                  metric_role::information);
  }
  st.add_metric("wrong_results" + sfx, "count", static_cast<double>(g.wrong_gemm + g.wrong_copy),
                false, "checked rounds whose last GEMM or copy differed from the reference",
                metric_role::verification);
}

// Growth of one NVML ECC counter during the stress (0 when either reading lacks it).
double ecc_growth(const gpu_run& g, const char* k) {
  const auto a = g.ecc_before.find(k), b = g.ecc_after.find(k);
  return a == g.ecc_before.end() || b == g.ecc_after.end() ? 0.0 : b->second - a->second;
}

// What NVML saw: the ECC errors' growth and, where it sampled, slowdown, power and temperature.
void report_nvml(infrabench::state& st, const gpu_run& g, const std::string& sfx, double sbe,
                 double dbe) {
  using infrabench::metric_role;
  st.add_metric("ecc_errors_new" + sfx, "count", sbe + dbe, false,
                "volatile single + double-bit ECC errors during the stress (NVML)",
                metric_role::verification);
  if (g.seconds_sampled > 0) {
    st.add_metric("slowdown_fraction" + sfx, "ratio",
                  static_cast<double>(g.seconds_serious) / static_cast<double>(g.seconds_sampled),
                  false, "share of seconds in thermal or hardware slowdown (NVML)",
                  metric_role::verification);
    st.add_metric("power_w_mean" + sfx, "W", mean_of(g.power), true, "NVML board power, mean",
                  metric_role::information);
    double tmax = 0;
    for (double x : g.temp) tmax = std::isnan(x) ? tmax : std::max(tmax, x);
    st.add_metric("temp_c_max" + sfx, "C", tmax, false, "NVML GPU temperature, hottest second",
                  metric_role::information);
  }
}

// The XIDs telemetry saw on this GPU during the stress, each a failure; a warning when it was off.
void xid_failures(infrabench::state& st, const gpu_run& g, const std::string& who, double t_begin,
                  std::vector<std::string>& failures) {
  if (auto* tele = infrabench::telemetry::active()) {
    for (const auto& e : tele->events_since(t_begin)) {
      if (e.kind == "xid" && e.gpu == g.nvml)
        failures.push_back(who + ": XID " + e.text + " during the stress");
    }
  } else {
    st.add_warning("XIDs not watched during the stress (telemetry off)");
  }
}

// The failures of a GPU that ran: wrong results, ECC errors, slowdown, a sagging GEMM rate, XIDs.
void gpu_failures(infrabench::state& st, const gpu_run& g, const std::string& who,
                  const s::stability& gs, double max_sag, double sbe, double dbe, double t_begin,
                  std::vector<std::string>& failures) {
  if (g.wrong_gemm + g.wrong_copy > 0)
    failures.push_back(who + ": " + std::to_string(g.wrong_gemm) + " GEMM and " +
                       std::to_string(g.wrong_copy) + " copy results of " +
                       std::to_string(g.iterations) + " checked rounds (" +
                       std::to_string(g.gemms_per_round) +
                       " GEMMs each, the last one checked) were wrong: a faulty GPU");
  if (sbe + dbe > 0)
    failures.push_back(who + ": " + std::to_string(static_cast<long long>(sbe)) +
                       " single-bit and " + std::to_string(static_cast<long long>(dbe)) +
                       " double-bit ECC errors during the stress: see health/gpu_row_remap");
  if (g.seconds_serious > 0)
    failures.push_back(who + ": " + nv::reason_names(g.serious_bits) + " during " +
                       std::to_string(g.seconds_serious) + " of " +
                       std::to_string(g.seconds_sampled) +
                       " s: check cooling (fans, airflow, inlet temperature) and power");
  if (const auto why = s::sag_failure(gs, max_sag, "GEMM throughput", "TFLOP/s"); !why.empty()) {
    // On the simulated node the seconds are the simulation's (no-op launches, a shared CPU): what
    // they would show of this GPU is not verified there, never a failure of a GPU not measured.
    if (st.simulated_noop_launches() > 0) {
      st.check(false, who + ": " + why);
    } else {
      failures.push_back(who + ": " + why);
    }
  }
  xid_failures(st, g, who, t_begin, failures);
}

// Metrics and failures of one GPU.
void report_gpu(infrabench::state& st, const gpu_run& g, double elapsed, double max_sag,
                double t_begin, std::vector<std::string>& failures) {
  const std::string sfx = "_gpu" + std::to_string(g.device);
  const std::string who = "GPU " + std::to_string(g.device) + " (" + g.name + ")";
  if (!g.error.empty()) {
    failures.push_back(who + ": " + g.error);
    return;
  }
  if (!g.reference_problem.empty()) {
    failures.push_back(who + ": the first GEMM result is wrong (" + g.reference_problem +
                       "): a faulty GPU or driver");
    return;
  }
  const auto tflops = rates(g.flops, g.gemm_s, elapsed, 1e12);
  const auto gbps = rates(g.bytes, g.copy_s, elapsed, 1e9);
  const s::stability gs = s::analyze(tflops), cs = s::analyze(gbps);
  report_gpu_throughput(st, g, sfx, tflops, gbps, gs, cs);
  const double sbe = ecc_growth(g, "ecc_sbe_volatile"), dbe = ecc_growth(g, "ecc_dbe_volatile");
  report_nvml(st, g, sfx, sbe, dbe);
  gpu_failures(st, g, who, gs, max_sag, sbe, dbe, t_begin, failures);
}

void gpu_stress(infrabench::state& st) {
  const double duration = st.get_float64("duration_s");
  const auto n = static_cast<int>(st.get_int64("matrix_n"));
  // 30 s for what is not load: cuBLASLt set-up, the CPU reference check of the first GEMM and the
  // last round (~0.2 s). The default duration (20 s) fits the default --timeout (60 s).
  if (duration + 30 > st.timeout_s())
    st.fail("duration_s " + std::to_string(static_cast<int>(duration)) +
            " s does not fit the configuration timeout of " +
            std::to_string(static_cast<int>(st.timeout_s())) + " s: raise --timeout");
  // Every GPU of the host from this one process: not when it can reach only some of them.
  if (const std::string& why = st.caps().node_gpus_reason; !why.empty())
    st.skip(infrabench::reason_code::no_device, why);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    st.skip(infrabench::reason_code::no_device, "no CUDA device");
  }
  const nv::library& lib = nv::library::instance();
  if (!lib.available())
    st.add_warning("no NVML (" + lib.reason() + "): no clocks, ECC or throttling");
  std::vector<gpu_run> runs(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    gpu_run& g = runs[static_cast<std::size_t>(d)];
    g.device = d;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) g.name = prop.name;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) == cudaSuccess)
      g.nvml = lib.index_of_bus_id(bus);
    if (g.nvml >= 0) g.ecc_before = lib.ecc_volatile(static_cast<unsigned>(g.nvml));
  }
  auto* tele = infrabench::telemetry::active();
  const double t_begin = tele ? tele->now_s() : 0;
  const auto t0 = clock_type::now();
  const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(
                            std::chrono::duration<double>(duration));
  std::vector<std::thread> threads;
  for (auto& g : runs) {
    threads.emplace_back([&g, n, t0, end, &st] {
      try {
        drive(g, n, t0, end, st.interrupted_flag());
      } catch (const std::exception& e) {
        g.error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  std::vector<std::string> failures;
  for (auto& g : runs) {
    if (g.nvml >= 0) g.ecc_after = lib.ecc_volatile(static_cast<unsigned>(g.nvml));
    report_gpu(st, g, elapsed, st.get_float64("max_sag"), t_begin, failures);
  }
  std::string text;
  for (const auto& f : failures) text += (text.empty() ? "" : "; ") + f;
  if (!text.empty()) st.fail(text);
}

}  // namespace

INFRABENCH_REGISTER(gpu_stress, "stress/gpu")
    .describe(
        "every GPU at once: rounds of bf16 cuBLASLt GEMMs back to back, each ending in an HBM "
        "copy and the checks, for a duration; throughput per second, its stability, "
        "throttling and ECC growth")
    // One of each per GPU: <name>_gpu<N>.
    .produces("gemm_tflops_gpu*", "TFLOP/s", infrabench::better::higher)
    .headline("gemm_tflops_gpu*")
    .produces("copy_gbps_gpu*", "GB/s", infrabench::better::higher)
    .produces("gemm_worst_second_ratio_gpu*", "ratio", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("gemm_drift_pct_gpu*", "%", infrabench::better::higher,
              infrabench::metric_role::information)
    .produces("load_fraction_gpu*", "ratio", infrabench::better::higher,
              infrabench::metric_role::information)
    .produces("wrong_results_gpu*", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("ecc_errors_new_gpu*", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("slowdown_fraction_gpu*", "ratio", infrabench::better::lower,
              infrabench::metric_role::verification)
    .produces("power_w_mean_gpu*", "W", infrabench::better::higher,
              infrabench::metric_role::information)
    .produces("temp_c_max_gpu*", "C", infrabench::better::lower,
              infrabench::metric_role::information)
    .require(infrabench::req::cuda)
    .require(infrabench::req::cublas)
    // 20 s by default, so that duration + 30 s fits the default --timeout of 60 s; the acceptance
    // and burn-in suites set their durations and timeouts.
    .add_float64_axis("duration_s", {20},
                      infrabench::float_axis("seconds of load (--stress-duration)", 1, 86400 * 7))
    .add_int64_axis("matrix_n", {8192}, infrabench::int_axis("square GEMM size", 256, 32768))
    .add_float64_axis("max_sag", {0.10},
                      infrabench::float_axis("the worst second may fall this far below the median "
                                             "(and the drift this far) before it fails",
                                             0.01, 1));
