#include "shared/gemm_support.h"

#include <sys/mman.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <new>
#include <stdexcept>
#include <variant>

#include "cpu/gemm.h"
#include "infrabench/error.h"

namespace infrabench::gemm_bench {
namespace {

namespace kc = kernels::cpu;

[[nodiscard]] std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) with 24 random bits: exactly representable in fp32.
[[nodiscard]] float uniform_at(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = splitmix64(seed * 0x100000001b3ull + i);
  return static_cast<float>(static_cast<std::int64_t>(h >> 40) - (std::int64_t{1} << 23)) *
         (1.0f / static_cast<float>(1 << 23));
}

template <typename Fn>
void parallel_chunks(std::size_t n, thread_pool& pool, Fn&& fn) {
  const std::size_t threads = pool.size();
  pool.run([&](std::size_t t) {
    const std::size_t begin = n * t / threads;
    const std::size_t end = n * (t + 1) / threads;
    fn(begin, end);
  });
}

template <typename T>
[[nodiscard]] double as_double(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return kc::bf16_to_float(x);
  }
}

template <typename T>
gm::verification verify_impl(const layout& l, const T* a, const T* b, const float* c,
                             const gm::tolerance& tol) {
  const auto& s = l.shape;
  std::vector<gm::sampled_entry> entries;
  for (const auto& pos : gm::sample_positions(s.m, s.n, verify_samples)) {
    gm::sampled_entry e;
    e.i = pos.i;
    e.j = pos.j;
    double ref = 0, abs_sum = 0;
    for (std::int64_t p = 0; p < s.k; ++p) {
      const double x = as_double(l.trans.a ? a[p * l.lda + pos.i] : a[pos.i * l.lda + p]);
      const double y = as_double(l.trans.b ? b[pos.j * l.ldb + p] : b[p * l.ldb + pos.j]);
      ref += x * y;
      abs_sum += std::fabs(x * y);
    }
    e.reference = ref;
    e.abs_sum = abs_sum;
    e.value = c[pos.i * l.ldc + pos.j];
    entries.push_back(e);
  }
  // Every entry for NaN and infinity (cheap next to the GEMM): an entry the kernel never wrote
  // still holds the NaN C was filled with. The first one found joins the sampled entries, with a
  // reference computed for it, so the report names it.
  for (std::int64_t i = 0; i < s.m; ++i) {
    const float* row = c + i * l.ldc;
    const auto* bad = std::find_if(row, row + s.n, [](float v) { return !std::isfinite(v); });
    if (bad == row + s.n) continue;
    gm::sampled_entry e;
    e.i = i;
    e.j = bad - row;
    for (std::int64_t p = 0; p < s.k; ++p) {
      const double x = as_double(l.trans.a ? a[p * l.lda + e.i] : a[e.i * l.lda + p]);
      const double y = as_double(l.trans.b ? b[e.j * l.ldb + p] : b[p * l.ldb + e.j]);
      e.reference += x * y;
      e.abs_sum += std::fabs(x * y);
    }
    e.value = *bad;
    entries.push_back(e);
    break;
  }
  return gm::verify_entries(entries, tol);
}

}  // namespace

// ---- axes
// ----------------------------------------------------------------------------------------

std::vector<std::string> default_cpu_shapes() {
  return {"256", "1024", "2048", "4096", "llama3-8b.qkv@1024", "llama3-8b.mlp_down@1024"};
}

axis_options shape_axis_options() {
  // Any text: a shape is checked when it is parsed (shape_of), not against a list of choices.
  return infrabench::choice_axis(
      "N (square), MxNxK, or a transformer layer <model>.<qkv|attn_out|mlp_up|mlp_down>[@tokens] "
      "for llama2-7b, llama3-8b, llama2-13b, llama3-70b (M = tokens, default 4096)",
      {});
}

axis_options threads_axis_options() {
  return infrabench::thread_count_axis("0 = all allowed CPUs");
}

axis_options trans_axis_options() {
  return infrabench::choice_axis("op(A) op(B): n = as stored (row-major), t = transposed",
                                 {"nn", "nt", "tn", "tt"});
}

gm::gemm_shape shape_of(const std::string& text) {
  try {
    return gm::parse_gemm_shape(text);
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("axis 'shape': ") + e.what());
  }
}

const axis_value& config_value(const config& cfg, std::string_view name) {
  if (const axis_value* v = find_axis(cfg, name)) return *v;
  throw std::logic_error("configuration has no axis " + std::string(name));
}

std::int64_t host_bytes_needed(const config& cfg, int a_elem, int b_elem, int c_elem,
                               std::int64_t extra) {
  const auto shape = shape_of(std::get<std::string>(config_value(cfg, "shape")));
  return gm::saturating_add(gm::gemm_operand_bytes(shape, a_elem, b_elem, c_elem), extra);
}

