// gemm/openblas_fp32: OpenBLAS cblas_sgemm as the reference for our fp32 GEMM, at its best.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: it picks its kernels ("core type") in its library
// constructor, from CPUID or from OPENBLAS_CORETYPE. On CPUs newer than the build it may pick a
// generic core (Prescott: ~30 GFLOP/s on a core that does 200), and an inherited
// OPENBLAS_CORETYPE may name a weaker one (this machine's environment says Haswell). Setting the
// variable before the library loads is not enough: another module (OpenCV -> liblapack ->
// libblas) may have loaded it earlier in the run. So OpenBLAS, loaded with its module
// (libinfrabench_openblas.so) when this benchmark first runs, has its core selected
// for each configuration through DYNAMIC_ARCH's own exported re-initialisation
// (gotoblas_dynamic_quit/gotoblas_dynamic_init re-read OPENBLAS_CORETYPE), to the `coretype` axis
// value (default: the best core type this CPU runs); openblas_get_corename() is checked against
// it and a mismatch is reported.
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu/gemm_model.h"
#include "cpu/gemm_peak.h"
#include "infrabench/backend_loader.h"
#include "infrabench/benchmark.h"
#include "infrabench/modules/openblas_api.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/gemm_support.h"

namespace {

namespace kc = infrabench::kernels::cpu;
namespace gb = infrabench::gemm_bench;
namespace gm = infrabench::kernels::gemm_model;

// cblas.h's values (OpenBLAS's blasint is int in Debian's libopenblas0; libopenblas64 differs).
constexpr int cblas_row_major = 101;
constexpr int cblas_no_trans = 111;
constexpr int cblas_trans = 112;

// OpenBLAS as its module (libinfrabench_openblas.so) gives it, and the OPENBLAS_CORETYPE this
// process inherited ("" = unset), read once, before any configuration changes it.
struct openblas_library {
  const infrabench_openblas_api* api = nullptr;
  std::string env_before;
  // The core type OpenBLAS was last given (at load, or by a re-initialisation): none is done again
  // for the same one. "" when it chose for itself; none when another module loaded it first.
  mutable std::optional<std::string> selected;
  [[nodiscard]] std::string corename() const {
    const char* name = api->corename();
    return name != nullptr ? name : "?";
  }
};

// The core type this CPU runs best, as OpenBLAS 0.3.x names it: Cooperlake is SkylakeX's AVX-512
// kernels plus bf16, so it is the choice wherever AVX512_BF16 exists.
std::string best_coretype() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  if (__builtin_cpu_supports("sse4.2")) return "Nehalem";
  return "Prescott";
}

// Core types that need more than this CPU has would crash on the first kernel: refuse them.
std::string coretype_unsupported_reason(const std::string& core) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if ((core == "SkylakeX" || core == "Cooperlake") && !avx512) {
    return "this CPU lacks AVX-512 for OpenBLAS core " + core;
  }
  if (core == "Cooperlake" && !__builtin_cpu_supports("avx512bf16")) {
    return "this CPU lacks AVX512_BF16 for OpenBLAS core Cooperlake";
  }
  if ((core == "Haswell" || core == "Zen") && !avx2) {
    return "this CPU lacks AVX2/FMA for OpenBLAS core " + core;
  }
  if (core == "Sandybridge" && !__builtin_cpu_supports("avx")) {
    return "this CPU lacks AVX for OpenBLAS core Sandybridge";
  }
  return {};
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// Selects OpenBLAS's kernels: OPENBLAS_CORETYPE = `coretype` (for "env": the inherited value, or
// unset so OpenBLAS detects the CPU itself), then OpenBLAS's own DYNAMIC_ARCH re-initialisation
// (gotoblas_dynamic_quit + gotoblas_dynamic_init, which read the variable again). The variable
// is restored afterwards. Returns an error when the library cannot switch (not DYNAMIC_ARCH).
std::string select_core(const openblas_library& lib, const std::string& coretype) {
  if (!lib.api->dynamic_init || !lib.api->dynamic_quit) {
    return "this OpenBLAS is not a DYNAMIC_ARCH build (no gotoblas_dynamic_init): its core is " +
           lib.corename();
  }
  // Re-initialising swaps OpenBLAS's kernel table under its running worker threads: it crashed
  // once in ~100 runs (gotoblas_dynamic_init calling through a table another path had just
  // cleared; cpu-only CI, 2026-11-29). So it is done only when the core must change: not when the
  // library loaded with it (below) or was last given it.
  const std::string wanted = coretype == "env" ? lib.env_before : coretype;
  if (wanted == lib.selected) return {};
  if (coretype == "env") {
    if (lib.env_before.empty()) unsetenv("OPENBLAS_CORETYPE");
  } else {
    setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
  }
  lib.api->dynamic_quit();
  lib.api->dynamic_init();
  lib.selected = wanted;
  if (lib.env_before.empty()) {
    unsetenv("OPENBLAS_CORETYPE");
  } else {
    setenv("OPENBLAS_CORETYPE", lib.env_before.c_str(), 1);
  }
  return {};
}

