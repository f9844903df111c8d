// gemm/onednn_fp32 and gemm/onednn_bf16: oneDNN's matmul primitive as the reference for our fp32
// and bf16 GEMMs, run in the oneDNN module (modules/onednn.cpp, built when libdnnl-dev is found
// and loaded when one of these first runs; skipped with the loader's reason otherwise). The same
// operands, transposes (as memory format tags) and threads; bf16 takes bf16 A and B and writes
// fp32 C, as ours does. Every result verified against fp64.
#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/gemm_model.h"
#include "cpu/gemm_peak.h"
#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/modules/onednn_api.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/gemm_support.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;
namespace gm = infrabench::kernels::gemm_model;

// oneDNN in its module (libinfrabench_onednn.so), made, run and destroyed on one thread: the
// OpenMP master of its team.
class onednn_matmul {
 public:
  explicit onednn_matmul(const infrabench_onednn_api& api) : m_api(&api) {}
  ~onednn_matmul() { reset(); }
  onednn_matmul(const onednn_matmul&) = delete;
  onednn_matmul& operator=(const onednn_matmul&) = delete;

  // Returns oneDNN's refusal (empty when made).
  std::string create(bool bf16, const gm::gemm_shape& shape, const gb::layout& l, const void* a,
                     const void* b, float* c) {
    std::array<char, 1024> error{};
    m_mm = m_api->matmul_create(bf16 ? 1 : 0, shape.m, shape.n, shape.k, l.trans.a ? 1 : 0,
                                l.trans.b ? 1 : 0, a, b, c, error.data(), error.size());
    return m_mm != nullptr ? std::string() : std::string(error.data());
  }
  [[nodiscard]] std::string impl() const { return m_mm ? m_api->matmul_impl(m_mm) : ""; }
  void execute() {
    std::array<char, 1024> error{};
    if (m_api->matmul_execute(m_mm, error.data(), error.size()) != 0) {
      throw std::runtime_error(std::string("oneDNN matmul: ") + error.data());
    }
  }
  void reset() {
    if (m_mm != nullptr) m_api->matmul_destroy(m_mm);
    m_mm = nullptr;
  }

 private:
  const infrabench_onednn_api* m_api;
  infrabench_onednn_matmul* m_mm = nullptr;
};

// Pins the OpenMP team oneDNN's parallel regions run on, thread t to allowed CPU t, as our own
// pool's are: unpinned, the scheduler may stack two of them on one CPU or move one mid-call, and
// each call waits for its slowest thread (on a 16-vCPU node the all-threads results spread by a
// robust CV of 12-31%). Call on the OpenMP master after set_num_threads. Returns why not (empty:
// pinned).
std::string pin_omp_team(const infrabench_onednn_api& api, std::size_t threads) {
  const std::vector<int> cpus = infrabench::allowed_cpus();
  const int wrong = api.pin_team(static_cast<int>(threads), cpus.data(), cpus.size());
  if (wrong < 0) {
    return "libgomp's GOMP_parallel/omp_get_thread_num not found: oneDNN's threads are not pinned";
  }
  if (wrong > 0) {
    return std::to_string(wrong) + " of oneDNN's " + std::to_string(threads) +
           " OpenMP threads could not be kept pinned";
  }
  return {};
}

// A GEMM's operands on the host: A and B uniform (fp32, or bf16 as T = std::uint16_t), C NaN (an
// entry the GEMM leaves unwritten fails the verification). Filled by the pool's threads, so each
// first-touches the pages it fills.
template <typename T>
struct host_operands {
  gb::host_array<T> a, b;
  gb::host_array<float> c;
  host_operands(const gm::gemm_shape& shape, infrabench::thread_pool& pool)
      : a(static_cast<std::size_t>(shape.m * shape.k)),
        b(static_cast<std::size_t>(shape.k * shape.n)),
        c(static_cast<std::size_t>(shape.m * shape.n)) {
    if constexpr (std::is_same_v<T, std::uint16_t>) {
      gb::fill_uniform_bf16(a.data(), a.size(), 1, pool);
      gb::fill_uniform_bf16(b.data(), b.size(), 2, pool);
    } else {
      gb::fill_uniform(a.data(), a.size(), 1, pool);
      gb::fill_uniform(b.data(), b.size(), 2, pool);
    }
    gb::fill_nan(c.data(), c.size(), pool);
  }
};