transposes parse_trans(const std::string& text) {
  if (text.size() != 2 || (text[0] != 'n' && text[0] != 't') ||
      (text[1] != 'n' && text[1] != 't')) {
    throw std::invalid_argument("unknown transpose flag '" + text + "' (nn, nt, tn, tt)");
  }
  return {text[0] == 't', text[1] == 't'};
}

// ---- operands
// ------------------------------------------------------------------------------------

template <typename T>
host_array<T>::host_array(std::size_t count) : m_count(count) {
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t bytes = std::max<std::size_t>(count * sizeof(T), 64);
  // Large operands on 2 MiB boundaries so transparent huge pages can back them (fewer TLB misses
  // in packing); small ones on a cache line.
  const std::size_t align = bytes >= huge ? huge : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  m_data.reset(std::aligned_alloc(align, rounded));
  if (!m_data) throw std::bad_alloc();
  if (align == huge) (void)madvise(m_data.get(), rounded, MADV_HUGEPAGE);
}
template class host_array<float>;
template class host_array<std::uint16_t>;

void fill_uniform(float* p, std::size_t n, std::uint64_t seed, thread_pool& pool) {
  parallel_chunks(n, pool, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) p[i] = uniform_at(seed, i);
  });
}

void fill_uniform_bf16(std::uint16_t* p, std::size_t n, std::uint64_t seed, thread_pool& pool) {
  parallel_chunks(n, pool, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) p[i] = kc::float_to_bf16(uniform_at(seed, i));
  });
}

void fill_nan(float* p, std::size_t n, thread_pool& pool) {
  parallel_chunks(n, pool, [&](std::size_t begin, std::size_t end) {
    std::fill(p + begin, p + end, std::numeric_limits<float>::quiet_NaN());
  });
}

layout make_layout(const gm::gemm_shape& shape, transposes trans) {
  layout l;
  l.shape = shape;
  l.trans = trans;
  l.lda = trans.a ? shape.m : shape.k;
  l.ldb = trans.b ? shape.k : shape.n;
  l.ldc = shape.n;
  return l;
}

// ---- verification
// --------------------------------------------------------------------------------

gm::verification verify_fp32(const layout& l, const float* a, const float* b, const float* c,
                             const gm::tolerance& tol) {
  return verify_impl(l, a, b, c, tol);
}

gm::verification verify_bf16(const layout& l, const std::uint16_t* a, const std::uint16_t* b,
                             const float* c, const gm::tolerance& tol) {
  return verify_impl(l, a, b, c, tol);
}

gm::tolerance fp32_tolerance(std::int64_t k) {
  return gm::gemm_tolerance({gm::number_format::fp32, gm::number_format::fp32,
                             gm::number_format::fp32, gm::number_format::fp32, 1.0},
                            k);
}

gm::tolerance bf16_tolerance(std::int64_t k) {
  // bf16 x bf16 products are exact in fp32; vdpbf16ps rounds (and flushes denormals) once per
  // addition, like an fp32 FMA chain, so the fp32 accumulation bound applies unchanged.
  return gm::gemm_tolerance({gm::number_format::bf16, gm::number_format::bf16,
                             gm::number_format::fp32, gm::number_format::fp32, 1.0},
                            k);
}

std::vector<metric_decl> cpu_gemm_metrics() {
  // Each percentage is declared a fraction of the measured peaks in its own entry, so that no
  // position in the list ties the two.
  const auto pct_of_peak = [](std::string name) {
    metric_decl d{std::move(name), "%"};
    d.relation = {relation_kind::fraction_of, "peak_*_gflops"};
    return d;
  };
  std::vector<metric_decl> out = {
      derived_metric(work_kind::flops),
      {"verify_err_to_bound", "ratio", better::lower, metric_role::verification},
      {"peak_*_gflops", "GFLOP/s", better::higher, metric_role::information},
      pct_of_peak("pct_of_fma_peak"),
      pct_of_peak("pct_of_amx_peak"),
  };
  out.front().headline = true;
  return out;
}

metric_decl reference_ratio_metric(const std::string& label) {
  return {"pct_of_" + label, "%"};
}

void report_verification(state& st, const gm::verification& v, std::string_view what) {
  st.add_metric("verify_err_to_bound", "ratio", v.max_bound_ratio, false,
                "max over " + std::to_string(v.checked) +
                    " sampled entries of |C - fp64 reference| / tolerance bound (fail above 1); " +
                    v.tol.rule,
                metric_role::verification);
  st.check(v.ok, reason_code::verify_failed,
           std::string(what) + " differs from the fp64 reference: " + v.summary());
}

// ---- peak and ratios
// -----------------------------------------------------------------------------

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

double median_gflops(state& st, double flops_per_call) {
  const double t = st.partial_result().time.median;
  return t > 0 ? flops_per_call / t / 1e9 : 0.0;
}