// OpenBLAS picks its core in its library constructor, from OPENBLAS_CORETYPE: when this process
// has not loaded it yet, the variable set around the module's load selects the core without any
// re-initialisation. Returns the core it was given ("" when it chose for itself; none when it was
// loaded before, by another module, with whatever the variable said then).
std::optional<std::string> load_with_core(infrabench::state& st, const std::string& coretype,
                                          const infrabench_openblas_api*& api) {
  void* already = ::dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (already != nullptr) ::dlclose(already);
  const char* inherited = std::getenv("OPENBLAS_CORETYPE");
  const std::string before = inherited != nullptr ? inherited : "";
  const bool preset = already == nullptr && coretype != "env";
  if (preset) setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
  const auto restore = [&] {
    if (!preset) return;
    if (before.empty()) {
      unsetenv("OPENBLAS_CORETYPE");
    } else {
      setenv("OPENBLAS_CORETYPE", before.c_str(), 1);
    }
  };
  try {
    api = &infrabench::backends::require<infrabench_openblas_api>(st, "openblas");
  } catch (...) {  // skipped (the module or OpenBLAS missing): the variable as it was
    restore();
    throw;
  }
  restore();
  if (already != nullptr) return std::nullopt;
  return preset ? coretype : before;
}

// Pins OpenBLAS's worker threads like our own pool's: its thread i to allowed CPU i + 1 (its last
// thread is the caller, pinned to CPU 0 by our pool). Debian builds OpenBLAS NO_AFFINITY, so
// otherwise the scheduler may stack two of them on one CPU for a while or move one mid-call, and
// every call waits for its slowest thread: on a 16-vCPU node the all-threads calls spread by a
// robust CV of 12-31%. Returns why the threads could not be pinned (empty when they are).
std::string pin_openblas_threads(const openblas_library& lib, std::size_t threads) {
  if (!lib.api->set_affinity || !lib.api->get_affinity) {
    return "this OpenBLAS has no openblas_setaffinity: its threads are not pinned";
  }
  const auto cpus = infrabench::allowed_cpus();
  for (std::size_t i = 0; i + 1 < threads; ++i) {
    const int cpu = cpus[(i + 1) % cpus.size()];
    cpu_set_t want;
    CPU_ZERO(&want);
    CPU_SET(cpu, &want);
    cpu_set_t got;
    CPU_ZERO(&got);
    const int idx = static_cast<int>(i);
    if (lib.api->set_affinity(idx, sizeof(want), &want) != 0 ||
        lib.api->get_affinity(idx, sizeof(got), &got) != 0 || !CPU_EQUAL(&want, &got)) {
      return "OpenBLAS thread " + std::to_string(i) + " could not be pinned to CPU " +
             std::to_string(cpu);
    }
  }
  return {};
}

// OpenBLAS with the `coretype` axis's core selected: loaded on first use (not when infrabench
// starts: OpenBLAS starts its threads as it loads), skipped with the loader's reason when the
// module or OpenBLAS is missing, and skipped when the core cannot be switched.
const openblas_library& load_openblas(infrabench::state& st, const std::string& coretype) {
  const openblas_library& lib = st.resource<openblas_library>("gemm/openblas", [&] {
    const char* inherited = std::getenv("OPENBLAS_CORETYPE");
    openblas_library out{nullptr, inherited != nullptr ? inherited : "", std::nullopt};
    out.selected = load_with_core(st, coretype, out.api);
    return out;
  });
  if (const auto why = select_core(lib, coretype); !why.empty()) st.skip(why);
  return lib;
}

// Says which core OpenBLAS runs when it is not the one asked for, or chose it itself, and when
// the axis overrode an inherited OPENBLAS_CORETYPE.
void warn_about_core(infrabench::state& st, const openblas_library& lib,
                     const std::string& coretype, const std::string& core) {
  if (coretype == "env") {
    st.add_warning(
        "OpenBLAS core: " + core + " (" +
        (lib.env_before.empty() ? "its own CPU detection" : "OPENBLAS_CORETYPE=" + lib.env_before) +
        ")");
  } else if (lower(core) != lower(coretype)) {
    st.add_warning("asked OpenBLAS for core " + coretype + ", it runs " + core);
  }
  if (coretype != "env" && !lib.env_before.empty() && lower(lib.env_before) != lower(coretype)) {
    st.add_warning("OPENBLAS_CORETYPE=" + lib.env_before +
                   " from the environment was overridden by coretype=" + coretype +
                   " (-a coretype=env keeps it)");
  }
}