// Makes the matmul on the OpenMP master (its thread count and pinning first), skips when oneDNN
// has none, and warns of what would keep it from its best. Returns oneDNN's implementation name.
template <typename T>
std::string make_matmul(infrabench::state& st, const infrabench_onednn_api& api,
                        infrabench::thread_pool& caller, onednn_matmul& mm, std::size_t threads,
                        const gm::gemm_shape& shape, const gb::layout& l,
                        const host_operands<T>& o) {
  constexpr bool is_bf16 = std::is_same_v<T, std::uint16_t>;
  bool threads_set = false;
  std::string impl, error, unpinned;
  caller.run([&](std::size_t) {
    threads_set = api.set_num_threads(static_cast<int>(threads)) != 0;
    unpinned = pin_omp_team(api, threads);
    error = mm.create(is_bf16, shape, l, o.a.data(), o.b.data(), o.c.data());
    impl = mm.impl();
  });
  if (!error.empty()) {
    st.skip(std::string("oneDNN has no ") + (is_bf16 ? "bf16" : "fp32") + " matmul here: " + error);
  }
  if (!threads_set) st.add_warning("omp_set_num_threads not found: oneDNN chose its thread count");
  if (!unpinned.empty()) st.add_warning(unpinned);
  // A reference implementation would be a strawman, not oneDNN at its best: say so.
  if (impl.rfind("ref", 0) == 0) st.add_warning("oneDNN fell back to its reference kernel " + impl);
  return impl;
}

// Verifies the result against fp64 and reports the fractions of the peak. Returns the vector-unit
// peak, which the plausibility check judges by.
template <typename T>
double verify_and_report_peak(infrabench::state& st, const gm::gemm_shape& shape,
                              const gb::layout& l, const host_operands<T>& o, double gflops,
                              const std::string& what, std::int64_t threads_axis,
                              infrabench::thread_pool& fill_pool) {
  constexpr bool is_bf16 = std::is_same_v<T, std::uint16_t>;
  // The vector-unit peak judges whether this reference ran at its best (plausibility); the
  // percentage is of the machine's peak for the type, which counts AMX tiles where they exist
  // (oneDNN uses them for bf16): a fraction of the FMA peak alone could exceed 100%.
  const kc::peak_isa vector_isa = is_bf16 ? kc::peak_isa::avx512_bf16 : gb::fp32_peak_isa();
  double peak = 0;
  if constexpr (is_bf16) {
    gb::report_verification(
        st, gb::verify_bf16(l, o.a.data(), o.b.data(), o.c.data(), gb::bf16_tolerance(shape.k)),
        what);
    if (const auto amx = gb::amx_bf16_peak_isa()) {
      (void)gb::report_peak_fraction(st, gflops, *amx, threads_axis, fill_pool);
      peak = gb::cpu_peak(st, vector_isa, threads_axis, fill_pool).gflops;
      // Judged against the AMX peak here; a baseline made on a CPU without tiles judges the
      // vector fraction, and its rule is waived with this reason rather than refused.
      st.withhold_metric("pct_of_fma_peak",
                         "judged against the AMX peak on this CPU (pct_of_amx_peak): oneDNN "
                         "uses the tiles, so a fraction of the vdpbf16ps peak would pass 100%");
    } else {
      peak = gb::report_peak_fraction(st, gflops, vector_isa, threads_axis, fill_pool);
      gb::withhold_amx_fraction_without_amx(st);
    }
  } else {
    gb::report_verification(
        st, gb::verify_fp32(l, o.a.data(), o.b.data(), o.c.data(), gb::fp32_tolerance(shape.k)),
        what);
    peak = gb::report_peak_fraction(st, gflops, vector_isa, threads_axis, fill_pool);
  }
  return peak;
}

