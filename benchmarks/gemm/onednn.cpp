// gemm/onednn_fp32 and gemm/onednn_bf16: oneDNN's matmul primitive as the reference for our fp32
// and bf16 GEMMs (compiled in when libdnnl-dev is found; onednn_missing.cpp otherwise). The same
// operands, transposes (as memory format tags) and threads; bf16 takes bf16 A and B and writes
// fp32 C, as ours does. Every result verified against fp64.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "cpu/gemm_model.h"
#include "cpu/gemm_peak.h"
#include "gemm_common.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;
namespace gm = infrabench::kernels::gemm_model;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// oneDNN's CPU runtime here is OpenMP (Debian's build): its thread count is the calling thread's
// omp_set_num_threads, found in the libgomp that libdnnl brought in (no -fopenmp needed). Looked
// up once per run.
struct omp_api {
  void (*set_num_threads)(int) = nullptr;
  int (*get_thread_num)() = nullptr;
  // libgomp's entry point for `#pragma omp parallel` (GCC >= 4.9): fn(data) on every thread.
  void (*parallel)(void (*)(void*), void*, unsigned, unsigned) = nullptr;
};

const omp_api& find_omp(infrabench::state& st) {
  return st.resource<omp_api>("gemm/libgomp", [] {
    omp_api api;
    api.set_num_threads =
        reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    api.get_thread_num = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_thread_num"));
    api.parallel = reinterpret_cast<void (*)(void (*)(void*), void*, unsigned, unsigned)>(
        dlsym(RTLD_DEFAULT, "GOMP_parallel"));
    return api;
  });
}

// Pins the OpenMP team oneDNN's parallel regions run on, thread t to allowed CPU t, as our own
// pool's are: unpinned, the scheduler may stack two of them on one CPU or move one mid-call, and
// each call waits for its slowest thread (on a 16-vCPU node the all-threads results spread by a
// robust CV of 12-31%). libgomp keeps its threads and gives a team of the same size the same
// threads in the same order, so pinning them in one region pins them for oneDNN's; a second region
// checks that. Call on the OpenMP master after set_num_threads. Returns why not (empty: pinned).
std::string pin_omp_team(const omp_api& omp, std::size_t threads) {
  if (!omp.parallel || !omp.get_thread_num) {
    return "libgomp's GOMP_parallel/omp_get_thread_num not found: oneDNN's threads are not pinned";
  }
  struct team {
    const omp_api* omp;
    std::vector<int> cpus;
    std::atomic<int> wrong{0};
    bool check = false;
  } t{&omp, infrabench::allowed_cpus()};
  auto pin = [](void* p) {
    auto* tm = static_cast<team*>(p);
    const auto id = static_cast<std::size_t>(tm->omp->get_thread_num());
    cpu_set_t want;
    CPU_ZERO(&want);
    CPU_SET(tm->cpus[id % tm->cpus.size()], &want);
    if (tm->check) {
      cpu_set_t got;
      CPU_ZERO(&got);
      if (pthread_getaffinity_np(pthread_self(), sizeof(got), &got) != 0 || !CPU_EQUAL(&want, &got))
        ++tm->wrong;
    } else if (pthread_setaffinity_np(pthread_self(), sizeof(want), &want) != 0) {
      ++tm->wrong;
    }
  };
  omp.parallel(pin, &t, static_cast<unsigned>(threads), 0);
  t.check = true;
  omp.parallel(pin, &t, static_cast<unsigned>(threads), 0);
  if (t.wrong.load() > 0) {
    return std::to_string(t.wrong.load()) + " of oneDNN's " + std::to_string(threads) +
           " OpenMP threads could not be kept pinned";
  }
  return {};
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, const dnnl::memory::desc& a,
                                     const dnnl::memory::desc& b, const dnnl::memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(eng, a, b, c);
#else
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng);
#endif
}

