#include "infrabench/canary.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/thread_pool.h"

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

// STREAM's triad, one thread, regular stores, on three arrays of `n` doubles, counted as STREAM
// counts it (24 bytes an element): the mean rate over `seconds` after one untimed batch. The clock
// is read once per `passes_per_batch` passes, so that a pass of microseconds (arrays in a cache)
// is not a measurement of the clock.
double triad_gbps(double seconds, std::size_t n, int passes_per_batch) {
  const doubles a = aligned_doubles(n), b = aligned_doubles(n), c = aligned_doubles(n);
  for (std::size_t i = 0; i < n; ++i) {
    a.get()[i] = 0;
    b.get()[i] = 1;
    c.get()[i] = 2;
  }
  const kc::stream_arrays arrays{a.get(), b.get(), c.get()};
  const auto batch = [&] {
    for (int i = 0; i < passes_per_batch; ++i)
      kc::stream_run(kc::stream_op::triad, kc::store_kind::regular, arrays, 3.0, 0, n);
  };
  batch();
  double passes = 0;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  do {
    batch();
    passes += passes_per_batch;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  return passes * static_cast<double>(n) * 3 * sizeof(double) / elapsed / 1e9;
}

// The triad on three arrays of 32 MiB: larger than the last-level caches of the CPUs we meet.
double stream_gbps(double seconds) {
  return triad_gbps(seconds, std::size_t{4} << 20, 1);
}

// The second-level cache of the CPU the calling thread is on, from sysfs (its unified or data cache
// at level 2); 0 when not said (no sysfs, another layout).
std::size_t l2_bytes_here() {
  const int cpu = sched_getcpu();
  const std::string dir =
      "/sys/devices/system/cpu/cpu" + std::to_string(cpu < 0 ? 0 : cpu) + "/cache/index";
  for (int i = 0; i < 8; ++i) {
    const auto read = [&](const char* f) {
      std::ifstream in(dir + std::to_string(i) + "/" + f);
      std::string v;
      in >> v;
      return v;
    };
    if (read("level") != "2" || read("type") == "Instruction") continue;
    const std::string size = read("size");  // "512K", "2048K", "1M"
    std::size_t digits = 0;
    while (digits < size.size() && std::isdigit(static_cast<unsigned char>(size[digits])) != 0)
      ++digits;
    if (digits == 0 || digits > 9) return 0;
    const std::size_t n = std::stoul(size.substr(0, digits));
    const char unit = digits < size.size() ? size[digits] : 'B';
    return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
  }
  return 0;
}

}  // namespace

std::size_t canary_cache_bytes() {
  // Half the second-level cache (the other half for what else lives there): cache-resident on a
  // core of its own, and pushed out to the next level by anything sharing that cache (the host's
  // other hyperthread on a VM), which is the machine state the pixel pipeline's A/A runs moved
  // with, docs/reports.md. 256 KiB where the size is not said (inside every L2 we meet).
  const std::size_t l2 = l2_bytes_here();
  const std::size_t half = l2 >= (std::size_t{64} << 10) ? l2 / 2 : std::size_t{256} << 10;
  return std::min(half, std::size_t{8} << 20);
}

