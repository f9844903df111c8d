#include "infrabench/canary.h"

#include <chrono>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "cpu/gemm_peak.h"
#include "cpu/stream.h"

namespace infrabench {

namespace kc = kernels::cpu;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

kc::peak_isa fma_isa() {
  return kc::peak_isa_unsupported_reason(kc::peak_isa::avx512_fp32).empty()
             ? kc::peak_isa::avx512_fp32
             : kc::peak_isa::avx2_fp32;
}

// The FMA chains in short calls (~0.3 ms) until `seconds` have passed: all the work over all the
// time, so time lost to other processes or the hypervisor lowers it as it lowers a benchmark.
double fma_gflops(double seconds) {
  const kc::peak_isa isa = fma_isa();
  constexpr std::int64_t iterations = 100000;
  // Warmed up for half the time first, so a core coming from idle is measured at its clock, not
  // its ramp. (On the loaded VM the start point still read lower than the end point in most runs,
  // 48-113 against 99-115 GFLOP/s: the load of the moment, which is what the canary is for.)
  volatile float sink = 0;
  for (const auto w0 = clock_type::now(); seconds_since(w0) < seconds / 2;)
    sink = sink + kc::run_peak_chains(isa, iterations);
  double calls = 0;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    sink = sink + kc::run_peak_chains(isa, iterations);
    ++calls;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  return calls * static_cast<double>(iterations) * kc::peak_flops_per_iteration(isa) / elapsed /
         1e9;
}

struct free_deleter {
  void operator()(double* p) const { std::free(p); }
};
using doubles = std::unique_ptr<double, free_deleter>;

doubles aligned_doubles(std::size_t n) {
  auto* p = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  if (p == nullptr) throw std::bad_alloc();
  return doubles(p);
}

// STREAM's triad on three arrays of 32 MiB (larger than the last-level caches of the CPUs we meet),
// regular stores, counted as STREAM counts it (24 bytes an element), after one untimed pass.
double stream_gbps(double seconds) {
  constexpr std::size_t n = std::size_t{4} << 20;
  const doubles a = aligned_doubles(n), b = aligned_doubles(n), c = aligned_doubles(n);
  for (std::size_t i = 0; i < n; ++i) {
    a.get()[i] = 0;
    b.get()[i] = 1;
    c.get()[i] = 2;
  }
  const kc::stream_arrays arrays{a.get(), b.get(), c.get()};
  kc::stream_run(kc::stream_op::triad, kc::store_kind::regular, arrays, 3.0, 0, n);
  double passes = 0;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    kc::stream_run(kc::stream_op::triad, kc::store_kind::regular, arrays, 3.0, 0, n);
    ++passes;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  return passes * static_cast<double>(n) * 3 * sizeof(double) / elapsed / 1e9;
}

double mean_of(const std::vector<canary_point>& points, double canary_point::*field) {
  if (points.empty()) return 0;
  double sum = 0;
  for (const auto& p : points) sum += p.*field;
  return sum / static_cast<double>(points.size());
}

}  // namespace

std::string canary_fma_isa() {
  return std::string(kc::to_string(fma_isa()));
}

canary_point measure_canary_point(const std::string& at, double seconds_each) {
  canary_point p;
  p.at = at;
  const auto t0 = clock_type::now();
  p.fma_gflops = fma_gflops(seconds_each);
  p.stream_gbps = stream_gbps(seconds_each);
  p.seconds = seconds_since(t0);
  return p;
}

double canary::fma_gflops() const {
  return mean_of(points, &canary_point::fma_gflops);
}
double canary::stream_gbps() const {
  return mean_of(points, &canary_point::stream_gbps);
}

nlohmann::json canary::to_json() const {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points) {
    pts.push_back({{"at", p.at},
                   {"fma_gflops", p.fma_gflops},
                   {"stream_gbps", p.stream_gbps},
                   {"seconds", p.seconds}});
  }
  nlohmann::json out = {{"fma_isa", fma_isa}, {"threads", 1}, {"points", pts}};
  // Without a point there is no rate: the fields are left out, never written as 0.
  if (!points.empty()) {
    out["fma_gflops"] = fma_gflops();
    out["stream_gbps"] = stream_gbps();
  }
  if (!not_measured.empty()) out["not_measured"] = not_measured;
  out["method"] =
      "the machine itself, before and after the benchmarks, on one thread: the gemm/cpu_peak "
      "FMA chains (" +
      fma_isa +
      ") and STREAM's triad on 3 x 32 MiB, ~0.1 s each; the mean rate (work over time) "
      "of each, averaged over the points";
  return out;
}

}  // namespace infrabench