// OpenBLAS's thread count and pinning, with a warning for each it could not have.
void set_openblas_threads(infrabench::state& st, const openblas_library& lib, std::size_t threads) {
  lib.api->set_num_threads(static_cast<int>(threads));
  if (lib.api->get_num_threads && lib.api->get_num_threads() != static_cast<int>(threads)) {
    st.add_warning("OpenBLAS runs " + std::to_string(lib.api->get_num_threads()) +
                   " threads, not " + std::to_string(threads));
  }
  if (const auto why = pin_openblas_threads(lib, threads); !why.empty()) st.add_warning(why);
}

void openblas_fp32(infrabench::state& st) {
  const std::string& coretype = st.get_string("coretype");
  if (coretype != "env") {
    if (const auto why = coretype_unsupported_reason(coretype); !why.empty()) st.skip(why);
  }
  const openblas_library& lib = load_openblas(st, coretype);
  const std::string core = lib.corename();
  warn_about_core(st, lib, coretype, core);

  const gm::gemm_shape shape = gb::shape_of(st.get_string("shape"));
  const gb::layout l = gb::make_layout(shape, gb::parse_trans(st.get_string("trans")));
  const std::size_t threads = gb::resolve_threads(st.get_int64("threads"));
  // The caller runs on one pinned thread, like thread 0 of our GEMM; OpenBLAS adds its own
  // threads up to openblas_set_num_threads, pinned below.
  infrabench::thread_pool caller(1);
  infrabench::thread_pool fill_pool(threads);
  const auto a_count = static_cast<std::size_t>(shape.m * shape.k);
  const auto b_count = static_cast<std::size_t>(shape.k * shape.n);
  const auto c_count = static_cast<std::size_t>(shape.m * shape.n);
  gb::host_array<float> a(a_count), b(b_count), c(c_count);
  gb::fill_uniform(a.data(), a_count, 1, fill_pool);
  gb::fill_uniform(b.data(), b_count, 2, fill_pool);
  gb::fill_nan(c.data(), c_count, fill_pool);

  set_openblas_threads(st, lib, threads);
  const double flops = gm::gemm_flops(shape);
  st.add_flops(flops);
  const auto m = static_cast<int>(shape.m), n = static_cast<int>(shape.n),
             k = static_cast<int>(shape.k);
  const std::function<void(std::size_t)> call = [&](std::size_t) {
    lib.api->sgemm(cblas_row_major, l.trans.a ? cblas_trans : cblas_no_trans,
                   l.trans.b ? cblas_trans : cblas_no_trans, m, n, k, 1.0f, a.data(),
                   static_cast<int>(l.lda), b.data(), static_cast<int>(l.ldb), 0.0f, c.data(),
                   static_cast<int>(l.ldc));
  };
  st.exec([&] { caller.run(call); });

  const double gflops = gb::median_gflops(st, flops);
  gb::report_verification(
      st, gb::verify_fp32(l, a.data(), b.data(), c.data(), gb::fp32_tolerance(shape.k)),
      "OpenBLAS cblas_sgemm (core " + core + ")");
  const double peak =
      gb::report_peak_fraction(st, gflops, gb::fp32_peak_isa(), st.get_int64("threads"), fill_pool);
  gb::check_reference_plausible(st, "gemm/openblas_fp32", gflops, flops, peak);
}

std::int64_t memory_fp32(const infrabench::config& cfg) {
  return gb::host_bytes_needed(cfg, 4, 4, 4, std::int64_t{64} << 20);
}

INFRABENCH_REGISTER(openblas_fp32, "gemm/openblas_fp32")
    .require(infrabench::backends::req::openblas)
    .uses("gemm/cpu_peak")
    .describe(
        "reference: OpenBLAS cblas_sgemm (its module loaded at run time; OPENBLAS_CORETYPE = "
        "coretype, checked "
        "with openblas_get_corename); verified against fp64; % of FMA peak")
    .produces(gb::cpu_gemm_metrics())
    .add_string_axis("shape", gb::default_cpu_shapes(), gb::shape_axis_options())
    .add_int64_axis("threads", {1, 0}, gb::threads_axis_options())
    .add_string_axis("trans", {"nn"}, gb::trans_axis_options())
    .add_string_axis(
        "coretype", {best_coretype()},
        infrabench::choice_axis("OpenBLAS kernels (OPENBLAS_CORETYPE); default: the best this CPU "
                                "runs; env = OpenBLAS's own choice / the inherited variable; one "
                                "per process",
                                {"env", "Prescott", "Nehalem", "Sandybridge", "Haswell", "Zen",
                                 "SkylakeX", "Cooperlake"}))
    .memory_estimate(memory_fp32);

}  // namespace