std::size_t resolve_threads(std::int64_t threads_axis) {
  return threads_axis == 0 ? allowed_cpus().size() : static_cast<std::size_t>(threads_axis);
}

double measure_peak_gflops(kc::peak_isa isa, thread_pool& pool, int runs) {
  // Each thread times its own ~1 ms run (the pool's wake-up stays out of it); a run's rate is
  // every thread's work over the slowest thread's time; the best run, because a run that shared
  // its core with another process is not the peak.
  const std::int64_t iterations = kc::is_amx(isa) ? 60000 : 300000;
  const double flops = kc::peak_flops_per_iteration(isa) * static_cast<double>(iterations) *
                       static_cast<double>(pool.size());
  std::vector<double> busy_s(pool.size());
  double best = 0;
  for (int rep = 0; rep < runs; ++rep) {
    pool.run([&](std::size_t t) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)kc::run_peak_chains(isa, iterations);
      busy_s[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    const double s = *std::max_element(busy_s.begin(), busy_s.end());
    if (s > 0) best = std::max(best, flops / s / 1e9);
  }
  return best;
}

clock_value cpu_clock() {
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  long long khz = 0;
  if (max_freq >> khz && khz > 0) {
    return {static_cast<double>(khz) / 1e6,
            "cpuinfo_max_freq (the inventory's cpu.max_frequency_mhz)"};
  }
  // The time-stamp counter ticks at the nominal clock whatever the load (invariant TSC; a VM's is
  // the host's): 20 ms of it against the steady clock. Not the add chain: Golden Cove and later
  // cores fold dependent add-immediates at rename (10.8 "GHz" on this VM's Emerald Rapids).
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t c0 = __rdtsc();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  const std::uint64_t c1 = __rdtsc();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {s > 0 ? static_cast<double>(c1 - c0) / s / 1e9 : 0,
          "the time-stamp counter's rate: the nominal clock (no cpufreq here)"};
}

peak_value clock_x_width_peak(kc::peak_isa isa, thread_pool& pool) {
  const auto cpu = kc::this_cpu_model();
  const auto rate = kc::peak_issue_rate(isa, cpu);
  const std::string name(kc::to_string(isa));
  if (!rate) {
    return {0, isa,
            "no " + name + " issue rate for this core (" + cpu.vendor + " family " +
                std::to_string(cpu.family) + " model " + std::to_string(cpu.model) +
                ") in the clock x width table"};
  }
  const clock_value clock = cpu_clock();
  if (!(clock.ghz > 0)) return {0, isa, "the CPU's clock could not be read or measured"};
  const auto threads = static_cast<double>(pool.size());
  return {kc::clock_x_width_gflops(isa, clock.ghz, threads, rate->per_cycle), isa,
          "clock x width: " + short_number(clock.ghz) + " GHz (" + clock.method + ") x " +
              std::to_string(pool.size()) + " thread(s) x " + short_number(rate->per_cycle) +
              " x " + short_number(kc::peak_flops_per_instruction(isa)) + " flop per cycle (" +
              name + ", " + rate->core + ": " + rate->basis + ")"};
}

peak_value cpu_peak(state& st, kc::peak_isa isa, std::int64_t threads_axis, thread_pool& pool) {
  const std::string name(kc::to_string(isa));
  if (const result* r =
          st.find_earlier("gemm/cpu_peak", {{"isa", name}, {"threads", threads_axis}})) {
    if (r->st == status::passed) {
      for (const auto& m : r->metrics) {
        if (m.name == "gflops") {
          return {m.best, isa,
                  "gemm/cpu_peak isa=" + name + " threads=" + std::to_string(threads_axis) +
                      " earlier in this run, its fastest sample"};
        }
      }
    }
  }
  return {measure_peak_gflops(isa, pool, 15), isa,
          "the gemm/cpu_peak kernel (isa=" + name +
              ") measured in this configuration's set-up, best of 15 runs"};
}

kc::peak_isa fp32_peak_isa() {
  return kc::peak_isa_unsupported_reason(kc::peak_isa::avx512_fp32).empty()
             ? kc::peak_isa::avx512_fp32
             : kc::peak_isa::avx2_fp32;
}

std::optional<kc::peak_isa> amx_bf16_peak_isa() {
  if (!kc::peak_isa_unsupported_reason(kc::peak_isa::amx_bf16).empty()) return std::nullopt;
  return kc::peak_isa::amx_bf16;
}

void withhold_amx_fraction_without_amx(state& st) {
  const std::string why = kc::peak_isa_unsupported_reason(kc::peak_isa::amx_bf16);
  if (!why.empty()) st.withhold_metric("pct_of_amx_peak", why + ": no AMX peak to judge against");
}

double report_peak_fraction(state& st, double gflops, kc::peak_isa isa, std::int64_t threads_axis,
                            thread_pool& pool) {
  const std::string name(kc::to_string(isa));
  const std::string pct_name = kc::is_amx(isa) ? "pct_of_amx_peak" : "pct_of_fma_peak";
  // Withheld with the reason, not left out: a baseline made on a CPU that has the ISA judges
  // this metric, and on one without it the rule is waived with this reason rather than refused
  // as naming a metric the benchmark does not produce (issue 45).
  if (const std::string why = kc::peak_isa_unsupported_reason(isa); !why.empty()) {
    st.withhold_metric(pct_name, why + ": no " + name + " peak to judge against");
    return 0;
  }
  const peak_value peak = cpu_peak(st, isa, threads_axis, pool);
  if (peak.gflops <= 0) {
    st.withhold_metric(pct_name, "the " + name + " peak could not be measured");
    return 0;
  }
  st.add_metric("peak_" + name + "_gflops", "GFLOP/s", peak.gflops, true,
                "the " + name + " peak " + pct_name + " is a fraction of: " + peak.method,
                metric_role::information);
  if (gflops > peak.gflops) {
    // Faster than the ceiling: the peak is not this GEMM's ceiling (units it does not count) or
    // was measured low. A percentage above 100 would say neither, so none is reported.
    st.withhold_metric(
        pct_name, short_number(gflops) + " GFLOP/s is above the measured " + name + " peak (" +
                      short_number(peak.gflops) + " GFLOP/s, " + peak.method +
                      "): this GEMM uses units that peak does not count, or the peak was measured "
                      "while the machine was busy");
    return peak.gflops;
  }
  st.add_metric(pct_name, "%", 100.0 * gflops / peak.gflops, true,
                "median GFLOP/s / the measured " + name + " peak " + short_number(peak.gflops) +
                    " GFLOP/s (peak_" + name + "_gflops): " + peak.method);
  return peak.gflops;
}

void check_reference_plausible(state& st, std::string_view benchmark, double gflops,
                               double flops_per_call, double peak_gflops) {
  const std::size_t threads = resolve_threads(st.get_int64("threads"));
  double one_thread = 0;
  if (threads != 1) {
    // The same configuration on one thread (every other axis equal, e.g. OpenBLAS's coretype).
    nlohmann::json match = nlohmann::json::object();
    for (const auto& [name, value] : st.get_config()) {
      std::visit([&, &n = name](const auto& v) { match[n] = v; }, value);
    }
    match["threads"] = 1;
    const result* r = st.find_earlier(benchmark, match);
    if (r != nullptr && r->st == status::passed) {
      for (const auto& m : r->metrics) {
        if (m.name == "gflops") one_thread = m.value;
      }
    }
  }
  const std::string why = gm::implausible_reference_reason(
      gflops, flops_per_call, peak_gflops, one_thread, static_cast<std::int64_t>(threads));
  st.check(why.empty(), reason_code::implausible, why);
}

namespace {
// Noise (robust CV above the limit) makes a median less certain, not a strawman: such a
// reference still gives a ratio. Anything else (implausibly slow, a wrong result) does not.
[[nodiscard]] std::vector<std::string> disqualifying_reasons(const result& r) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r.invalid_reasons.size(); ++i) {
    const bool noisy = i < r.invalid_codes.size() && r.invalid_codes[i] == reason_code::noisy;
    if (!noisy) out.push_back(r.invalid_reasons[i]);
  }
  return out;
}
}  // namespace

void report_reference_ratios(state& st, double gflops,
                             const std::vector<std::pair<std::string, std::string>>& references) {
  const nlohmann::json match = {{"shape", st.get_string("shape")},
                                {"threads", st.get_int64("threads")},
                                {"trans", st.get_string("trans")}};
  for (const auto& [bench, label] : references) {
    const result* r = st.find_earlier(bench, match);
    if (r == nullptr || r->st != status::passed) continue;
    if (const auto bad = disqualifying_reasons(*r); !r->valid && !bad.empty()) {
      std::string text = bench + " (same shape, threads, trans) is invalid: ";
      for (std::size_t i = 0; i < bad.size(); ++i) text += (i ? "; " : "") + bad[i];
      st.withhold_metric("pct_of_" + label, text);
      continue;
    }
    for (const auto& m : r->metrics) {
      if (m.name != "gflops" || m.value <= 0) continue;
      st.add_metric("pct_of_" + label, "%", 100.0 * gflops / m.value, true,
                    "this median GFLOP/s / " + bench + "'s median " + std::to_string(m.value) +
                        " GFLOP/s (same shape, threads, trans, earlier in this run)" +
                        (r->valid ? "" : "; that result is noisy"));
    }
  }
}

}  // namespace infrabench::gemm_bench