template <typename T>
void run_onednn(infrabench::state& st) {
  constexpr bool is_bf16 = std::is_same_v<T, std::uint16_t>;
  // Loaded here, on first use, not when infrabench starts: libdnnl brings its OpenMP runtime.
  // Skipped with the loader's reason when the module or oneDNN is missing.
  const auto& api = infrabench::backends::require<infrabench_onednn_api>(st, "onednn");
  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const gb::layout l = gb::make_layout(shape, gb::parse_trans(st.get_string("trans")));
  const std::size_t threads = gb::resolve_threads(st.get_int64("threads"));
  // oneDNN's OpenMP master thread. Pinned (like our thread 0) only when it works alone: the
  // OpenMP workers it starts inherit its affinity, and a master pinned to one CPU would stack the
  // whole team on that CPU. Once the team exists, pin_omp_team pins each of its threads.
  infrabench::thread_pool caller(1, /*pin=*/threads == 1);
  infrabench::thread_pool fill_pool(threads);
  const host_operands<T> o(shape, fill_pool);

  onednn_matmul mm(api);
  const std::string impl = make_matmul(st, api, caller, mm, threads, shape, l, o);

  const double flops = gm::gemm_flops(shape);
  st.add_flops(flops);
  const std::function<void(std::size_t)> call = [&](std::size_t) { mm.execute(); };
  st.exec([&] { caller.run(call); });

  const double gflops = gb::median_gflops(st, flops);
  const std::string what = "oneDNN matmul (" + impl + ")";
  const std::int64_t threads_axis = st.get_int64("threads");
  const double peak =
      verify_and_report_peak(st, shape, l, o, gflops, what, threads_axis, fill_pool);
  // Under heavy load the all-threads results were seen to collapse to exactly 8.00 ms per call
  // whatever the shape (4 GFLOP/s at 256^3, 34 at 512^3): a fixed per-call latency of two 4 ms
  // scheduler ticks, not work. Our pool's threads sleep on a condition variable (they do not
  // spin), so the likely cause is libgomp's team on an oversubscribed machine: a woken OpenMP
  // worker waits a tick or two for a CPU while its team's barrier holds the call. Its wait policy
  // is read from OMP_WAIT_POLICY / GOMP_SPINCOUNT when libgomp loads (before main), so it cannot
  // be changed from here; such a result is marked invalid instead of serving as a strawman.
  gb::check_reference_plausible(st, is_bf16 ? "gemm/onednn_bf16" : "gemm/onednn_fp32", gflops,
                                flops, peak);
  // Destroy oneDNN's objects on the thread that made them (its OpenMP master).
  caller.run([&](std::size_t) { mm.reset(); });
}

void onednn_fp32(infrabench::state& st) {
  run_onednn<float>(st);
}
void onednn_bf16(infrabench::state& st) {
  run_onednn<std::uint16_t>(st);
}

INFRABENCH_REGISTER(onednn_fp32, "gemm/onednn_fp32")
    .require(infrabench::backends::req::onednn)
    .uses("gemm/cpu_peak")
    .describe("reference: oneDNN fp32 matmul primitive; verified against fp64; % of FMA peak")
    .produces(gb::cpu_gemm_metrics())
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .memory_estimate([](const infrabench::config& cfg) {
      return gb::host_bytes_needed(cfg, 4, 4, 4, std::int64_t{64} << 20);
    });

INFRABENCH_REGISTER(onednn_bf16, "gemm/onednn_bf16")
    .require(infrabench::backends::req::onednn)
    .uses("gemm/cpu_peak")
    .describe(
        "reference: oneDNN bf16 matmul primitive (bf16 A, B; fp32 C); verified against fp64; % "
        "of the vdpbf16ps peak")
    .produces(gb::cpu_gemm_metrics())
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .memory_estimate([](const infrabench::config& cfg) {
      return gb::host_bytes_needed(cfg, 2, 2, 4, std::int64_t{64} << 20);
    });

}  // namespace