template <typename T>
void run_onednn(infrabench::state& st) {
  constexpr bool is_bf16 = std::is_same_v<T, std::uint16_t>;
  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const gb::layout l = gb::make_layout(shape, gb::parse_trans(st.get_string("trans")));
  const std::size_t threads = gb::resolve_threads(st.get_int64("threads"));
  // oneDNN's OpenMP master thread. Pinned (like our thread 0) only when it works alone: the
  // OpenMP workers it starts inherit its affinity, and a master pinned to one CPU would stack the
  // whole team on that CPU. Once the team exists, pin_omp_team pins each of its threads.
  infrabench::thread_pool caller(1, /*pin=*/threads == 1);
  infrabench::thread_pool fill_pool(threads);

  const auto a_count = static_cast<std::size_t>(shape.m * shape.k);
  const auto b_count = static_cast<std::size_t>(shape.k * shape.n);
  const auto c_count = static_cast<std::size_t>(shape.m * shape.n);
  gb::host_array<T> a(a_count), b(b_count);
  gb::host_array<float> c(c_count);
  if constexpr (is_bf16) {
    gb::fill_uniform_bf16(a.data(), a_count, 1, fill_pool);
    gb::fill_uniform_bf16(b.data(), b_count, 2, fill_pool);
  } else {
    gb::fill_uniform(a.data(), a_count, 1, fill_pool);
    gb::fill_uniform(b.data(), b_count, 2, fill_pool);
  }
  gb::fill_nan(c.data(), c_count, fill_pool);

  bool threads_set = false;
  std::string impl, error;
  std::optional<dnnl::engine> eng;
  std::optional<dnnl::stream> strm;
  std::optional<dnnl::matmul> prim;
  std::unordered_map<int, dnnl::memory> args;
  const omp_api& omp = find_omp(st);
  std::string unpinned;
  caller.run([&](std::size_t) {
    threads_set = omp.set_num_threads != nullptr;
    if (threads_set) omp.set_num_threads(static_cast<int>(threads));
    unpinned = pin_omp_team(omp, threads);
    try {
      eng.emplace(dnnl::engine::kind::cpu, 0);
      strm.emplace(*eng);
      const dt in = is_bf16 ? dt::bf16 : dt::f32;
      const dnnl::memory::desc a_md({shape.m, shape.k}, in, l.trans.a ? tag::ba : tag::ab);
      const dnnl::memory::desc b_md({shape.k, shape.n}, in, l.trans.b ? tag::ba : tag::ab);
      const dnnl::memory::desc c_md({shape.m, shape.n}, dt::f32, tag::ab);
      const auto pd = make_pd(*eng, a_md, b_md, c_md);
      impl = pd.impl_info_str();
      prim.emplace(pd);
      args.insert({DNNL_ARG_SRC, dnnl::memory(a_md, *eng, a.data())});
      args.insert({DNNL_ARG_WEIGHTS, dnnl::memory(b_md, *eng, b.data())});
      args.insert({DNNL_ARG_DST, dnnl::memory(c_md, *eng, c.data())});
    } catch (const dnnl::error& e) {
      error = e.what();
    }
  });
  if (!error.empty()) {
    st.skip(std::string("oneDNN has no ") + (is_bf16 ? "bf16" : "fp32") + " matmul here: " + error);
  }
  if (!threads_set) st.add_warning("omp_set_num_threads not found: oneDNN chose its thread count");
  if (!unpinned.empty()) st.add_warning(unpinned);
  // A reference implementation would be a strawman, not oneDNN at its best: say so.
  if (impl.rfind("ref", 0) == 0) st.add_warning("oneDNN fell back to its reference kernel " + impl);

  const double flops = gm::gemm_flops(shape);
  st.add_flops(flops);
  const std::function<void(std::size_t)> call = [&](std::size_t) {
    prim->execute(*strm, args);
    strm->wait();
  };
  st.exec([&] { caller.run(call); });

  const double gflops = gb::median_gflops(st, flops);
  const std::string what = "oneDNN matmul (" + impl + ")";
  const std::int64_t threads_axis = st.get_int64("threads");
  // The vector-unit peak judges whether this reference ran at its best (plausibility); the
  // percentage is of the machine's peak for the type, which counts AMX tiles where they exist
  // (oneDNN uses them for bf16): a fraction of the FMA peak alone could exceed 100%.
  const kc::peak_isa vector_isa = is_bf16 ? kc::peak_isa::avx512_bf16 : gb::fp32_peak_isa();
  double peak = 0;
  if constexpr (is_bf16) {
    gb::report_verification(
        st, gb::verify_bf16(l, a.data(), b.data(), c.data(), gb::bf16_tolerance(shape.k)), what);
    if (const auto amx = gb::amx_bf16_peak_isa()) {
      (void)gb::report_peak_fraction(st, gflops, *amx, threads_axis, fill_pool);
      peak = gb::cpu_peak(st, vector_isa, threads_axis, fill_pool).gflops;
    } else {
      peak = gb::report_peak_fraction(st, gflops, vector_isa, threads_axis, fill_pool);
    }
  } else {
    gb::report_verification(
        st, gb::verify_fp32(l, a.data(), b.data(), c.data(), gb::fp32_tolerance(shape.k)), what);
    peak = gb::report_peak_fraction(st, gflops, vector_isa, threads_axis, fill_pool);
  }
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
  caller.run([&](std::size_t) {
    args.clear();
    prim.reset();
    strm.reset();
    eng.reset();
  });
}

void onednn_fp32(infrabench::state& st) {
  run_onednn<float>(st);
}
void onednn_bf16(infrabench::state& st) {
  run_onednn<std::uint16_t>(st);
}

INFRABENCH_REGISTER(onednn_fp32, "gemm/onednn_fp32")
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