namespace {

// The triad on three arrays filling `bytes` (canary_cache_bytes: half the second-level cache). The
// DRAM triad and the FMA chains stayed flat in the A/A runs whose single-thread pixel pipeline (a
// working set in the caches) ran 25-35% slower for the whole run, so neither could say that the
// machine had moved there.
double cache_gbps(double seconds, std::size_t bytes) {
  return triad_gbps(seconds, bytes / 3 / sizeof(double) / 8 * 8, 16);
}

// The mean of `field` over the points that have it (> 0); 0 when none has.
double mean_of(const std::vector<canary_point>& points, double canary_point::*field) {
  double sum = 0, n = 0;
  for (const auto& p : points) {
    if (p.*field <= 0) continue;
    sum += p.*field;
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// "0.1 s", "0.005 s": the method's length, as the run's settings write it.
std::string canary_seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

}  // namespace

std::string canary_fma_isa() {
  return std::string(kc::to_string(fma_isa()));
}

double canary_seconds_for(double min_time_s) {
  if (!(min_time_s > 0)) return canary_full_seconds;
  return std::clamp(min_time_s / 2, 0.005, canary_full_seconds);
}

canary_point measure_canary_point(const std::string& at, double seconds_each) {
  canary_point p;
  p.at = at;
  const auto t0 = clock_type::now();
  p.fma_gflops = fma_gflops(seconds_each);
  p.stream_gbps = stream_gbps(seconds_each);
  p.cache_gbps = cache_gbps(seconds_each, canary_cache_bytes());
  p.seconds = seconds_since(t0);
  return p;
}

std::size_t measure_all_cpus(canary_point& p, std::size_t cache_bytes, double seconds_each) {
  const auto t0 = clock_type::now();
  thread_pool pool(0, true);  // one thread pinned to each CPU the process may use
  std::vector<double> fma(pool.size()), cache(pool.size());
  // Both phases start on every CPU together (run() returns when all have finished), so each
  // thread's rate is measured while the others run the same work.
  pool.run([&](std::size_t i) { fma[i] = fma_gflops(seconds_each); });
  pool.run([&](std::size_t i) { cache[i] = cache_gbps(seconds_each, cache_bytes); });
  p.all_fma_gflops = mean(fma);
  p.all_cache_gbps = mean(cache);
  p.seconds += seconds_since(t0);
  return pool.size();
}

double canary::fma_gflops() const {
  return mean_of(points, &canary_point::fma_gflops);
}
double canary::stream_gbps() const {
  return mean_of(points, &canary_point::stream_gbps);
}
double canary::cache_gbps() const {
  return mean_of(points, &canary_point::cache_gbps);
}
double canary::all_fma_gflops() const {
  return mean_of(points, &canary_point::all_fma_gflops);
}
double canary::all_cache_gbps() const {
  return mean_of(points, &canary_point::all_cache_gbps);
}

nlohmann::json canary::to_json() const {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json pt = {{"at", p.at},
                         {"fma_gflops", p.fma_gflops},
                         {"stream_gbps", p.stream_gbps},
                         {"cache_gbps", p.cache_gbps},
                         {"seconds", p.seconds}};
    if (p.all_fma_gflops > 0) pt["fma_gflops_all_cpus"] = p.all_fma_gflops;
    if (p.all_cache_gbps > 0) pt["cache_gbps_all_cpus"] = p.all_cache_gbps;
    pts.push_back(std::move(pt));
  }
  nlohmann::json out = {
      {"fma_isa", fma_isa}, {"threads", 1}, {"seconds_each", seconds_each}, {"points", pts}};
  if (cache_bytes > 0) out["cache_bytes"] = cache_bytes;
  // Without a point there is no rate: the fields are left out, never written as 0.
  if (!points.empty()) {
    out["fma_gflops"] = fma_gflops();
    out["stream_gbps"] = stream_gbps();
    out["cache_gbps"] = cache_gbps();
  }
  if (all_cpus > 0 && all_fma_gflops() > 0) {
    out["all_cpus"] = all_cpus;
    out["fma_gflops_all_cpus"] = all_fma_gflops();
    out["cache_gbps_all_cpus"] = all_cache_gbps();
  }
  if (!not_measured.empty()) out["not_measured"] = not_measured;
  out["method"] =
      "the machine itself, before and after the benchmarks, on one thread: the gemm/cpu_peak "
      "FMA chains (" +
      fma_isa +
      ") and STREAM's triad on 3 x 32 MiB (memory) and on cache_bytes (half the second-level "
      "cache), ~" +
      canary_seconds_text(seconds_each) +
      " each (half the run's min_time_s, 0.1 s at most); then the FMA chains and the cache triad "
      "again on one pinned thread per CPU the run may use, all at once (all_cpus; per CPU: the "
      "mean of the threads' rates; single-rank runs only); the mean rate (work over time) of each, "
      "averaged over the points";
  return out;
}

}  // namespace infrabench
